#include "tune/pg_values.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string_view>
#include <utility>

#include "base/strings.h"

namespace skydb::tune_internal {
namespace {

bool IsPlainTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '+';
}

// '...' with every inner quote doubled and no line break: safe to write unchanged.
bool IsQuotedLiteral(std::string_view v) {
  if (v.size() < 2 || v.front() != '\'' || v.back() != '\'') return false;
  std::string_view inner = v.substr(1, v.size() - 2);
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '\n' || inner[i] == '\r' || inner[i] == '\\') return false;
    if (inner[i] != '\'') continue;
    if (i + 1 >= inner.size() || inner[i + 1] != '\'') return false;
    ++i;
  }
  return true;
}

std::optional<double> UnitBytes(std::string_view unit) {
  static const std::array<std::pair<std::string_view, double>, 5> kUnits = {{
      {"B", 1.0},
      {"kB", 1024.0},
      {"MB", 1024.0 * 1024},
      {"GB", 1024.0 * 1024 * 1024},
      {"TB", 1024.0 * 1024 * 1024 * 1024},
  }};
  for (const auto& [name, bytes] : kUnits) {
    if (unit == name) return bytes;
  }
  return std::nullopt;
}

}  // namespace

uint64_t FloorMemory(uint64_t bytes) {
  if (bytes >= kMiB) return bytes / kMiB * kMiB;
  return std::max(bytes / kKiB * kKiB, kPgMinWorkMem);
}

std::string FormatMemory(uint64_t bytes) {
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MB";
  return std::to_string(bytes / kKiB) + "kB";
}

std::string MebibytesText(uint64_t bytes) {
  constexpr uint64_t kTiB = 1024 * kGiB;
  if (bytes >= kTiB && bytes % kTiB == 0) return std::to_string(bytes / kTiB) + " TiB";
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  return std::to_string(bytes / kMiB) + " MiB";
}

std::optional<double> ParseSettingNumber(const std::string& value, double unitless_bytes) {
  std::string_view text = Trim(value);
  if (IsQuotedLiteral(text)) text = Trim(text.substr(1, text.size() - 2));
  // from_chars would also take "inf" and "nan"; a setting's number starts with a digit.
  if (text.empty() ||
      !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-' || text[0] == '.')) {
    return std::nullopt;
  }
  double number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc()) return std::nullopt;
  std::string_view unit = Trim(std::string_view(end, text.data() + text.size() - end));
  if (unit.empty()) return number * unitless_bytes;
  auto bytes = UnitBytes(unit);
  if (!bytes) return std::nullopt;
  return number * *bytes;
}

std::string QuoteConfValue(const std::string& value) {
  if (!value.empty() && std::all_of(value.begin(), value.end(), IsPlainTokenChar)) return value;
  if (IsQuotedLiteral(value)) return value;
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'') {
      quoted += "''";
    } else if (c == '\\') {
      quoted += "\\\\";
    } else if (c == '\n') {
      quoted += "\\n";
    } else if (c == '\r') {
      quoted += "\\r";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace skydb::tune_internal
