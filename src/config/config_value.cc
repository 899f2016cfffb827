#include "config/config_value.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>

#include "base/strings.h"

namespace skydb::config_internal {
namespace {

Error Phrase(std::string text) { return Error::InvalidArgument(std::move(text)); }

Result<ConfigValue> ParseBool(std::string_view text) {
  std::string lower = ToLower(Trim(text));
  if (lower == "true" || lower == "on" || lower == "yes" || lower == "1") return ConfigValue{true};
  if (lower == "false" || lower == "off" || lower == "no" || lower == "0") {
    return ConfigValue{false};
  }
  return Phrase("must be true or false");
}

Result<ConfigValue> ParseInt(std::string_view text) {
  std::string_view trimmed = Trim(text);
  int64_t value = 0;
  const char* end = trimmed.data() + trimmed.size();
  auto [ptr, ec] = std::from_chars(trimmed.data(), end, value);
  if (trimmed.empty() || ec != std::errc() || ptr != end) return Phrase("must be an integer");
  return ConfigValue{value};
}

std::vector<std::string> ParseList(std::string_view text) {
  std::vector<std::string> items;
  if (Trim(text).empty()) return items;
  for (const std::string& item : Split(text, ',')) items.emplace_back(Trim(item));
  return items;
}

// 0 passes when the row allows it ("0 = detect"); otherwise min..max, inclusive.
bool InRange(const ConfigKey& key, int64_t value) {
  if (value == 0 && key.zero_allowed) return true;
  return value >= key.min && value <= key.max;
}

bool InRange(const ConfigKey& key, uint64_t value) {
  if (value == 0 && key.zero_allowed) return true;
  return key.min >= 0 && value >= static_cast<uint64_t>(key.min) &&
         value <= static_cast<uint64_t>(key.max);
}

bool Contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Lists are sets in order of preference: non-empty, known items, each at most once.
std::string ListProblem(const ConfigKey& key, const std::vector<std::string>& items) {
  if (items.empty() && !key.zero_allowed) return "must not be empty";
  std::set<std::string> seen;
  for (const std::string& item : items) {
    if (!key.choices.empty() && !Contains(key.choices, item)) {
      return "has an unknown item '" + item + "'";
    }
    if (!seen.insert(item).second) return "lists '" + item + "' twice";
  }
  return "";
}

std::string MapProblem(const std::map<std::string, std::string>& entries) {
  for (const auto& [name, value] : entries) {
    if (!IsSettingName(name)) return "has an invalid setting name '" + name + "'";
  }
  return "";
}

// The problem with a value's type-specific rules, or "".
std::string TypeProblem(const ConfigKey& key, const ConfigValue& value) {
  switch (key.type) {
    case ConfigType::kInt:
      return InRange(key, std::get<int64_t>(value)) ? "" : "is out of range";
    case ConfigType::kSize:
      return InRange(key, std::get<uint64_t>(value)) ? "" : "is out of range";
    case ConfigType::kDuration:
      return InRange(key, std::get<std::chrono::milliseconds>(value).count()) ? ""
                                                                              : "is out of range";
    case ConfigType::kEnum:
      return Contains(key.choices, std::get<std::string>(value)) ? "" : "is not an accepted value";
    case ConfigType::kStringList:
      return ListProblem(key, std::get<std::vector<std::string>>(value));
    case ConfigType::kStringMap:
      return MapProblem(std::get<std::map<std::string, std::string>>(value));
    case ConfigType::kString:
    case ConfigType::kBool:
      return "";
  }
  return "";
}

std::string RenderList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  quoted.reserve(items.size());
  for (const std::string& item : items) quoted.push_back(QuoteToml(item));
  return "[" + Join(quoted, ", ") + "]";
}

std::string RenderMap(const std::map<std::string, std::string>& entries) {
  if (entries.empty()) return "{}";
  std::vector<std::string> parts;
  parts.reserve(entries.size());
  for (const auto& [name, value] : entries) {
    parts.push_back(TomlKey(name) + " = " + QuoteToml(value));
  }
  return "{ " + Join(parts, ", ") + " }";
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

Result<ConfigValue> ParseValueText(const ConfigKey& key, std::string_view text) {
  switch (key.type) {
    case ConfigType::kString:
    case ConfigType::kEnum:
      return ConfigValue{std::string(text)};
    case ConfigType::kBool:
      return ParseBool(text);
    case ConfigType::kInt:
      return ParseInt(text);
    case ConfigType::kSize: {
      auto size = ParseSize(std::string(text));
      if (!size.ok()) return Phrase("must be a size: " + size.error().message);
      return ConfigValue{*size};
    }
    case ConfigType::kDuration: {
      auto duration = ParseDuration(std::string(text));
      if (!duration.ok()) return Phrase("must be a duration: " + duration.error().message);
      return ConfigValue{*duration};
    }
    case ConfigType::kStringList:
      return ConfigValue{ParseList(text)};
    case ConfigType::kStringMap:
      return Phrase("is a table; set one entry as " + key.name + ".NAME");
  }
  return Phrase("has a type this loader does not know");
}

Status CheckValue(const ConfigKey& key, const ConfigValue& value) {
  std::string problem = TypeProblem(key, value);
  if (problem.empty() && key.rule) problem = key.rule(value);
  if (!problem.empty()) return Phrase(problem);
  return Ok();
}

bool IsSettingName(std::string_view name) {
  if (name.empty()) return false;
  auto lower = [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; };
  if (!lower(name.front())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return lower(c) || (c >= '0' && c <= '9') || c == '.'; });
}

std::string RenderValueToml(const ConfigKey& key, const ConfigValue& value) {
  switch (key.type) {
    case ConfigType::kString:
    case ConfigType::kEnum:
      return QuoteToml(std::get<std::string>(value));
    case ConfigType::kBool:
      return std::get<bool>(value) ? "true" : "false";
    case ConfigType::kInt:
      return std::to_string(std::get<int64_t>(value));
    case ConfigType::kSize: {
      uint64_t bytes = std::get<uint64_t>(value);
      return bytes == 0 ? "0" : QuoteToml(FormatSize(bytes));
    }
    case ConfigType::kDuration:
      return QuoteToml(FormatDuration(std::get<std::chrono::milliseconds>(value)));
    case ConfigType::kStringList:
      return RenderList(std::get<std::vector<std::string>>(value));
    case ConfigType::kStringMap:
      return RenderMap(std::get<std::map<std::string, std::string>>(value));
  }
  return "";
}

std::string QuoteToml(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string TomlKey(std::string_view name) {
  auto bare = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  };
  if (!name.empty() && std::all_of(name.begin(), name.end(), bare)) return std::string(name);
  return QuoteToml(name);
}

std::string ShownValue(const ConfigKey& key, const std::string& shown) {
  return key.secret ? std::string("<redacted>") : shown;
}

Error ValueError(const std::string& where, const std::string& key, const std::string& shown,
                 const std::string& phrase, const std::string& accepted) {
  std::string message = where + ": " + key;
  if (!shown.empty()) message += " = " + shown;
  message += " " + phrase + "; accepted: " + accepted;
  return Error::InvalidArgument(std::move(message));
}

KeyRef ResolveKey(std::string_view name) {
  if (const ConfigKey* key = FindConfigKey(name)) return {key, ""};
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.type != ConfigType::kStringMap) continue;
    std::string prefix = key.name + ".";
    if (StartsWith(name, prefix) && name.size() > prefix.size()) {
      return {&key, std::string(name.substr(prefix.size()))};
    }
  }
  return {};
}

}  // namespace skydb::config_internal

namespace skydb {

std::string ClosestName(std::string_view name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = 3;  // more than two edits is a different word, not a typo
  for (const std::string& candidate : known) {
    size_t distance = config_internal::EditDistance(ToLower(name), ToLower(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace skydb
