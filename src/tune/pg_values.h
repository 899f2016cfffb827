// postgresql.conf value syntax: memory amounts in PostgreSQL's units, parsing a pinned value
// back to a number, and quoting. Internal to src/tune. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace skydb::tune_internal {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;
// PostgreSQL's smallest work_mem / per-operation memory (64kB).
inline constexpr uint64_t kPgMinWorkMem = 64 * kKiB;

// Whole MB when at least 1 MB (the tuning contract), else whole kB but never below 64kB.
uint64_t FloorMemory(uint64_t bytes);

// "296MB" for whole megabytes, "640kB" otherwise (PostgreSQL's 1024-based units).
std::string FormatMemory(uint64_t bytes);

// RAM for derivation text, in the unit docs/tuning.md uses: "1975 MiB" (whole MiB, floored), or
// "16 GiB" / "1 TiB" when exactly that.
std::string MebibytesText(uint64_t bytes);

// A setting value as a number in base units: "1GB" → 1073741824, "0.9" → 0.9, and a bare
// number times `unitless_bytes` (PostgreSQL's unit for that setting: 8kB for shared_buffers,
// kB for work_mem, 1 for counts). nullopt for words ("on", "try") and anything else.
std::optional<double> ParseSettingNumber(const std::string& value, double unitless_bytes);

// The value as postgresql.conf needs it: plain tokens (numbers, units, identifiers, "0700")
// bare, an already well-formed '...' literal as is, anything else single-quoted and escaped.
std::string QuoteConfValue(const std::string& value);

}  // namespace skydb::tune_internal
