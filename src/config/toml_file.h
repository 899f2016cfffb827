// The configuration file: reads it, parses it with toml++ and turns every value it sets into a
// typed ConfigValue for a row of the table, with the line it was written on.
//
// This is the only place toml++ is used; its exceptions (if it is built with them) are caught
// here. Checks of bounds and choices happen later, in the loader, the same way for every
// source. Every error is one complete message naming the file, the line and the key.
// Thread-safety: stateless.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config_value.h"
#include "skydb/config.h"
#include "skydb/result.h"

namespace skydb::config_internal {

// One value the file sets.
struct FileValue {
  std::string name;   // as it applies: "log.level", "postgres.settings.work_mem"
  KeyRef ref;         // the row (and entry, for a table-valued row)
  ConfigValue value;  // of the row's type; a string for a table entry
  int line = 0;       // 1-based; 0 when toml++ did not say
  std::string shown;  // the value as written, for messages
};

struct ConfigFile {
  std::string path;
  std::vector<FileValue> values;
  // What the walk refused (unknown keys, wrong types), with its line; the loader reports them
  // with the values' own errors, all in the file's order.
  std::vector<std::pair<int, std::string>> errors;

  std::string Where(int line) const;  // "path:line", or "path" without a line
};

// Reads and parses `path`. Returns nullopt when the file does not exist and !must_exist.
Result<std::optional<ConfigFile>> ReadConfigFile(const std::string& path, bool must_exist);

// Parses TOML text as if read from `path` (used by ReadConfigFile and by tests); fails only
// when the text is not TOML.
Result<ConfigFile> ParseConfigText(const std::string& text, const std::string& path);

}  // namespace skydb::config_internal
