// Sizes and durations as people write them in config files and flags.
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/strings.h"
#include "skydb/config.h"

namespace skydb {
namespace {

struct Unit {
  std::string_view name;  // lower-case spelling
  uint64_t factor;
};

// Every size unit is 1024-based, like PostgreSQL's kB/MB/GB: a config that says "2GB" means
// what shared_buffers = 2GB means.
constexpr Unit kSizeUnits[] = {
    {"", 1},
    {"b", 1},
    {"k", 1ULL << 10},
    {"kb", 1ULL << 10},
    {"kib", 1ULL << 10},
    {"m", 1ULL << 20},
    {"mb", 1ULL << 20},
    {"mib", 1ULL << 20},
    {"g", 1ULL << 30},
    {"gb", 1ULL << 30},
    {"gib", 1ULL << 30},
    {"t", 1ULL << 40},
    {"tb", 1ULL << 40},
    {"tib", 1ULL << 40},
};

constexpr Unit kDurationUnits[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"min", 60'000}, {"h", 3'600'000}, {"d", 86'400'000},
};

// "512 MiB" → {512, "mib"}; fails on a missing or negative number.
struct NumberAndUnit {
  uint64_t number = 0;
  std::string unit;
};

Result<NumberAndUnit> SplitNumber(std::string_view text) {
  std::string_view trimmed = Trim(text);
  std::string quoted = "'" + std::string(text) + "'";
  if (trimmed.empty()) return Error::InvalidArgument("the value is empty");
  if (trimmed.front() == '-') return Error::InvalidArgument(quoted + " is negative");
  NumberAndUnit out;
  const char* end = trimmed.data() + trimmed.size();
  auto [ptr, ec] = std::from_chars(trimmed.data(), end, out.number);
  if (ec == std::errc::result_out_of_range) {
    return Error::InvalidArgument(quoted + " is too large");
  }
  if (ec != std::errc()) return Error::InvalidArgument(quoted + " does not start with a number");
  if (ptr != end && *ptr == '.') {
    return Error::InvalidArgument(quoted + " is not a whole number; use a smaller unit");
  }
  out.unit = ToLower(Trim(std::string_view(ptr, static_cast<size_t>(end - ptr))));
  return out;
}

template <size_t N>
const Unit* FindUnit(const Unit (&units)[N], const std::string& name) {
  for (const Unit& unit : units) {
    if (unit.name == name) return &unit;
  }
  return nullptr;
}

bool MultiplyOverflows(uint64_t a, uint64_t b, uint64_t limit) { return b != 0 && a > limit / b; }

template <size_t N>
std::string FormatExact(uint64_t value, const Unit (&units)[N], std::string_view zero) {
  if (value == 0) return std::string(zero);
  const Unit* best = nullptr;
  for (const Unit& unit : units) {
    if (value % unit.factor == 0 && (best == nullptr || unit.factor > best->factor)) best = &unit;
  }
  return std::to_string(value / best->factor) + std::string(best->name);
}

}  // namespace

Result<uint64_t> ParseSize(const std::string& text) {
  SKYDB_ASSIGN_OR_RETURN(NumberAndUnit parsed, SplitNumber(text));
  const Unit* unit = FindUnit(kSizeUnits, parsed.unit);
  if (unit == nullptr) {
    return Error::InvalidArgument("'" + text + "' has an unknown unit '" + parsed.unit +
                                  "' (use B, kB/KiB, MB/MiB, GB/GiB or TB/TiB)");
  }
  if (MultiplyOverflows(parsed.number, unit->factor, std::numeric_limits<uint64_t>::max())) {
    return Error::InvalidArgument("'" + text + "' is too large");
  }
  return parsed.number * unit->factor;
}

Result<std::chrono::milliseconds> ParseDuration(const std::string& text) {
  SKYDB_ASSIGN_OR_RETURN(NumberAndUnit parsed, SplitNumber(text));
  // Zero is the same in every unit, so a bare 0 ("off", where a key allows it) is unambiguous;
  // any other bare number could mean seconds or milliseconds.
  if (parsed.unit.empty() && parsed.number == 0) return std::chrono::milliseconds(0);
  if (parsed.unit.empty()) {
    return Error::InvalidArgument("'" + text + "' has no unit (use ms, s, min, h or d)");
  }
  const Unit* unit = FindUnit(kDurationUnits, parsed.unit);
  if (unit == nullptr) {
    return Error::InvalidArgument("'" + text + "' has an unknown unit '" + parsed.unit +
                                  "' (use ms, s, min, h or d)");
  }
  constexpr auto kMaxMs = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (MultiplyOverflows(parsed.number, unit->factor, kMaxMs)) {
    return Error::InvalidArgument("'" + text + "' is too large");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(parsed.number * unit->factor));
}

std::string FormatSize(uint64_t bytes) {
  // Only the canonical spellings, so the output round-trips and reads like PostgreSQL's.
  static constexpr Unit kCanonical[] = {
      {"B", 1}, {"KiB", 1ULL << 10}, {"MiB", 1ULL << 20}, {"GiB", 1ULL << 30}, {"TiB", 1ULL << 40}};
  return FormatExact(bytes, kCanonical, "0B");
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  static constexpr Unit kCanonical[] = {
      {"ms", 1}, {"s", 1000}, {"min", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  int64_t count = duration.count();
  // Unsigned negation, so even the most negative count has a magnitude.
  uint64_t magnitude = count < 0 ? 0 - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  return (count < 0 ? "-" : "") + FormatExact(magnitude, kCanonical, "0s");
}

}  // namespace skydb
