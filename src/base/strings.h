// Small string helpers shared by every subsystem. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skydb {

std::string_view Trim(std::string_view s);
std::string HexOf(std::string_view bytes);                     // lowercase, two digits per byte
std::vector<std::string> Split(std::string_view s, char sep);  // keeps empty fields
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
std::string ToLower(std::string_view s);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// One line from a message of several (libpq's: "...failed: No such file or directory\n\tIs the
// server running locally...?", "ERROR:  ...\nLINE 1: ...\n      ^"): each line trimmed, the
// empty ones and libpq's caret markers (only '^' and blanks) dropped, the rest joined by "; ".
// A log line is then one line of the journal, whatever its message held.
std::string FoldLines(std::string_view text);
// Well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF): what a JSON
// string must hold. Paths and names a user chooses need not be.
bool IsValidUtf8(std::string_view s);
// The length of the well-formed UTF-8 sequence that starts at s[i] (1 for ASCII), 0 if none does.
size_t Utf8SequenceAt(std::string_view s, size_t i);
// "2.36" → {2, 36}: dot-separated decimal numbers, each of them digits only and within int.
// nullopt for anything else (an empty part, a sign, a space, a number too large), so text
// read from a file can be compared without throwing or overflowing.
std::optional<std::vector<int>> ParseVersionNumbers(std::string_view text);
// "1975 MiB", "1.5 GiB", "512 B": for humans, not for config files.
std::string HumanBytes(unsigned long long bytes);

// Numbers as Redis reads and writes them in values and arguments (util.c), so INCR and
// INCRBYFLOAT accept and produce exactly what Redis does.
// string2ll: an optional '-', digits without leading zeros, no '+', no spaces, within int64.
bool ParseRedisInt64(std::string_view text, int64_t* out);
// string2ld: strtold's syntax (so "1e3", "0x10", "inf"), no leading space, nothing after the
// number, no NaN, no overflow, shorter than 5 KiB.
bool ParseRedisLongDouble(std::string_view text, long double* out);
// ld2string's human form: "%.17Lf" with trailing zeroes (and a bare '.') removed, "-0" as "0".
std::string FormatRedisLongDouble(long double value);

}  // namespace skydb
