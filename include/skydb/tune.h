// Host facts and tuning: a pure function (HostFacts, Profile, pins) → Settings.
//
// HostFacts are read through an injected FileSystem (/proc, /sys, cgroup v1/v2), so they are
// tested on fixture trees, never on the test machine's own values. Tune() does no I/O at all.
// docs/tuning.md gives every formula, floor and cap, and the reason for each.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb {

struct HostFacts {
  uint64_t ram_bytes = 0;    // usable RAM: min(MemTotal, cgroup limits) or the configured value
  std::string ram_source;    // "MemTotal", "cgroup v2 memory.max", "cgroup v1 ...", "config"
  int cores = 0;             // usable cores: min(online, affinity, cgroup quota) or configured
  std::string cores_source;  // "online CPUs", "affinity mask", "cgroup v2 cpu.max", "config"
  int physical_cores = 0;    // SMT siblings merged; 0 when the topology is unreadable

  // The raw readings behind the above, for `doctor` and `/status`.
  uint64_t mem_total_bytes = 0;
  std::optional<uint64_t> cgroup_memory_limit_bytes;
  int online_cpus = 0;
  int affinity_cpus = 0;
  std::optional<double> cgroup_cpu_quota;  // cores' worth, e.g. 1.5
};

// Reads host facts from `fs` (rooted at "/": /proc/meminfo, /sys/fs/cgroup/..., /sys/devices/
// system/cpu/...). `affinity_cpus` comes from SchedAffinityCpuCount() in production.
// `overrides` (host.ram, host.cores) replace the detected values when non-zero.
Result<HostFacts> ReadHostFacts(const FileSystem& fs, int affinity_cpus,
                                const HostConfig& overrides);

enum class Profile {
  kEmbedded,  // production: derived from RAM and cores
  kDev,       // development: small fixed constants
};
const char* ProfileName(Profile p);
Result<Profile> ParseProfile(const std::string& name);

struct Setting {
  std::string name;        // postgresql.conf name, or skydb's own ("store_pool")
  std::string value;       // as rendered into postgresql.conf: "296MB", "36", "''", "try"
  std::string derivation;  // how it was derived: "15% of 1975 MiB RAM", "pinned in config"
  bool pinned = false;     // the operator's value from [postgres.settings] won
  bool postgres = true;    // false for skydb's own settings (pool sizes), not rendered to conf
  std::optional<double> numeric;  // value in base units (bytes, count) for metrics gauges
  std::string derived_value;      // when pinned: what tuning would have chosen ("" if nothing)
};

struct Pools {
  int app_pool = 0;         // clamp(4c, 4, 32)
  int aux_pool = 0;         // clamp(app_pool/4, 2, 8)
  int demand = 0;           // app_pool + 3·aux_pool
  int store_pool = 0;       // aux_pool + 4
  int store_writers = 0;    // clamp(cores/2, 1, store_pool − 2): group-commit writers
  int max_connections = 0;  // 2·demand + reserved + headroom
  int reserved = 3;         // superuser_reserved_connections
};

// Connections kept free beyond every pool's demand (psql, migrations, monitoring).
inline constexpr int kConnectionHeadroom = 5;
inline constexpr int kSuperuserReservedConnections = 3;

// The pools for `cores` usable cores (values below 1 count as 1), by the formulas in
// docs/tuning.md "Pools and max_connections".
// `app_pool` > 0 replaces the derived app_pool (app.max_connections); the rest follows from it.
Pools PoolsFor(int cores, int app_pool = 0);

// The connection property: max_connections − reserved covers the app pool, the three aux
// consumers, the store pool and kConnectionHeadroom. Tune() keeps it for every host; the
// historical flat max_connections = 50 breaks it from 5 cores up.
bool ConnectionsCoverPools(int max_connections, const Pools& pools);

struct Settings {
  Profile profile = Profile::kEmbedded;
  Pools pools;
  std::vector<Setting> items;  // stable order: the order they are rendered in
  // Problems with the operator's pins (a max_connections too small for the pools, a pin that
  // names skydb's own value or is not a valid setting name); empty when there are none.
  std::vector<std::string> warnings;

  const Setting* Find(const std::string& name) const;
};

// True for names postgresql.conf accepts: [A-Za-z_][A-Za-z0-9_.]* (dots for extensions).
// Config validation of [postgres.settings] may use it; Tune() skips pins that fail it.
bool IsValidSettingName(const std::string& name);

// Pins ([postgres.settings]) win over derived values and are marked pinned; derivations that
// depend on a pinned value (work_mem on max_connections, ...) use the pinned value when it
// parses. A pin for a name tuning does not derive is appended as a pinned setting.
// `app_pool` > 0: the app's pool as configured (app.max_connections), else derived.
Settings Tune(const HostFacts& host, Profile profile,
              const std::map<std::string, std::string>& pins, int app_pool = 0);

// `name = value` lines for postgresql.conf, one per postgres setting, with a header comment
// and each setting's derivation as a comment line above it. Pinned values are quoted as
// postgresql.conf requires unless they are a plain token (number, unit, identifier).
std::string RenderConf(const Settings& settings);
// Human-readable table: name, value, how derived.
std::string RenderText(const HostFacts& host, const Settings& settings);
// JSON object: {"host": {...}, "profile": "...", "pools": {...},
//               "settings": [{name, value, derivation, pinned, postgres, numeric}], "warnings": []}
std::string RenderJson(const HostFacts& host, const Settings& settings);

}  // namespace skydb
