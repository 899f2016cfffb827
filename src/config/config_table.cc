// The table of configuration keys: the one place a key is declared. Parsing, validation,
// defaults (read from Config{}), help text, `config show`, and reload decisions all come from it.
#include <algorithm>
#include <cctype>
#include <type_traits>

#include "base/strings.h"
#include "config/config_value.h"
#include "skydb/config.h"

namespace skydb {
namespace {

using config_internal::RenderValueToml;
using std::chrono::milliseconds;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kTiB = int64_t{1} << 40;
constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;

// Builds one row. The field accessor is a generic lambda so it serves const and mutable
// Configs alike; `Stored` is the ConfigValue alternative the key's type uses.
class Row {
 public:
  template <typename Stored, typename Field>
  static Row Of(std::string name, ConfigType type, Field field) {
    Row row;
    row.key_.name = std::move(name);
    row.key_.type = type;
    row.key_.reloadable = false;
    row.key_.get = [field](const Config& c) { return ConfigValue{static_cast<Stored>(field(c))}; };
    row.key_.set = [field](Config& c, const ConfigValue& v) {
      using Target = std::remove_reference_t<decltype(field(c))>;
      field(c) = static_cast<Target>(std::get<Stored>(v));
    };
    return row;
  }

  // An enum-valued key: the TOML text is one of `names`, the field holds the matching value.
  template <typename E, typename Field>
  static Row OfEnum(std::string name, Field field, std::vector<std::pair<std::string, E>> names) {
    Row row;
    row.key_.name = std::move(name);
    row.key_.type = ConfigType::kEnum;
    row.key_.reloadable = false;
    row.key_.get = [field, names](const Config& c) {
      for (const auto& [text, value] : names) {
        if (value == field(c)) return ConfigValue{text};
      }
      return ConfigValue{std::string()};
    };
    row.key_.set = [field, names](Config& c, const ConfigValue& v) {
      for (const auto& [text, value] : names) {
        if (text == std::get<std::string>(v)) field(c) = value;
      }
    };
    for (const auto& [text, value] : names) row.key_.choices.push_back(text);
    return row;
  }

  Row& Range(int64_t min, int64_t max) {
    key_.min = min;
    key_.max = max;
    return *this;
  }
  Row& ZeroMeans(std::string meaning) {
    key_.zero_allowed = true;
    zero_means_ = std::move(meaning);
    return *this;
  }
  Row& Choices(std::vector<std::string> choices) {
    key_.choices = std::move(choices);
    return *this;
  }
  Row& Rule(std::function<std::string(const ConfigValue&)> rule) {
    key_.rule = std::move(rule);
    return *this;
  }
  Row& Accepts(std::string accepted) {
    key_.accepted = std::move(accepted);
    return *this;
  }
  Row& Secret() {
    key_.secret = true;
    return *this;
  }
  Row& Reloadable() {
    key_.reloadable = true;
    return *this;
  }
  Row& RestartBecause(std::string why) {
    key_.restart_why = std::move(why);
    return *this;
  }
  Row& Env(std::string env) {
    key_.env = std::move(env);
    return *this;
  }
  Row& Flag(std::string flag) {
    key_.flag = std::move(flag);
    return *this;
  }
  Row& Describe(std::string description) {
    key_.description = std::move(description);
    return *this;
  }

  operator ConfigKey() const {  // NOLINT(google-explicit-constructor): keeps the table terse
    ConfigKey key = key_;
    key.default_text = RenderValueToml(key, key.get(Config{}));
    if (key.env.empty()) key.env = DefaultEnv(key.name);
    if (key.accepted.empty()) key.accepted = DerivedAccepted();
    return key;
  }

