// skydb's configuration: one declarative table of keys drives parsing, validation, defaults,
// --help text, the documented conf/skydb.toml and SIGHUP reload.
//
// Precedence, highest first: command-line flag > environment (SKY_POSTGRES_BIN, SKYDB_*) >
// file > default. Every error names where the bad value came from (file and line, variable or
// flag), the key, and what is accepted; the CLI exits with status 2 on any of them.
//
// Environment names: SKY_POSTGRES_BIN sets postgres.bin_dir, SKY_DB_MAX_OPEN_CONNS
// app.max_connections; every other key is SKYDB_ + its
// name upper-cased with '.' → '_' (SKYDB_LOG_LEVEL); SKYDB_POSTGRES_SETTINGS_<NAME> pins one
// PostgreSQL setting. An empty variable counts as unset. Any other SKYDB_* variable is an error
// (a typo must not be silently ignored) except SKYDB_CONFIG (the file path, read by the CLI)
// and SKYDB_TEST_* (reserved for test harnesses). docs/configuration.md has the whole story.
//
// Thread-safety: Config is a value; the table is immutable after its first use (built once,
// thread-safe static initialisation).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "skydb/result.h"

namespace skydb {

struct HostConfig {
  uint64_t ram_bytes = 0;  // host.ram; 0 = detect
  int cores = 0;           // host.cores; 0 = detect

  bool operator==(const HostConfig&) const = default;
};

struct PostgresConfig {
  std::string bin_dir;  // postgres.bin_dir (env SKY_POSTGRES_BIN); empty = discover
  std::string version;  // postgres.version pin: "" (any), "15" or "15.18"
  // postgres.sources: discovery sources allowed, in skydb/discovery.h's rank order:
  // "bin_dir", "bundle", "pg_config", "distro", "path".
  std::vector<std::string> sources = {"bin_dir", "bundle", "pg_config", "distro", "path"};
  std::string bundle;  // postgres.bundle: a bundle file to extract (skydb/bundle.h)
  // [postgres.settings]: postgresql.conf settings the operator pins; they win over tuning.
  std::map<std::string, std::string> settings;
  // postgres.tcp_bind: "" = unix socket only; else the address PostgreSQL also listens on (port
  // 5432), for tools: TLS (tls.cert_file) and scram-sha-256 required, apps' roles only.
  std::string tcp_bind;

  bool operator==(const PostgresConfig&) const = default;
};

struct SupervisorConfig {
  std::chrono::milliseconds start_timeout{60000};  // ready within this, extended in recovery
  std::chrono::milliseconds stop_timeout{30000};   // fast shutdown, then immediate
  std::chrono::milliseconds backoff_initial{500};  // first restart delay after a crash
  std::chrono::milliseconds backoff_max{30000};    // restart delay cap
  std::chrono::milliseconds stable_after{60000};   // up this long resets the backoff
  std::chrono::milliseconds crash_window{300000};  // crashes counted within this window
  int max_crashes = 5;                             // more than this in the window: exit

  bool operator==(const SupervisorConfig&) const = default;
};

// store.kind
enum class StoreKind {
  kTiered,  // memory in front of PostgreSQL
  kMemory,  // no PostgreSQL: nothing survives a restart
};
// store.durability
enum class Durability {
  kSync,   // acknowledge after the batch's COMMIT
  kAsync,  // acknowledge on enqueue; committed within flush_interval (the loss window)
};
// store.coherence (docs/scaling.md)
enum class Coherence {
  kAuto,       // shared with an external database (store.database_url), else exclusive
  kExclusive,  // this daemon is the table's only writer
  kShared,     // other daemons write the same table
};

// store.pooler (docs/scaling.md, "Through PgBouncer"): what lies between skydb and PostgreSQL.
enum class Pooler {
  kNone,         // a direct connection: every connection keeps its session
  kSession,      // PgBouncer's session pooling: the same, for skydb
  kTransaction,  // transaction pooling: each transaction may run on another server connection
};

struct StoreConfig {
  StoreKind kind = StoreKind::kTiered;
  Durability durability = Durability::kSync;
  std::chrono::milliseconds flush_interval{10};        // async: loss window
  std::chrono::milliseconds async_max_lag{100};        // async: back-pressure beyond this lag
  std::chrono::milliseconds write_timeout{10000};      // sync: longest wait for COMMIT
  std::chrono::milliseconds default_ttl{1800000};      // SET without EX/PX; 0 = never expires
  std::chrono::milliseconds idle_evict{300000};        // clean values idle this long leave memory
  std::chrono::milliseconds ttl_persist_slack{60000};  // coarse deadline persistence
  uint64_t max_memory = 0;                             // memory tier cap in bytes; 0 = none
  uint64_t max_value_bytes = 1 << 20;                  // larger values are refused
  int64_t queue_max_writes = 100000;                   // more queued: writes fail fast
  int64_t batch_max_rows = 1000;                       // rows per group commit
  bool allow_memory_fallback = false;  // dev only: memory store if PostgreSQL cannot open
  std::string database_url;            // external PostgreSQL (--database-url); "" = none
  Coherence coherence = Coherence::kAuto;
  Pooler pooler = Pooler::kNone;
  std::string pubsub_database_url;  // LISTEN connection for PUBLISH; "" = database_url
  // A daemon silent this long no longer counts for PUBLISH and PUBSUB (shared coherence).
  std::chrono::milliseconds pubsub_peer_timeout{10000};

