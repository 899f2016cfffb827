#include "config/toml_file.h"

#include <fcntl.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>

#include "base/strings.h"

namespace skydb::config_internal {
namespace {

constexpr size_t kMaxFileBytes = 16u << 20;  // far beyond any real config; stops /dev/zero

int LineOf(const toml::source_region& region) { return static_cast<int>(region.begin.line); }

std::string FormatDouble(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(value);
}

// A node as the user wrote it, for messages.
std::string Shown(const toml::node& node) {
  if (auto s = node.value_exact<std::string>()) return QuoteToml(*s);
  if (auto i = node.value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = node.value_exact<double>()) return FormatDouble(*d);
  if (auto b = node.value_exact<bool>()) return *b ? "true" : "false";
  if (node.is_array()) return "[...]";
  if (node.is_table()) return "{...}";
  return "<date/time>";
}

// What a node of `type` must look like in TOML, as a phrase after the key.
std::string WrongType(ConfigType type) {
  switch (type) {
    case ConfigType::kString:
    case ConfigType::kEnum:
      return "must be a string";
    case ConfigType::kBool:
      return "must be true or false";
    case ConfigType::kInt:
      return "must be an integer";
    case ConfigType::kSize:
      return "must be a size: an integer of bytes or a string such as \"2GiB\"";
    case ConfigType::kDuration:
      return "must be a duration string such as \"30s\"";
    case ConfigType::kStringList:
      return "must be an array of strings";
    case ConfigType::kStringMap:
      return "must be a table";
  }
  return "has the wrong type";
}

Result<ConfigValue> ListValue(const toml::node& node) {
  const toml::array* array = node.as_array();
  if (array == nullptr) return Error::InvalidArgument(WrongType(ConfigType::kStringList));
  std::vector<std::string> items;
  for (const toml::node& item : *array) {
    auto text = item.value_exact<std::string>();
    if (!text) return Error::InvalidArgument(WrongType(ConfigType::kStringList));
    items.push_back(*text);
  }
  return ConfigValue{std::move(items)};
}

// A scalar node → a value of the key's type; the error is a phrase.
Result<ConfigValue> ScalarValue(const ConfigKey& key, const toml::node& node) {
  Error wrong = Error::InvalidArgument(WrongType(key.type));
  switch (key.type) {
    case ConfigType::kString:
    case ConfigType::kEnum:
      if (auto s = node.value_exact<std::string>()) return ConfigValue{*s};
      return wrong;
    case ConfigType::kBool:
      if (auto b = node.value_exact<bool>()) return ConfigValue{*b};
      return wrong;
    case ConfigType::kInt:
      if (auto i = node.value_exact<int64_t>()) return ConfigValue{*i};
      return wrong;
    case ConfigType::kSize:
      if (auto i = node.value_exact<int64_t>()) {
        if (*i < 0) return Error::InvalidArgument("must not be negative");
        return ConfigValue{static_cast<uint64_t>(*i)};
      }
      if (auto s = node.value_exact<std::string>()) return ParseValueText(key, *s);
      return wrong;
    case ConfigType::kDuration:
      if (auto s = node.value_exact<std::string>()) return ParseValueText(key, *s);
      // `idle_evict = 0` reads as naturally as "0s"; other integers lack a unit.
      if (auto i = node.value_exact<int64_t>(); i && *i == 0) return ParseValueText(key, "0");
      return wrong;
    case ConfigType::kStringList:
      return ListValue(node);
    case ConfigType::kStringMap:
      return wrong;
  }
  return wrong;
}

// A [postgres.settings] value as postgresql.conf text; booleans as on/off.
std::optional<std::string> SettingText(const toml::node& node) {
  if (auto s = node.value_exact<std::string>()) return *s;
  if (auto i = node.value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = node.value_exact<double>()) return FormatDouble(*d);
  if (auto b = node.value_exact<bool>()) return std::string(*b ? "on" : "off");
  return std::nullopt;
}

// Names of the table's keys directly below `section` ("" = top level), and its sub-sections.
std::vector<std::string> KnownBelow(const std::string& section) {
  std::string prefix = section.empty() ? "" : section + ".";
  std::vector<std::string> names;
  for (const ConfigKey& key : ConfigKeys()) {
    if (!StartsWith(key.name, prefix)) continue;
    std::string rest = key.name.substr(prefix.size());
    std::string first = rest.substr(0, rest.find('.'));
    if (first != rest) first = "[" + prefix + first + "]";
    if (std::find(names.begin(), names.end(), first) == names.end()) names.push_back(first);
  }
  return names;
}

bool IsSection(const std::string& name) {
  std::string prefix = name + ".";
  return std::any_of(ConfigKeys().begin(), ConfigKeys().end(),
                     [&](const ConfigKey& key) { return StartsWith(key.name, prefix); });
}

std::vector<std::string> AllKeyNames() {
  std::vector<std::string> names;
  for (const ConfigKey& key : ConfigKeys()) names.push_back(key.name);
  return names;
}

// Walks the whole file: an entry that fails is recorded in ConfigFile::errors with its line and
// the walk goes on, so one run reports every error of the file.
class Walker {
 public:
  explicit Walker(ConfigFile& file) : file_(file) {}

  void Table(const toml::table& table, const std::string& section) {
    for (const auto& [k, node] : table) {
      std::string name =
          section.empty() ? std::string(k.str()) : section + "." + std::string(k.str());
      int line = LineOf(k.source()) > 0 ? LineOf(k.source()) : LineOf(node.source());
      Record(line, Entry(name, node, line, section));
    }
  }

 private:
  void Record(int line, Status status) {
    if (!status.ok()) file_.errors.emplace_back(line, std::move(status).error().message);
  }