 private:
  // SKYDB_ + the name upper-cased with '.' → '_': log.level → SKYDB_LOG_LEVEL.
  static std::string DefaultEnv(const std::string& name) {
    std::string env = "SKYDB_";
    for (char c : name) {
      env += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return env;
  }

  std::string Bound(int64_t value) const {
    if (key_.type == ConfigType::kSize) return FormatSize(static_cast<uint64_t>(value));
    if (key_.type == ConfigType::kDuration) return FormatDuration(milliseconds(value));
    return std::to_string(value);
  }

  // "0..4096 (0 = detect)", "1s..24h (units ms, s, min, h, d)", "trace|debug|info".
  std::string DerivedAccepted() const {
    if (key_.type == ConfigType::kEnum) return Join(key_.choices, "|");
    std::string range = Bound(key_.min) + ".." + Bound(key_.max);
    if (key_.zero_allowed) {
      range = (key_.min <= 1 ? "0.." + Bound(key_.max) : "0 or " + range) + " (0 = " + zero_means_ +
              ")";
    }
    if (key_.type == ConfigType::kSize) {
      return range + "; bytes, or a unit B, kB/KiB, MB/MiB, GB/GiB, TB/TiB (all 1024-based)";
    }
    if (key_.type == ConfigType::kDuration) return range + "; units ms, s, min, h, d";
    return range;
  }

  ConfigKey key_{};
  std::string zero_means_;
};

// Accessors: one generic lambda per field, usable on const and mutable Configs.
#define SKYDB_FIELD(path) ([](auto& c) -> auto& { return c.path; })

template <typename Field>
Row String(std::string name, Field f) {
  return Row::Of<std::string>(std::move(name), ConfigType::kString, f);
}
template <typename Field>
Row Enum(std::string name, Field f, std::vector<std::string> choices) {
  return Row::Of<std::string>(std::move(name), ConfigType::kEnum, f).Choices(std::move(choices));
}
template <typename Field>
Row Int(std::string name, Field f, int64_t min, int64_t max) {
  return Row::Of<int64_t>(std::move(name), ConfigType::kInt, f).Range(min, max);
}
template <typename Field>
Row Size(std::string name, Field f, int64_t min, int64_t max) {
  return Row::Of<uint64_t>(std::move(name), ConfigType::kSize, f).Range(min, max);
}
template <typename Field>
Row Duration(std::string name, Field f, int64_t min_ms, int64_t max_ms) {
  return Row::Of<milliseconds>(std::move(name), ConfigType::kDuration, f).Range(min_ms, max_ms);
}
template <typename Field>
Row List(std::string name, Field f, std::vector<std::string> items) {
  return Row::Of<std::vector<std::string>>(std::move(name), ConfigType::kStringList, f)
      .Choices(std::move(items));
}
template <typename Field>
Row Map(std::string name, Field f) {
  return Row::Of<std::map<std::string, std::string>>(std::move(name), ConfigType::kStringMap, f);
}

template <typename Field>
Row Bool(std::string name, Field f) {
  return Row::Of<bool>(std::move(name), ConfigType::kBool, f).Accepts("true or false");
}

std::string NotEmpty(const ConfigValue& v) {
  return std::get<std::string>(v).empty() ? "must not be empty" : "";
}

// A user name without the characters that would make it a path, a list or a flag.
std::string UserNameRule(const ConfigValue& v) {
  const auto& name = std::get<std::string>(v);
  bool bad = std::any_of(name.begin(), name.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == ':' || c == '/';
  });
  if (bad || StartsWith(name, "-")) return "is not a valid user name";
  return "";
}

// Redis's notify-keyspace-events classes, one letter each.
std::string NotifyClassesRule(const ConfigValue& v) {
  const auto& classes = std::get<std::string>(v);
  bool ok = classes.find_first_not_of("Ag$lshzxeKEtmdn") == std::string::npos;
  return ok ? "" : "has a character that is not a class of Ag$lshzxeKEtmdn";
}

// A PostgreSQL identifier skydb can put in pg_hba.conf and pg_ident.conf unquoted.
std::string IdentifierRule(const ConfigValue& v) {
  const auto& name = std::get<std::string>(v);
  bool ok = !name.empty() && name.size() <= 63 && (std::islower(name[0]) || name[0] == '_') &&
            std::all_of(name.begin(), name.end(), [](char c) {
              return std::islower(static_cast<unsigned char>(c)) || std::isdigit(c) || c == '_';
            });
  return ok ? "" : "is not a lower-case identifier of at most 63 characters";
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 4 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A file mode as chmod takes it: three or four octal digits, no bits above 0777 (a socket
// has no use for setuid, setgid or sticky).
std::string SocketModeRule(const ConfigValue& v) {
  const auto& mode = std::get<std::string>(v);
  bool octal = (mode.size() == 3 || mode.size() == 4) &&
               std::all_of(mode.begin(), mode.end(), [](char c) { return c >= '0' && c <= '7'; });
  if (!octal) return "is not an octal mode";
  return mode.size() == 4 && mode.front() != '0' ? "has bits above 0777" : "";
}

// "" or an absolute path that PostgreSQL's archive and restore commands can carry.
std::string RepositoryRule(const ConfigValue& v) {
  const auto& path = std::get<std::string>(v);
  if (path.empty()) return "";
  if (path.front() != '/') return "must be an absolute path";
  bool bad = std::any_of(path.begin(), path.end(), [](char c) {
    return c == '\'' || c == '"' || c == '%' || c == '\\' || c == '\n';
  });
  return bad ? "must not hold quotes, % or backslashes" : "";
}

// Extension names as CREATE EXTENSION takes them: pgcrypto, uuid-ossp, vector.
std::string ExtensionNamesRule(const ConfigValue& v) {
  for (const auto& name : std::get<std::vector<std::string>>(v)) {
    bool ok =
        !name.empty() && name.size() <= 63 && std::all_of(name.begin(), name.end(), [](char c) {
          return std::islower(static_cast<unsigned char>(c)) ||
                 std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        });
    if (!ok) return "has '" + name + "', which is not an extension name";
  }
  return "";
}

// "" (any), "15" (any 15.x) or "15.18" (exactly).
std::string VersionPinRule(const ConfigValue& v) {
  const auto& pin = std::get<std::string>(v);
  if (pin.empty()) return "";
  std::vector<std::string> parts = Split(pin, '.');
  bool ok = parts.size() <= 2 && std::all_of(parts.begin(), parts.end(), AllDigits);
  return ok ? "" : "is not a version pin";
}

std::vector<ConfigKey> BuildTable() {
  return {
      String("data_dir", SKYDB_FIELD(data_dir))
          .Rule(NotEmpty)
          .Accepts("a non-empty directory path")
          .Flag("--data-dir")
          .Describe("directory for the cluster (pgdata/), extracted bundles (runtime/) and "
                    "sockets (run/); 0700, owned by the service user"),
      String("run_as_user", SKYDB_FIELD(run_as_user))
          .Rule(UserNameRule)
          .Accepts("a user name, or \"\" (the user skydb runs as)")
          .Flag("--user")
          .Describe("user that owns and runs the PostgreSQL cluster when skydb starts as root "
                    "(PostgreSQL refuses to run as root)"),
      Enum("log.level", SKYDB_FIELD(log_level), {"trace", "debug", "info", "warn", "error"})
          .Reloadable()
          .Describe("least severe message that is logged"),
      Enum("log.format", SKYDB_FIELD(log_format), {"auto", "text", "json"})
          .Describe("log line format; auto = journal format (syslog priority prefixes, no "
                    "timestamps) under systemd, text otherwise"),
      Size("host.ram", SKYDB_FIELD(host.ram_bytes), 16 * kMiB, 64 * kTiB)
          .ZeroMeans("detect")
          .Flag("--ram")
          .Describe("RAM that tuning assumes; 0 = detect: min(MemTotal, cgroup memory limit)"),
      Int("host.cores", SKYDB_FIELD(host.cores), 1, 4096)
          .ZeroMeans("detect")
          .Flag("--cores")
          .Describe("CPU cores that tuning assumes; 0 = detect: min(online CPUs, affinity, "
                    "cgroup cpu.max quota rounded up)"),
      String("postgres.bin_dir", SKYDB_FIELD(postgres.bin_dir))
          .Env("SKY_POSTGRES_BIN")
          .Accepts("a directory path, or \"\" (discover)")
          .Describe("directory holding postgres, initdb and pg_ctl; ranked above every other "
                    "source, and an error if unusable; empty = discover"),
      String("postgres.version", SKYDB_FIELD(postgres.version))
          .Rule(VersionPinRule)
          .Accepts("\"\" (any version), a major such as \"15\", or an exact \"15.18\"")
          .Describe("version pin: binaries of any other version are rejected"),
      List("postgres.sources", SKYDB_FIELD(postgres.sources),
           {"bin_dir", "bundle", "pg_config", "distro", "path"})
          .Accepts("a non-empty list of bin_dir, bundle, pg_config, distro, path, each at most "
                   "once (comma-separated in environment and flags)")
          .Describe("binary discovery sources allowed; they are always tried in the order "
                    "bin_dir, bundle, pg_config, distro, path"),
      String("postgres.bundle", SKYDB_FIELD(postgres.bundle))
          .Accepts("a file path, or \"\" (none)")
          .Describe("PostgreSQL bundle file to verify and extract; empty = none configured"),
      String("postgres.tcp_bind", SKYDB_FIELD(postgres.tcp_bind))
          .Accepts("an IPv4 or IPv6 address, or \"\" (unix socket only)")
          .Describe("PostgreSQL also listens on this address, port 5432, for tools (JDBC, GUI "
                    "clients): TLS with tls.cert_file and scram-sha-256 only, apps' roles with a "
                    "password only; \"\" = unix socket only"),
      Map("postgres.settings", SKYDB_FIELD(postgres.settings))
          .Reloadable()
          .Env("SKYDB_POSTGRES_SETTINGS_<NAME>")
          .Accepts("a table of postgresql.conf names ([a-z_][a-z0-9_.]*) to strings, integers, "
                   "floats or booleans")
          .Describe("postgresql.conf settings pinned by the operator; they win over derived "
                    "tuning; on reload PostgreSQL applies those it can without a restart"),
      Duration("supervisor.start_timeout", SKYDB_FIELD(supervisor.start_timeout), kSecond,
               24 * kHour)
          .Describe("how long PostgreSQL may take to become ready (extended during recovery)"),
      Duration("supervisor.stop_timeout", SKYDB_FIELD(supervisor.stop_timeout), kSecond, kHour)
          .Describe("how long a fast shutdown may take before an immediate one"),
      Duration("supervisor.backoff_initial", SKYDB_FIELD(supervisor.backoff_initial), 10,
               10 * kMinute)
          .Reloadable()
          .Describe("delay before the first restart after a crash; doubles per crash"),
      Duration("supervisor.backoff_max", SKYDB_FIELD(supervisor.backoff_max), 100, kHour)
          .Reloadable()
          .Describe("cap on the restart delay; at least backoff_initial"),
      Duration("supervisor.stable_after", SKYDB_FIELD(supervisor.stable_after), kSecond, 24 * kHour)
          .Reloadable()
          .Describe("running this long after a restart resets the backoff"),
      Duration("supervisor.crash_window", SKYDB_FIELD(supervisor.crash_window), kSecond, 24 * kHour)
          .Reloadable()
          .Describe("window in which crashes are counted"),
      Int("supervisor.max_crashes", SKYDB_FIELD(supervisor.max_crashes), 1, 1000)
          .Reloadable()
          .Describe("more crashes than this within crash_window: skydb exits non-zero"),
      Row::OfEnum<StoreKind>("store.kind", SKYDB_FIELD(store.kind),
                             {{"tiered", StoreKind::kTiered}, {"memory", StoreKind::kMemory}})
          .Flag("--store")
          .Describe("tiered = memory tier in front of PostgreSQL (durable); memory = nothing "
                    "survives a restart (tests and demos only)"),
      Row::OfEnum<Durability>("store.durability", SKYDB_FIELD(store.durability),
                              {{"sync", Durability::kSync}, {"async", Durability::kAsync}})
          .Describe("sync acknowledges a write after its batch's COMMIT; async on enqueue, "
                    "committed within flush_interval (that is the loss window)"),
      Duration("store.flush_interval", SKYDB_FIELD(store.flush_interval), 1, 10 * kSecond)
          .Describe("async: the longest a write waits to be batched and committed"),
      Duration("store.async_max_lag", SKYDB_FIELD(store.async_max_lag), 1, 10 * kMinute)
          .Describe("async: when the oldest write not yet committed is older than this, new "
                    "writes are acknowledged only after their commit (back-pressure) until "
                    "PostgreSQL catches up; this bounds what a crash can lose"),
      Duration("store.write_timeout", SKYDB_FIELD(store.write_timeout), 10, 10 * kMinute)
          .Describe("sync: the longest a write waits for COMMIT (e.g. while PostgreSQL "
                    "restarts) before it fails with an error"),
      Duration("store.default_ttl", SKYDB_FIELD(store.default_ttl), kSecond, 365 * 24 * kHour)
          .ZeroMeans("never expires, as in Redis")
          .Describe("time to live of a write that names none (SET without EX/PX)"),
      Duration("store.idle_evict", SKYDB_FIELD(store.idle_evict), kSecond, 24 * kHour)
          .ZeroMeans("never")
          .Describe("clean values idle this long leave memory (they stay in PostgreSQL)"),
      Duration("store.ttl_persist_slack", SKYDB_FIELD(store.ttl_persist_slack), kSecond, kHour)
          .Describe("deadline-only changes persist the deadline plus this slack, so touches "
                    "within it write nothing; after a crash a session may live this much "
                    "longer, never shorter"),
      Size("store.max_memory", SKYDB_FIELD(store.max_memory), 16 * kMiB, 64 * kTiB)
          .ZeroMeans("no cap")
          .Describe("memory tier cap: clean values are evicted least-recently-used above it; "
                    "a memory-only store refuses writes above it"),
      Size("store.max_value_bytes", SKYDB_FIELD(store.max_value_bytes), 1024, 512 * kMiB)
          .Describe("largest value accepted; larger ones are refused before they are read"),
      Int("store.queue_max_writes", SKYDB_FIELD(store.queue_max_writes), 100, 100000000)
          .Describe("writes waiting for PostgreSQL beyond this fail at once with an error"),
      Int("store.batch_max_rows", SKYDB_FIELD(store.batch_max_rows), 1, 100000)
          .Describe("most rows one group commit carries"),
      Bool("store.allow_memory_fallback", SKYDB_FIELD(store.allow_memory_fallback))
          .Describe("skydb dev only: if PostgreSQL cannot be opened, serve a memory store "
                    "(announced loudly); production never falls back"),
      String("store.database_url", SKYDB_FIELD(store.database_url))
          .Secret()
          .Flag("--database-url")
          .Accepts("a libpq URI or keyword string (several hosts allowed), or \"\" (none)")
          .Describe("serve from this external PostgreSQL instead of a private cluster; it "
                    "may hold a password, so it is never shown"),
      Row::OfEnum<Coherence>("store.coherence", SKYDB_FIELD(store.coherence),
                             {{"auto", Coherence::kAuto},
                              {"exclusive", Coherence::kExclusive},
                              {"shared", Coherence::kShared}})
          .Describe("shared: several daemons use one database, every read goes to PostgreSQL; "
                    "exclusive: memory is authoritative; auto: shared with a database URL"),
      Row::OfEnum<Pooler>("store.pooler", SKYDB_FIELD(store.pooler),
                          {{"none", Pooler::kNone},
                           {"session", Pooler::kSession},
                           {"transaction", Pooler::kTransaction}})
          .Describe("what store.database_url reaches: transaction (PgBouncer's transaction "
                    "pooling) sends unnamed statements, takes transaction-scoped locks, and "
                    "lets every daemon sweep; none or session keep sessions"),
      String("store.pubsub_database_url", SKYDB_FIELD(store.pubsub_database_url))
          .Secret()
          .Accepts("a libpq URI or keyword string, or \"\" (store.database_url)")
          .Describe("the connection that LISTENs for PUBLISH from other daemons and, with "
                    "store.pooler = transaction, holds the expiry sweeper's and announcer's "
                    "locks; both need a session: with store.pooler = transaction, a direct URL; "
                    "\"\" there keeps PUBLISH to this daemon's subscribers and announces no "
                    "expired event"),
      Duration("store.pubsub_peer_timeout", SKYDB_FIELD(store.pubsub_peer_timeout), kSecond,
               10 * kMinute)
          .Describe("shared coherence: a daemon whose pub/sub heartbeat (every fifth of this) is "
                    "older than this no longer counts for PUBLISH and PUBSUB; its subscribers "
                    "are forgotten"),
      String("resp.socket", SKYDB_FIELD(resp.socket))
          .Accepts("a socket path, or \"\" (DATA_DIR/run/skydb.sock)")
          .Describe("unix socket the Redis-protocol store listens on (mode 0660)"),
      String("resp.socket_group", SKYDB_FIELD(resp.socket_group))
          .Accepts("a group name, or \"\" (skydb's own group)")
          .Describe("group that owns the store socket: its members may connect"),
      Int("resp.tcp_port", SKYDB_FIELD(resp.tcp_port), 1, 65535)
          .ZeroMeans("no TCP listener")
          .Describe("TCP port of the Redis-protocol store; off by default"),
      String("resp.bind", SKYDB_FIELD(resp.bind))
          .Rule(NotEmpty)
          .Accepts("an IPv4 or IPv6 address")
          .Describe("TCP address; loopback unless allow_remote"),
      Bool("resp.allow_remote", SKYDB_FIELD(resp.allow_remote))
          .Describe("allow a non-loopback resp.bind; requires resp.requirepass"),
      String("resp.requirepass", SKYDB_FIELD(resp.requirepass))
          .Secret()
          .Accepts("a password, or \"\" (no AUTH)")
          .Describe("password clients must AUTH with; never logged or shown"),
      String("resp.aclfile", SKYDB_FIELD(resp.aclfile))
          .Accepts("a file path, or \"\" (none)")
          .Describe("ACL users read at start (each replaces the stored user of its name) and "
                    "written by ACL SAVE; ACL LOAD makes it every user"),
      Int("resp.max_clients", SKYDB_FIELD(resp.max_clients), 1, 1000000)
          .Describe("connections beyond this get an error and are closed"),
      Duration("resp.idle_timeout", SKYDB_FIELD(resp.idle_timeout), kSecond, 24 * kHour)
          .ZeroMeans("never")
          .Describe("clients idle this long are disconnected"),
      String("resp.notify_keyspace_events", SKYDB_FIELD(resp.notify_keyspace_events))
          .Rule(NotifyClassesRule)
          .Accepts("Redis's classes (K E g $ h s x e A n ...), or \"\" (off)")
          .Describe("keyspace notifications at start, as Redis's notify-keyspace-events "
                    "(\"Egx\": expired and generic events on __keyevent@0__); CONFIG SET "
                    "notify-keyspace-events changes them while the daemon runs"),
      Int("resp.threads", SKYDB_FIELD(resp.threads), 1, 64)
          .Describe("event-loop threads serving clients"),
      Size("resp.max_output_buffer", SKYDB_FIELD(resp.max_output_buffer), kMiB, kTiB)
          .Describe("reply bytes one client may hold unread; past it the client is closed, and "
                    "a single larger reply is refused with an error; raised to "
                    "store.max_value_bytes + 64KiB if below"),
      Size("resp.max_reply_memory", SKYDB_FIELD(resp.max_reply_memory), 16 * kMiB, 64 * kTiB)
          .Describe("reply bytes all clients together may hold; the client whose reply would "
                    "pass it is closed, so clients that do not read cannot exhaust memory"),
      Bool("resp.allow_flush", SKYDB_FIELD(resp.allow_flush))
          .Describe("let FLUSHALL and FLUSHDB delete every session; refused with an error "
                    "naming this key otherwise"),
      Bool("resp.tls", SKYDB_FIELD(resp.tls))
          .Describe("the TCP listener (resp.tcp_port) speaks TLS only, with tls.cert_file and "
                    "tls.key_file; the unix socket stays plain"),
      String("http.bind", SKYDB_FIELD(http.bind))
          .Rule(NotEmpty)
          .Accepts("an IPv4 or IPv6 address")
          .Describe("address of the HTTP endpoints (/metrics, /healthz, /readyz, /status); "
                    "loopback unless allow_remote"),
      Int("http.port", SKYDB_FIELD(http.port), 1, 65535)
          .ZeroMeans("no HTTP endpoints")
          .Describe("TCP port of the HTTP endpoints; give each instance on a host its own"),
      Bool("http.allow_remote", SKYDB_FIELD(http.allow_remote))
          .Describe("allow a non-loopback http.bind; the endpoints have no authentication"),
      String("http.listen", SKYDB_FIELD(http.listen))
          .Rule(NotEmpty)
          .Accepts("\"tcp\", or a unix socket path (relative: under DATA_DIR/run)")
          .Describe("where the HTTP endpoints listen: tcp = http.bind:http.port; a socket path "
                    "instead (no TCP port), which only http.socket_group may reach"),
      String("http.socket_mode", SKYDB_FIELD(http.socket_mode))
          .Rule(SocketModeRule)
          .Accepts("an octal mode of at most 0777, such as \"0660\"")
          .Describe("mode of the http.listen socket; connecting needs write permission"),
      String("http.socket_group", SKYDB_FIELD(http.socket_group))
          .Accepts("a group name, or \"\" (skydb's own group)")
          .Describe("group that owns the http.listen socket: with mode 0660 its members may "
                    "read /metrics and /status"),
      Bool("http.tls", SKYDB_FIELD(http.tls))
          .Describe("the HTTP endpoints on http.bind:http.port speak HTTPS only, with "
                    "tls.cert_file and tls.key_file"),
      String("tls.cert_file", SKYDB_FIELD(tls.cert_file))
          .Reloadable()
          .Accepts("a PEM file path, or \"\" (none)")
          .Describe("certificate (then its chain) of resp.tls, http.tls and postgres.tcp_bind; "
                    "read as the service user at start and on SIGHUP"),
      String("tls.key_file", SKYDB_FIELD(tls.key_file))
          .Reloadable()
          .Accepts("a PEM file path, or \"\" (none)")
          .Describe("private key of tls.cert_file; readable by the service user only"),
      String("tls.ca_file", SKYDB_FIELD(tls.ca_file))
          .Reloadable()
          .Accepts("a PEM file path, or \"\" (none)")
          .Describe("CA certificates a client certificate must chain to (tls.client_certs)"),
      Row::OfEnum<TlsClientCerts>("tls.client_certs", SKYDB_FIELD(tls.client_certs),
                                  {{"none", TlsClientCerts::kNone},
                                   {"optional", TlsClientCerts::kOptional},
                                   {"required", TlsClientCerts::kRequired}})
          .Reloadable()
          .Describe("client certificates on resp.tls and http.tls: none asked; optional (one "
                    "sent must chain to tls.ca_file); required (refused in the handshake "
                    "without one)"),
      String("app.database", SKYDB_FIELD(app.database))
          .Rule(IdentifierRule)
          .Accepts("a lower-case identifier ([a-z_][a-z0-9_]*, at most 63 characters)")
          .Describe("the app's own database in the private cluster, owned by app.role; "
                    "skydb's tables are not in it"),
      String("app.role", SKYDB_FIELD(app.role))
          .Rule(IdentifierRule)
          .Accepts("a lower-case identifier ([a-z_][a-z0-9_]*, at most 63 characters)")
          .Describe("the role the app connects as: no superuser, owns only app.database"),
      String("app.user", SKYDB_FIELD(app.user))
          .Rule(UserNameRule)
          .Accepts("a user name, or \"\" (the service user)")
          .Describe("OS user the app runs as (skydb run starts it as this user); peer-mapped "
                    "to app.role only"),
      String("app.group", SKYDB_FIELD(app.group))
          .Rule(UserNameRule)
          .Accepts("a group name, or \"\" (app.user's primary group; none without app.user)")
          .Describe("group that may reach DIR/run, the PostgreSQL socket and the store socket"),
      String("app.password_file", SKYDB_FIELD(app.password_file))
          .Accepts("a file path, or \"\" (peer authentication only)")
          .Describe("file whose first line is app.role's password: the role then logs in "
                    "with scram-sha-256 instead of peer authentication"),
      Int("app.max_connections", SKYDB_FIELD(app.max_connections), 1, 10000)
          .ZeroMeans("tuning's app_pool")
          .Env("SKY_DB_MAX_OPEN_CONNS")
          .Describe("connections the app's pool may open; raises max_connections and is "
                    "app.role's connection limit (with its three aux pools)"),
      Row::OfEnum<AppRestart>("app.restart", SKYDB_FIELD(app.restart),
                              {{"no", AppRestart::kNo}, {"on-failure", AppRestart::kOnFailure}})
          .Describe("skydb run: on-failure restarts an app that failed, with backoff; no stops "
                    "skydb with the app and exits with its status"),
      Duration("app.stop_timeout", SKYDB_FIELD(app.stop_timeout), 100, kHour)
          .Reloadable()
          .Describe("skydb run: how long the app has to exit after SIGTERM before SIGKILL"),
      List("app.extensions", SKYDB_FIELD(app.extensions), {})
          .ZeroMeans("none")
          .Rule(ExtensionNamesRule)
          .Accepts("a list of extension names (lower case, digits, _ and -), or [] (none)")
          .Describe("extensions created in app.database at every start, as the superuser "
                    "(CREATE EXTENSION IF NOT EXISTS ... CASCADE); one PostgreSQL does not have "
                    "stops the start naming the package or bundle that has it"),
      String("backup.repository", SKYDB_FIELD(backup.repository))
          .Rule(RepositoryRule)
          .RestartBecause("archive_mode, which it turns on, changes only when PostgreSQL restarts")
          .Accepts("an absolute directory path, or \"\" (no backups)")
          .Describe("directory the cluster user owns where base backups and archived WAL go; "
                    "set, it turns WAL archiving on; \"\" = no backups"),
      Duration("backup.schedule", SKYDB_FIELD(backup.schedule), kMinute, 31 * 24 * kHour)
          .ZeroMeans("only skydb backup")
          .Reloadable()
          .Describe("the daemon takes a base backup when the newest is this old (with a "
                    "repository)"),
      Int("backup.retain_count", SKYDB_FIELD(backup.retain_count), 1, 10000)
          .Reloadable()
          .Describe("newest base backups kept; older ones and the WAL only they need are removed "
                    "after each backup"),
      Duration("backup.retain_age", SKYDB_FIELD(backup.retain_age), kHour, 10 * 365 * 24 * kHour)
          .ZeroMeans("retain_count alone")
          .Reloadable()
          .Describe("base backups younger than this are kept too, beyond retain_count"),
      Duration("backup.archive_timeout", SKYDB_FIELD(backup.archive_timeout), 10 * kSecond, kHour)
          .Reloadable()
          .Describe("PostgreSQL switches to a new WAL segment (and archives it) at least this "
                    "often: the most committed work a lost disk can take with it"),
      Row::OfEnum<BackupCompression>("backup.compression", SKYDB_FIELD(backup.compression),
                                     {{"none", BackupCompression::kNone},
                                      {"gzip", BackupCompression::kGzip},
                                      {"lz4", BackupCompression::kLz4},
                                      {"zstd", BackupCompression::kZstd}})
          .Reloadable()
          .Describe("how base backups are stored: none = a plain copy; gzip, lz4, zstd = "
                    "compressed tar files, extracted to a temporary directory to verify"),
  };
}

#undef SKYDB_FIELD

}  // namespace

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey> table = BuildTable();
  return table;
}

const ConfigKey* FindConfigKey(std::string_view name) {
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.name == name) return &key;
  }
  return nullptr;
}

const char* ConfigTypeName(ConfigType type) {
  switch (type) {
    case ConfigType::kString:
      return "string";
    case ConfigType::kBool:
      return "bool";
    case ConfigType::kInt:
      return "integer";
    case ConfigType::kSize:
      return "size";
    case ConfigType::kDuration:
      return "duration";
    case ConfigType::kEnum:
      return "enum";
    case ConfigType::kStringList:
      return "list";
    case ConfigType::kStringMap:
      return "table";
  }
  return "unknown";
}

}  // namespace skydb