  bool operator==(const StoreConfig&) const = default;
};

struct RespConfig {
  std::string socket;              // resp.socket: "" = DATA_DIR/run/skydb.sock
  std::string socket_group;        // resp.socket_group: "" = skydb's own group
  int64_t tcp_port = 0;            // resp.tcp_port: 0 = no TCP listener
  std::string bind = "127.0.0.1";  // resp.bind: TCP address
  bool allow_remote = false;       // resp.allow_remote: non-loopback bind; needs requirepass
  std::string requirepass;         // resp.requirepass: "" = no AUTH
  std::string aclfile;             // resp.aclfile: ACL SAVE / LOAD, read at start; "" = none
  int64_t max_clients = 10000;     // resp.max_clients
  std::chrono::milliseconds idle_timeout{0};  // resp.idle_timeout: 0 = never
  int64_t threads = 1;                        // resp.threads: event-loop threads
  uint64_t max_output_buffer = 64 << 20;      // resp.max_output_buffer: one client's reply bytes
  uint64_t max_reply_memory = 1 << 30;        // resp.max_reply_memory: all clients' reply bytes
  bool allow_flush = false;                   // resp.allow_flush: FLUSHALL/FLUSHDB run
  std::string notify_keyspace_events;         // resp.notify_keyspace_events: Redis's classes
  bool tls = false;  // resp.tls: the TCP listener speaks TLS only ([tls] files)

  bool operator==(const RespConfig&) const = default;
};

struct HttpConfig {
  std::string bind = "127.0.0.1";  // http.bind: address of /metrics, /healthz, /readyz, /status
  int64_t port = 9733;             // http.port: 0 = no HTTP endpoints
  bool allow_remote = false;       // http.allow_remote: permit a non-loopback http.bind
  // http.listen: "tcp" = http.bind:http.port; otherwise a unix socket path (relative: under
  // DATA_DIR/run), and http.bind, http.port and http.allow_remote are unused.
  std::string listen = "tcp";
  std::string socket_mode = "0660";  // http.socket_mode: octal, at most 0777
  std::string socket_group;          // http.socket_group: "" = skydb's own group
  bool tls = false;                  // http.tls: HTTPS on http.bind:http.port ([tls] files)

  bool operator==(const HttpConfig&) const = default;
};

// tls.client_certs: what the TLS listeners ask of a client's certificate.
enum class TlsClientCerts {
  kNone,      // none is asked for
  kOptional,  // asked for; one that is sent must chain to tls.ca_file
  kRequired,  // a client without one that chains to tls.ca_file is refused in the handshake
};

// [tls]: the certificate and key of skydb's TLS listeners (resp.tls, http.tls, and PostgreSQL's
// postgres.tcp_bind), PEM files read as the service user at start and on SIGHUP.
struct TlsConfig {
  std::string cert_file;  // tls.cert_file: the certificate, then its chain
  std::string key_file;   // tls.key_file: its private key
  std::string ca_file;    // tls.ca_file: CAs a client certificate must chain to
  TlsClientCerts client_certs = TlsClientCerts::kNone;  // tls.client_certs

