// Observability: what an operator sees of a running daemon.
//
//   HTTP (loopback TCP by default, or a unix socket): GET /metrics (Prometheus text), /healthz
//   (the process answers), /readyz (200 once PostgreSQL is ready and the store open, 503 with
//   the reason otherwise), /status (JSON: cluster, store, pool, sessions, memory, settings).
//
// The daemon gathers an ObservedState at scrape time (cheap: stats structs and the poller's
// last result, never a blocking query); DaemonFamilies and StatusJson turn it into text and
// are pure, so their output is unit-tested. PostgreSQL's own figures come from
// PostgresPoller, which queries on its own thread with connect and statement timeouts.
//
// Thread-safety: HttpEndpoints calls its handlers from its worker threads, concurrently.
// PostgresPoller::Latest is safe from any thread. Pure functions are pure.
// Failure: NewHttpEndpoints names the address and port (or socket) it could not listen on and
// what to change. A taken port is refused, never shared (no SO_REUSEPORT); a socket file a live
// server answers on is refused, a stale one replaced (os/listen_socket.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "skydb/env.h"
#include "skydb/metrics.h"
#include "skydb/resp.h"
#include "skydb/result.h"
#include "skydb/store.h"
#include "skydb/supervisor.h"
#include "skydb/tune.h"

namespace skydb {

// ---- HTTP -----------------------------------------------------------------------------------

class TlsContext;  // src/tls/tls_context.h

struct HttpOptions {
  std::string bind = "127.0.0.1";
  int port = 9464;            // 0: no HTTP listener
  bool allow_remote = false;  // a non-loopback bind is refused without it
  bool any_port = false;      // tests: an ephemeral port instead of `port`; port() tells which
  // Non-empty: serve on this unix socket instead of bind:port, which are then unused.
  std::string unix_path;
  uint32_t unix_mode = 0660;
  std::string unix_group;  // "": the process's group
  // Non-null (http.tls): HTTPS only, with this context's certificate, reloaded on SIGHUP.
  std::shared_ptr<TlsContext> tls;