  Status Entry(const std::string& name, const toml::node& node, int line,
               const std::string& section) {
    if (const ConfigKey* key = FindConfigKey(name)) return Key(*key, node, line);
    if (IsSection(name) && node.is_table()) {
      Table(*node.as_table(), name);
      return Ok();
    }
    if (IsSection(name)) {
      return ValueError(file_.Where(line), name, Shown(node), "must be a table ([" + name + "])",
                        "the keys " + Join(KnownBelow(name), ", "));
    }
    return UnknownKey(name, node, line, section);
  }

  // Names the first leaf below an unknown table, so the message names a whole key.
  Status UnknownKey(const std::string& name, const toml::node& node, int line,
                    const std::string& section) {
    std::string leaf = name;
    if (const toml::table* table = node.as_table(); table != nullptr && !table->empty()) {
      auto first = table->begin();  // toml++ iterators own the pair they hand out
      const toml::key& child = first->first;
      leaf = name + "." + std::string(child.str());
      line = LineOf(child.source()) > 0 ? LineOf(child.source()) : line;
    }
    std::string message = file_.Where(line) + ": unknown key '" + leaf + "' (";
    std::string guess = ClosestName(leaf, AllKeyNames());
    if (!guess.empty()) message += "did you mean '" + guess + "'? ";
    message += section.empty() ? "known top-level keys and sections: "
                               : "known keys in [" + section + "]: ";
    message += Join(KnownBelow(section), ", ") + ")";
    return Error::InvalidArgument(std::move(message));
  }

  Status Key(const ConfigKey& key, const toml::node& node, int line) {
    if (key.type == ConfigType::kStringMap) {
      const toml::table* table = node.as_table();
      if (table == nullptr) {
        return ValueError(file_.Where(line), key.name, Shown(node), WrongType(key.type),
                          key.accepted);
      }
      Settings(key, *table, "");
      return Ok();
    }
    auto value = ScalarValue(key, node);
    std::string shown = ShownValue(key, Shown(node));
    if (!value.ok()) {
      return ValueError(file_.Where(line), key.name, shown, value.error().message, key.accepted);
    }
    file_.values.push_back({key.name, {&key, ""}, std::move(value).value(), line, shown});
    return Ok();
  }

  // Entries of a table-valued key; a dotted name (pg_stat_statements.max) arrives as a nested
  // table and is flattened back to its dotted form.
  void Settings(const ConfigKey& key, const toml::table& table, const std::string& prefix) {
    for (const auto& [k, node] : table) {
      std::string entry = prefix + std::string(k.str());
      int line = LineOf(k.source()) > 0 ? LineOf(k.source()) : LineOf(node.source());
      // An empty name ("" = 1) would otherwise reach the loader as the whole table's value.
      if (k.str().empty()) {
        Record(line, Error::InvalidArgument(
                         file_.Where(line) + ": " + key.name +
                         " has an entry with an empty name; accepted: " + key.accepted));
        continue;
      }
      if (const toml::table* nested = node.as_table()) {
        Settings(key, *nested, entry + ".");
        continue;
      }
      std::string name = key.name + "." + entry;
      auto text = SettingText(node);
      if (!text) {
        Record(line, ValueError(file_.Where(line), name, Shown(node),
                                "must be a string, integer, float or boolean", key.accepted));
        continue;
      }
      file_.values.push_back({name, {&key, entry}, ConfigValue{*text}, line, Shown(node)});
    }
  }

  ConfigFile& file_;
};

Result<toml::table> ParseToml(const std::string& text, const std::string& path) {
  auto malformed = [&path](const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    return Error::InvalidArgument(path + ":" + std::to_string(begin.line) + ":" +
                                  std::to_string(begin.column) +
                                  ": malformed TOML: " + std::string(e.description()));
  };
#if TOML_EXCEPTIONS
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return malformed(e);
  } catch (const std::exception& e) {
    return Error::Internal(path + ": reading TOML failed: " + e.what());
  }
#else
  toml::parse_result result = toml::parse(text, path);
  if (!result) return malformed(result.error());
  return std::move(result).table();
#endif
}

// The whole file; the error says why not (ENOENT → NotFound), naming the path.
Result<std::string> ReadWhole(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path + ": cannot read the config file", errno);
  std::string text;
  char buf[65536];
  int err = 0;
  while (text.size() <= kMaxFileBytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (err != 0) return ErrnoError(path + ": cannot read the config file", err);
  if (text.size() > kMaxFileBytes) {
    return Error::InvalidArgument(path + ": larger than 16MiB; not a config file");
  }
  return text;
}

}  // namespace

std::string ConfigFile::Where(int line) const {
  return line > 0 ? path + ":" + std::to_string(line) : path;
}

Result<ConfigFile> ParseConfigText(const std::string& text, const std::string& path) {
  SKYDB_ASSIGN_OR_RETURN(toml::table table, ParseToml(text, path));
  ConfigFile file;
  file.path = path;
  Walker(file).Table(table, "");
  return file;
}

Result<std::optional<ConfigFile>> ReadConfigFile(const std::string& path, bool must_exist) {
  auto text = ReadWhole(path);
  if (!text.ok()) {
    // Only absence excuses the implicit default path; an unreadable file is always an error.
    if (!must_exist && text.error().code == ErrorCode::kNotFound) {
      return std::optional<ConfigFile>();
    }
    return Error::InvalidArgument(text.error().message);
  }
  SKYDB_ASSIGN_OR_RETURN(ConfigFile file, ParseConfigText(*text, path));
  return std::optional<ConfigFile>(std::move(file));
}

}  // namespace skydb::config_internal