  bool operator==(const TlsConfig&) const = default;
};

// app.restart: what `skydb run` does when the app exits on its own.
enum class AppRestart {
  kNo,         // skydb stops too and exits with the app's status
  kOnFailure,  // a non-zero exit or a signal restarts the app with backoff
};

// [app]: the application skydb serves (docs/embedding.md).
struct AppConfig {
  std::string database = "app";  // app.database: the app's own database in the private cluster
  std::string role = "app";      // app.role: its owner, the role the app connects as
  std::string user;              // app.user: OS user the app runs as; "" = the service user
  std::string group;             // app.group: may reach the sockets; "" = app.user's group
  std::string password_file;     // app.password_file: scram password for the role; "" = peer
  int64_t max_connections = 0;   // app.max_connections: the app's pool; 0 = tuning's app_pool
  AppRestart restart = AppRestart::kNo;
  std::chrono::milliseconds stop_timeout{10000};  // app.stop_timeout: SIGTERM, then SIGKILL
  // app.extensions: created in app.database at every start, as the superuser.
  std::vector<std::string> extensions;

  bool operator==(const AppConfig&) const = default;
};

// [backup]: base backups and WAL archiving into a repository (docs/backup.md).
// backup.compression: how base backups are stored (docs/backup.md).
enum class BackupCompression {
  kNone,  // plain directory, exactly as pg_basebackup -F plain writes it
  kGzip,  // tar, gzip (pg_wal.tar too)
  kLz4,   // tar, lz4 (pg_wal.tar stays uncompressed: PostgreSQL 15 compresses it only with gzip)
  kZstd,  // tar, zstd (pg_wal.tar likewise)
};

struct BackupConfig {
  std::string repository;  // backup.repository: a directory; "" = no backups, no archiving
  std::chrono::milliseconds schedule{86400000};      // backup.schedule: 0 = not by the daemon
  int64_t retain_count = 7;                          // backup.retain_count: newest N kept
  std::chrono::milliseconds retain_age{0};           // backup.retain_age: 0 = count only
  std::chrono::milliseconds archive_timeout{60000};  // backup.archive_timeout: WAL switch
  BackupCompression compression = BackupCompression::kNone;  // backup.compression

  bool operator==(const BackupConfig&) const = default;
};

struct Config {
  std::string data_dir = "/var/lib/skydb";  // data_dir (flag --data-dir)
  std::string run_as_user;                  // run_as_user (flag --user): cluster owner when root
  std::string log_level = "info";           // log.level: trace|debug|info|warn|error
  // log.format: auto|text|json; auto = journal format under systemd (JOURNAL_STREAM set), else
  // text.
  std::string log_format = "auto";
  HostConfig host;
  PostgresConfig postgres;
  SupervisorConfig supervisor;
  StoreConfig store;
  RespConfig resp;
  HttpConfig http;
  TlsConfig tls;
  AppConfig app;
  BackupConfig backup;

  bool operator==(const Config&) const = default;
};

// app.max_connections as tuning takes it (0 = derived).
inline int AppPool(const Config& config) { return static_cast<int>(config.app.max_connections); }

enum class ConfigType { kString, kBool, kInt, kSize, kDuration, kEnum, kStringList, kStringMap };
const char* ConfigTypeName(ConfigType type);  // "string", "size", "duration", ...

// One key's value in the representation its type uses: kString/kEnum → string, kBool → bool,
// kInt → int64_t, kSize → uint64_t (bytes), kDuration → milliseconds, kStringList → vector,
// kStringMap → map.
using ConfigValue = std::variant<std::string, bool, int64_t, uint64_t, std::chrono::milliseconds,
                                 std::vector<std::string>, std::map<std::string, std::string>>;

// One row of the table.
struct ConfigKey {
  std::string name;  // dotted TOML path, e.g. "store.durability"
  ConfigType type;
  std::string default_text;  // as written in conf/skydb.toml
  std::string accepted;      // what is accepted, for errors and help: "1..256", "sync|async"
  bool reloadable;           // applied on SIGHUP without a restart
  std::string restart_why;   // when not reloadable, why, if the key's name does not say it
  bool secret = false;       // never printed: messages and `config show` write "<redacted>"
  std::string description;   // one line
  std::string env;           // environment variable that sets it, or ""
  std::string flag;          // long command-line flag that sets it, or ""