  bool enabled() const { return !unix_path.empty() || port != 0 || any_port; }
};

// Checks the options without touching the OS; the message names the config key to change.
Status ValidateHttpOptions(const HttpOptions& options);

struct Readiness {
  bool ready = false;
  std::string reason;  // why not ready ("PostgreSQL is starting"), or "ready"
};

struct HttpHandlers {
  std::function<std::string()> metrics;  // Prometheus text
  std::function<Readiness()> readiness;
  std::function<std::string()> status_json;
};

class HttpEndpoints {
 public:
  virtual ~HttpEndpoints() = default;  // shuts down if still running
  virtual int port() const = 0;        // the bound port; 0 on a unix socket
  virtual void Shutdown() = 0;         // stops accepting, joins the threads; idempotent
};

// Binds and starts serving: when it returns, requests are answered.
Result<std::unique_ptr<HttpEndpoints>> NewHttpEndpoints(const HttpOptions& options,
                                                        HttpHandlers handlers);

// ---- what is observed -----------------------------------------------------------------------

// pg_stat_archiver and the segment being written (docs/backup.md).
struct ArchiverStats {
  bool archive_mode = false;  // archive_mode is on
  int64_t archived_count = 0;
  int64_t failed_count = 0;
  std::string last_archived_wal;
  int64_t last_archived_time = 0;  // epoch seconds; 0 = never
  std::string last_failed_wal;
  int64_t last_failed_time = 0;
  // pg_wal/archive_status/*.ready (pg_ls_archive_statusdir): complete segments waiting for the
  // archiver, and how long the oldest has waited.
  int64_t ready_segments = 0;
  double oldest_ready_seconds = 0;
};

// The daemon's scheduled backups and its archive_command's last failure.
struct BackupStatus {
  std::string repository;
  std::chrono::milliseconds schedule{0};
  bool running = false;
  int64_t last_success_time = 0;  // epoch seconds of the newest backup's end; 0 none
  double last_duration_seconds = 0;
  uint64_t last_size_bytes = 0;
  uint64_t successes = 0;  // taken by this daemon
  uint64_t failures = 0;
  std::string last_error;       // the last scheduled backup's failure; "" after a success
  std::string archive_failure;  // the last archive-wal failure; "" once one succeeds
};

// PostgreSQL's figures from its own catalog, as of the poller's last successful query.
struct PostgresStats {
  std::map<std::string, int64_t> backends_by_state;  // client backends, pg_stat_activity.state
  std::map<std::string, uint64_t> database_bytes;    // pg_database_size per database
  ArchiverStats archiver;
  std::chrono::system_clock::time_point taken_at;
};

struct MemoryFigures {
  uint64_t skydb_rss_bytes = 0;
  std::optional<uint64_t> postgres_pss_bytes;  // the postmaster and its descendants
  int postgres_processes = 0;
};

// The standard process_* figures of the skydb process (Prometheus's client-library names).
struct ProcessFigures {
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
  uint64_t resident_memory_bytes = 0;
  uint64_t virtual_memory_bytes = 0;
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;  // RLIMIT_NOFILE's soft limit
};

struct ObservedState {
  std::string version;
  std::string mode;  // "embedded", "dev", "memory"
  Readiness readiness;
  std::optional<SupervisorSnapshot> cluster;  // absent without a private cluster
  bool postgres_answers = false;              // the health check's last PQping
  std::optional<PostgresStats> postgres;      // absent until the first poll succeeds
  uint64_t postgres_poll_failures = 0;
  std::optional<BackupStatus> backup;  // absent without backup.repository
  std::optional<StoreStats> store;     // absent until the store is open
  std::string store_description;
  std::optional<RespServerStats> resp;
  std::optional<Settings> settings;
  MemoryFigures memory;
  std::optional<ProcessFigures> process;  // absent when /proc could not be read
  // What the app connects to (skydb/app_env.h): the store socket and its database's URL
  // (passwords redacted; "" with a memory-only store).
  std::string store_socket;
  std::string app_database_url;
};

// Every family /metrics shows; docs/operations.md explains each.
std::vector<MetricFamily> DaemonFamilies(const ObservedState& state);
// /status: {"version","mode","ready","app","cluster","store","pool","sessions","memory",
// "settings","resp","postgres"}; absent parts are null.
std::string StatusJson(const ObservedState& state);

// ---- memory ---------------------------------------------------------------------------------

// "Pss:" (or "Rss:") of a /proc/PID/smaps_rollup text, in bytes; nullopt when absent.
std::optional<uint64_t> SmapsRollupField(const std::string& text, const std::string& field);
// The parent pid from a /proc/PID/stat text; nullopt when it does not parse.
std::optional<pid_t> ParentPidFromStat(const std::string& text);
// PSS summed over `root` and every descendant (found through /proc/*/stat), read through
// `fs` rooted at "/". Processes that vanish mid-walk are skipped. NotFound when `root` has no
// readable smaps_rollup.
struct TreeMemory {
  uint64_t pss_bytes = 0;
  int processes = 0;
};
Result<TreeMemory> ReadProcessTreePss(const FileSystem& fs, pid_t root);
// This process's resident set from /proc/self/smaps_rollup; 0 when unreadable.
uint64_t ReadSelfRss(const FileSystem& fs);

// /proc/self/stat's fields the process_* figures need (proc(5)).
struct ProcSelfStat {
  uint64_t utime_ticks = 0;
  uint64_t stime_ticks = 0;
  uint64_t start_ticks = 0;  // since boot
  uint64_t vsize_bytes = 0;
  uint64_t rss_pages = 0;
};
// Pure parsers and arithmetic; nullopt when a text does not parse.
std::optional<ProcSelfStat> ParseProcSelfStat(const std::string& text);
std::optional<int64_t> ParseBootTime(const std::string& proc_stat);  // /proc/stat's btime
ProcessFigures ComputeProcessFigures(const ProcSelfStat& stat, int64_t boot_time,
                                     long ticks_per_second, long page_size);
// This process's figures from /proc/self/stat, /proc/stat, /proc/self/fd and getrlimit.
std::optional<ProcessFigures> ReadProcessFigures(const FileSystem& fs);

// ---- PostgreSQL poller ----------------------------------------------------------------------

// Queries pg_stat_activity and pg_database_size every `interval` on its own thread, with a
// connect timeout and a statement timeout, so a hung server delays only the poller.
class PostgresPoller {
 public:
  virtual ~PostgresPoller() = default;  // stops and joins
  // Ends the polls and joins the thread, before PostgreSQL stops (a poll during its shutdown
  // would log a failure); Latest() keeps the last reading. Idempotent, any thread.
  virtual void Stop() = 0;
  virtual std::optional<PostgresStats> Latest() const = 0;
  virtual uint64_t failures() const = 0;  // polls that failed since start
};
struct PollerOptions {
  std::string conninfo;
  std::chrono::milliseconds interval{5000};
  int connect_timeout_seconds = 2;  // libpq's minimum is 2
  std::chrono::milliseconds statement_timeout{2000};
  const Clock* clock = nullptr;  // required: stamps each reading (the Env's clock)
};
std::unique_ptr<PostgresPoller> StartPostgresPoller(const PollerOptions& options);

}  // namespace skydb
