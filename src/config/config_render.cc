// Text rendered from the table: `skydb config keys` and `skydb config show`.
#include <algorithm>
#include <utility>

#include "config/config_value.h"
#include "skydb/config.h"

namespace skydb {
namespace {

using config_internal::QuoteToml;
using config_internal::RenderValueToml;
using config_internal::TomlKey;

// The [section] a row's line belongs in; a table-valued row is a section of its own.
std::string SectionOf(const ConfigKey& key) {
  if (key.type == ConfigType::kStringMap) return key.name;
  size_t dot = key.name.rfind('.');
  return dot == std::string::npos ? "" : key.name.substr(0, dot);
}

std::string LeafOf(const ConfigKey& key) {
  size_t dot = key.name.rfind('.');
  return dot == std::string::npos ? key.name : key.name.substr(dot + 1);
}

// Rows grouped by section, sections in the order the table first mentions them, so the output
// is valid TOML whatever order the table lists its rows in.
std::vector<std::pair<std::string, std::vector<const ConfigKey*>>> Sections() {
  std::vector<std::pair<std::string, std::vector<const ConfigKey*>>> sections;
  for (const ConfigKey& key : ConfigKeys()) {
    std::string section = SectionOf(key);
    auto it = std::find_if(sections.begin(), sections.end(),
                           [&](const auto& s) { return s.first == section; });
    if (it == sections.end()) it = sections.insert(sections.end(), {section, {}});
    it->second.push_back(&key);
  }
  return sections;
}

std::string OriginComment(const ConfigOrigin& origin) {
  std::string text = std::string("  # ") + ConfigSourceName(origin.source);
  return origin.detail.empty() ? text : text + " " + origin.detail;
}

std::string RenderEntries(const ConfigKey& key, const LoadedConfig& loaded) {
  auto entries = std::get<std::map<std::string, std::string>>(key.get(loaded.config));
  if (entries.empty()) return "# (none)\n";
  std::string out;
  for (const auto& [name, value] : entries) {
    out += TomlKey(name) + " = " + QuoteToml(value) +
           OriginComment(loaded.OriginOf(key.name + "." + name)) + "\n";
  }
  return out;
}

std::string RenderHelpRow(const ConfigKey& key) {
  std::string out = key.name + "  (" + ConfigTypeName(key.type) + ", " +
                    (key.reloadable ? "reloadable on SIGHUP" : "restart to apply") + ")\n";
  if (!key.reloadable && !key.restart_why.empty()) {
    out += "    restart:  " + key.restart_why + "\n";
  }
  out += "    " + key.description + "\n";
  out += "    default:  " + key.default_text + "\n";
  out += "    accepted: " + key.accepted + "\n";
  out += "    env:      " + key.env + "\n";
  std::string set = key.type == ConfigType::kStringMap ? key.name + ".NAME" : key.name;
  out += "    flag:     " + (key.flag.empty() ? "" : key.flag + ", ") + "--set " + set + "=VALUE\n";
  return out;
}

}  // namespace

std::string RenderConfigHelp() {
  std::string out =
      "skydb configuration keys. Precedence: command-line flag > environment > file > default.\n"
      "The file is --config FILE, else $SKYDB_CONFIG, else /etc/skydb/skydb.toml (if present).\n"
      "Sizes are 1024-based (kB = KiB, MB = MiB, ...); durations take ms, s, min, h, d.\n\n";
  for (const ConfigKey& key : ConfigKeys()) out += RenderHelpRow(key) + "\n";
  return out;
}

std::string RenderConfigToml(const LoadedConfig& loaded) {
  std::string out = "# skydb effective configuration; each value is followed by its origin.\n";
  out += "# file: " + (loaded.file.empty() ? std::string("none read") : loaded.file) + "\n";
  for (const auto& [section, keys] : Sections()) {
    out += section.empty() ? "\n" : "\n[" + section + "]\n";
    for (const ConfigKey* key : keys) {
      if (key->type == ConfigType::kStringMap) {
        out += RenderEntries(*key, loaded);
        continue;
      }
      ConfigValue value = key->get(loaded.config);
      bool hide = key->secret && !std::get<std::string>(value).empty();
      out += LeafOf(*key) + " = " +
             (hide ? std::string("\"<redacted>\"") : RenderValueToml(*key, value)) +
             OriginComment(loaded.OriginOf(key->name)) + "\n";
    }
  }
  return out;
}

}  // namespace skydb
