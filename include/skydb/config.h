// skydb's configuration: one declarative table of keys drives parsing, validation, defaults,
// --help text, the documented conf/skydb.toml and SIGHUP reload.
//
// Precedence, highest first: command-line flag > environment (SKY_POSTGRES_BIN, SKYDB_*) >
// file > default. Every error names where the bad value came from (file and line, variable or
// flag), the key, and what is accepted; the CLI exits with status 2 on any of them.
//
// Thread-safety: Config is a value; the table is immutable after static initialisation.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "skydb/result.h"

namespace skydb {

struct HostConfig {
  uint64_t ram_bytes = 0;  // host.ram; 0 = detect
  int cores = 0;           // host.cores; 0 = detect
};

struct PostgresConfig {
  std::string bin_dir;  // postgres.bin_dir (env SKY_POSTGRES_BIN); empty = discover
  std::string version;  // postgres.version pin: "" (any), "15" or "15.18"
  // postgres.sources: discovery sources allowed, in DESIGN.md's order:
  // "bin_dir", "bundle", "pg_config", "distro", "path".
  std::vector<std::string> sources = {"bin_dir", "bundle", "pg_config", "distro", "path"};
  std::string bundle;  // postgres.bundle: a bundle file to extract (bundle issue)
  // [postgres.settings]: postgresql.conf settings the operator pins; they win over tuning.
  std::map<std::string, std::string> settings;
};

struct SupervisorConfig {
  std::chrono::milliseconds start_timeout{60000};    // ready within this, extended in recovery
  std::chrono::milliseconds stop_timeout{30000};     // fast shutdown, then immediate
  std::chrono::milliseconds backoff_initial{500};    // first restart delay after a crash
  std::chrono::milliseconds backoff_max{30000};      // restart delay cap
  std::chrono::milliseconds stable_after{60000};     // up this long resets the backoff
  std::chrono::milliseconds crash_window{300000};    // crashes counted within this window
  int max_crashes = 5;                               // more than this in the window: exit
};

struct Config {
  std::string data_dir = "/var/lib/skydb";  // data_dir (flag --data-dir)
  std::string run_as_user;                  // run_as_user (flag --user): cluster owner when root
  std::string log_level = "info";           // log.level: trace|debug|info|warn|error
  std::string log_format = "text";          // log.format: text|json
  HostConfig host;
  PostgresConfig postgres;
  SupervisorConfig supervisor;
};

enum class ConfigType { kString, kBool, kInt, kSize, kDuration, kEnum, kStringList, kStringMap };

// One row of the table.
struct ConfigKey {
  std::string name;         // dotted TOML path, e.g. "store.durability"
  ConfigType type;
  std::string default_text; // as written in conf/skydb.toml
  std::string accepted;     // what is accepted, for errors and help: "1..256", "sync|async"
  bool reloadable;          // applied on SIGHUP without a restart
  std::string description;  // one line
  std::string env;          // environment variable that sets it, or ""
  std::string flag;         // long command-line flag that sets it, or ""
};

const std::vector<ConfigKey>& ConfigKeys();

// Where a configuration comes from. Flags are already split into key/value by the CLI.
struct ConfigInputs {
  std::string file;             // path of the TOML file; empty = none
  bool file_must_exist = true;  // false for the implicit default path
  std::map<std::string, std::string> environment;  // usually the process environment
  std::vector<std::pair<std::string, std::string>> flags;  // key name → value, in order given
};

// Loads, validates and merges; InvalidArgument (exit 2) on any bad input.
Result<Config> LoadConfig(const ConfigInputs& inputs);

// Keys whose values differ between two configs, and whether all of them are reloadable.
struct ConfigChange {
  std::vector<std::string> changed;
  std::vector<std::string> need_restart;  // changed keys that are not reloadable
};
ConfigChange DiffConfig(const Config& before, const Config& after);

// The key table as help text (name, type, default, accepted, env, flag, description).
std::string RenderConfigHelp();

// Parses "512MiB", "2GiB", "1975MiB", "1048576" (bytes) → bytes.
Result<uint64_t> ParseSize(const std::string& text);
// Parses "10ms", "5s", "30m", "1h" → milliseconds.
Result<std::chrono::milliseconds> ParseDuration(const std::string& text);

}  // namespace skydb
