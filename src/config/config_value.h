// Values of configuration keys: parsing text, checking a value against its row of the table,
// spelling it as TOML, and the one shape every configuration error message has.
//
// Internal to src/config. Errors returned here carry a *phrase* that follows the key name
// ("must be an integer", "is out of range"), so each source (file, environment, flag) can frame
// it with where the value came from. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "skydb/config.h"
#include "skydb/result.h"

namespace skydb::config_internal {

// Text from an environment variable or a flag → a value of the key's type. Lists are
// comma-separated; tables cannot be written as text (set one entry at a time instead).
Result<ConfigValue> ParseValueText(const ConfigKey& key, std::string_view text);

// Bounds, choices, list rules and the row's own rule. The phrase says what is wrong.
Status CheckValue(const ConfigKey& key, const ConfigValue& value);

// postgresql.conf setting names, as [postgres.settings] accepts them: [a-z_][a-z0-9_.]*
bool IsSettingName(std::string_view name);

// How a value is written in a TOML file: "info", 0, "512MiB", "30s", ["a", "b"], {a = "1"}.
std::string RenderValueToml(const ConfigKey& key, const ConfigValue& value);
std::string QuoteToml(std::string_view text);  // a TOML basic string, escaped
std::string TomlKey(std::string_view name);    // bare when TOML allows it, else quoted

// What messages show for a value of `key`: `shown` itself, or "<redacted>" for a secret key
// (a password must not reach a log or a terminal even when it is the value that is wrong).
std::string ShownValue(const ConfigKey& key, const std::string& shown);

// "<where>: <key>[ = <shown>] <phrase>; accepted: <accepted>" as InvalidArgument.
Error ValueError(const std::string& where, const std::string& key, const std::string& shown,
                 const std::string& phrase, const std::string& accepted);

// A key name as a source writes it: a row of the table, or one entry of a table-valued row
// ("postgres.settings.work_mem" → the postgres.settings row, entry "work_mem").
struct KeyRef {
  const ConfigKey* key = nullptr;  // nullptr: no such key
  std::string entry;               // non-empty only for an entry of a kStringMap row
};
KeyRef ResolveKey(std::string_view name);

}  // namespace skydb::config_internal
