#include "base/strings.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace skydb {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string FoldLines(std::string_view text) {
  std::string out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find_first_of("\r\n", at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = Trim(text.substr(at, end - at));
    bool caret = line.find_first_not_of("^ \t") == std::string_view::npos;
    if (!line.empty() && !caret) {
      if (!out.empty()) out += "; ";
      out += line;
    }
    at = end + 1;
  }
  return out;
}

namespace {

// The length of the UTF-8 sequence `lead` begins and its payload bits; 0 for a byte that
// cannot begin one (a continuation byte, 0xC0/0xC1 which only begin overlong forms, 0xF5+).
size_t Utf8Lead(unsigned char lead, uint32_t& bits) {
  if (lead < 0x80) return bits = lead, 1;
  if (lead >= 0xC2 && lead <= 0xDF) return bits = lead & 0x1F, 2;
  if (lead >= 0xE0 && lead <= 0xEF) return bits = lead & 0x0F, 3;
  if (lead >= 0xF0 && lead <= 0xF4) return bits = lead & 0x07, 4;
  return 0;
}

}  // namespace

size_t Utf8SequenceAt(std::string_view s, size_t i) {
  uint32_t cp = 0;
  size_t len = Utf8Lead(static_cast<unsigned char>(s[i]), cp);
  if (len == 0 || s.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return len;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = Utf8SequenceAt(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::optional<std::vector<int>> ParseVersionNumbers(std::string_view text) {
  std::vector<int> numbers;
  for (const auto& part : Split(text, '.')) {
    // from_chars takes a leading '-' for int (and no '+' or space); a version has no sign.
    if (part.empty() || part.front() == '-') return std::nullopt;
    int number = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), number);
    if (ec != std::errc() || end != part.data() + part.size()) return std::nullopt;
    numbers.push_back(number);
  }
  return numbers;
}

std::string HumanBytes(unsigned long long bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || value == static_cast<double>(static_cast<unsigned long long>(value))) {
    std::snprintf(buf, sizeof buf, "%llu %s", static_cast<unsigned long long>(value), kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", value, kUnits[unit]);
  }
  return buf;
}

bool ParseRedisInt64(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  std::string_view digits = text.front() == '-' ? text.substr(1) : text;
  if (digits.empty() || (digits.size() > 1 && digits.front() == '0')) return false;
  if (digits.front() < '0' || digits.front() > '9') return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && text != "-0";
}

bool ParseRedisLongDouble(std::string_view text, long double* out) {
  constexpr size_t kMaxChars = 5 * 1024;  // Redis's MAX_LONG_DOUBLE_CHARS
  if (text.empty() || text.size() >= kMaxChars) return false;
  if (std::isspace(static_cast<unsigned char>(text.front())) != 0) return false;
  std::string buf(text);  // strtold needs the terminator; an embedded NUL ends it early
  errno = 0;
  char* end = nullptr;
  long double value = std::strtold(buf.c_str(), &end);
  if (end != buf.c_str() + buf.size() || errno == EINVAL || std::isnan(value)) return false;
  if (errno == ERANGE && (std::isinf(value) || value == 0)) return false;
  *out = value;
  return true;
}

std::string FormatRedisLongDouble(long double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[5 * 1024];
  int n = std::snprintf(buf, sizeof buf, "%.17Lf", value);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return "0";
  std::string text(buf, static_cast<size_t>(n));
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

std::string HexOf(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex += kDigits[c >> 4];
    hex += kDigits[c & 0xf];
  }
  return hex;
}

}  // namespace skydb