  // Validation: the table fills these; loaders apply them the same way for every source.
  int64_t min = 0;  // kInt, kSize (bytes), kDuration (ms): inclusive bounds
  int64_t max = 0;
  bool zero_allowed = false;         // 0 is accepted below `min` (it means "detect")
  std::vector<std::string> choices;  // kEnum values; the items a kStringList may hold
  // A rule beyond type and bounds: "" when the value is fine, else why not ("must not be empty").
  std::function<std::string(const ConfigValue&)> rule;

  // Storage: reads and writes this key's field of a Config.
  std::function<ConfigValue(const Config&)> get;
  std::function<void(Config&, const ConfigValue&)> set;
};

// The table, in the order keys are documented and rendered.
const std::vector<ConfigKey>& ConfigKeys();
// The row named `name` ("log.level"), or nullptr.
const ConfigKey* FindConfigKey(std::string_view name);

// Where a configuration comes from. Flags are already split into key/value by the CLI.
struct ConfigInputs {
  std::string file;                                        // path of the TOML file; empty = none
  bool file_must_exist = true;                             // false for the implicit default path
  std::map<std::string, std::string> environment;          // usually the process environment
  std::vector<std::pair<std::string, std::string>> flags;  // key name → value, in order given
};

// Loads, validates and merges; InvalidArgument (exit 2) on any bad input.
Result<Config> LoadConfig(const ConfigInputs& inputs);

// Where a key's effective value came from.
enum class ConfigSource { kDefault, kFile, kEnvironment, kFlag };
const char* ConfigSourceName(ConfigSource source);  // "default", "file", "env", "flag"

struct ConfigOrigin {
  ConfigSource source = ConfigSource::kDefault;
  std::string detail;  // "/etc/skydb/skydb.toml:12", "SKYDB_LOG_LEVEL", "--set log.level"
};

// A merged configuration with the origin of every value that is not a default.
struct LoadedConfig {
  Config config;
  std::string file;  // the file that was read; "" when none was (implicit path absent)
  // Keyed by key name; [postgres.settings] entries as "postgres.settings.<name>".
  std::map<std::string, ConfigOrigin> origins;

  ConfigOrigin OriginOf(const std::string& key) const;  // kDefault when not recorded
};
Result<LoadedConfig> LoadConfigWithOrigins(const ConfigInputs& inputs);

// The effective configuration as TOML that loads back to the same Config, each value followed by
// a comment naming its origin ("# default", "# env SKYDB_LOG_LEVEL"). For `skydb config show`.
std::string RenderConfigToml(const LoadedConfig& loaded);

// Keys whose values differ between two configs, and whether all of them are reloadable.
struct ConfigChange {
  std::vector<std::string> changed;
  std::vector<std::string> need_restart;  // changed keys that are not reloadable
};
ConfigChange DiffConfig(const Config& before, const Config& after);

// The key table as help text (name, type, default, accepted, env, flag, description).
std::string RenderConfigHelp();

// Parses "512MiB", "2GiB", "1975MiB", "1048576" (bytes) → bytes. Units, case-insensitive:
// B, K/KB/KiB, M/MB/MiB, G/GB/GiB, T/TB/TiB — all 1024-based, as PostgreSQL's kB/MB/GB are.
// Rejects negatives, fractions, overflow and anything else with InvalidArgument.
Result<uint64_t> ParseSize(const std::string& text);
// Parses "10ms", "5s", "30m", "1h" → milliseconds. Units: ms, s, min (or m), h, d; a whole
// number and a unit are required (a bare "30" is rejected: seconds or milliseconds?), except
// for a bare "0", which is the same in every unit.
Result<std::chrono::milliseconds> ParseDuration(const std::string& text);
// The inverse spellings, in the largest unit that is exact: "1975MiB", "512B", "5min", "500ms".
std::string FormatSize(uint64_t bytes);
std::string FormatDuration(std::chrono::milliseconds duration);
// The known name closest to `name` by edit distance (case-insensitive), if it is plausibly a
// typo of it (at most two edits); else "". What every "did you mean" of skydb says.
std::string ClosestName(std::string_view name, const std::vector<std::string>& known);

}  // namespace skydb
