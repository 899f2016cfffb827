// DaemonFamilies: every /metrics family, from one ObservedState. docs/operations.md lists them.
#include "skydb/obs.h"

namespace skydb {
namespace {

class Families {
 public:
  explicit Families(std::vector<MetricFamily>& out) : out_(out) {}

  // The reference is valid until the next Add or Push.
  MetricFamily& Add(std::string name, MetricType type, std::string help) {
    out_.push_back({std::move(name), std::move(help), type, {}});
    return out_.back();
  }
  void Push(MetricFamily family) { out_.push_back(std::move(family)); }
  void Gauge(const std::string& name, const std::string& help, double value,
             MetricLabels labels = {}) {
    Add(name, MetricType::kGauge, help).samples.push_back({std::move(labels), value, {}});
  }
  void Counter(const std::string& name, const std::string& help, double value,
               MetricLabels labels = {}) {
    Add(name, MetricType::kCounter, help).samples.push_back({std::move(labels), value, {}});
  }
  void Histogram(const std::string& name, const std::string& help, HistogramSnapshot h) {
    Add(name, MetricType::kHistogram, help).samples.push_back({{}, 0, std::move(h)});
  }

 private:
  std::vector<MetricFamily>& out_;
};

double D(uint64_t v) { return static_cast<double>(v); }
double D(int64_t v) { return static_cast<double>(v); }

void Process(Families& f, const ObservedState& s) {
  f.Gauge("skydb_build_info", "skydb's version and mode; always 1", 1,
          {{"version", s.version}, {"mode", s.mode}});
  f.Gauge("skydb_ready", "1 when PostgreSQL is ready and the store open (what /readyz says)",
          s.readiness.ready ? 1 : 0);
  f.Gauge("skydb_resident_memory_bytes", "resident set size of the skydb process",
          D(s.memory.skydb_rss_bytes));
  if (!s.process) return;
  // The names every Prometheus client library exports, so standard dashboards work.
  const ProcessFigures& p = *s.process;
  f.Counter("process_cpu_seconds_total", "total user and system CPU time spent in seconds",
            p.cpu_seconds);
  f.Gauge("process_start_time_seconds", "start time of the process since unix epoch in seconds",
          p.start_time_seconds);
  f.Gauge("process_resident_memory_bytes", "resident memory size in bytes",
          D(p.resident_memory_bytes));
  f.Gauge("process_virtual_memory_bytes", "virtual memory size in bytes",
          D(p.virtual_memory_bytes));
  f.Gauge("process_open_fds", "number of open file descriptors", D(p.open_fds));
  f.Gauge("process_max_fds", "maximum number of open file descriptors", D(p.max_fds));
}

void Store(Families& f, const ObservedState& s) {
  const std::string kind = s.store ? s.store->kind : "none";
  const double sessions = s.store ? D(s.store->sessions) : 0;
  f.Gauge("skydb_sessions_active", "live sessions (keys) in the opened store, exact", sessions,
          {{"store", kind}});
  f.Gauge("sky_live_sessions_active",
          "live sessions, under the Sky.Live runtime's name for its existing dashboards", sessions);
  if (!s.store) return;
  const StoreStats& st = *s.store;
  f.Gauge(
      "skydb_store_info", "the opened store: kind, durability, where; always 1", 1,
      {{"store", st.kind}, {"durability", st.durability}, {"description", s.store_description}});
  f.Gauge("skydb_store_expiring_sessions", "live sessions with a deadline", D(st.expiring));
  f.Gauge("skydb_store_cached_values", "values held in the memory tier", D(st.cached_values));
  f.Gauge("skydb_store_memory_bytes", "bytes of keys and values held by the memory tier",
          D(st.memory_bytes));
  f.Gauge("skydb_store_queue_depth", "writes enqueued and not yet committed", D(st.queue_depth));
  f.Counter("skydb_store_writes_total", "write operations accepted", D(st.writes));
  f.Counter("skydb_store_commits_total", "group-commit batches committed to PostgreSQL",
            D(st.commits));
  f.Counter("skydb_store_committed_rows_total", "rows written by committed batches",
            D(st.committed_rows));
  f.Counter("skydb_store_failed_commits_total", "batch commits that failed and were retried",
            D(st.failed_commits));
  f.Counter("skydb_store_write_timeouts_total",
            "writes failed because they were not committed within store.write_timeout",
            D(st.write_timeouts));
  f.Counter("skydb_store_queue_full_rejections_total",
            "writes refused because store.queue_max_writes were already queued",
            D(st.queue_full_rejections));
  f.Histogram("skydb_store_commit_batch_rows", "distinct keys per committed batch",
              st.commit_batch_rows);
  f.Histogram("skydb_store_commit_duration_seconds", "time of each successful batch COMMIT",
              st.commit_seconds);
  f.Counter("skydb_store_cache_hits_total", "reads answered from the memory tier",
            D(st.cache_hits));
  f.Counter("skydb_store_cache_misses_total", "reads that had to load from PostgreSQL",
            D(st.cache_misses));
  auto& evictions = f.Add("skydb_store_evictions_total", MetricType::kCounter,
                          "values dropped from memory (they stay durable), by reason");
  evictions.samples.push_back({{{"reason", "idle"}}, D(st.evictions_idle), {}});
  evictions.samples.push_back({{{"reason", "memory"}}, D(st.evictions_memory), {}});
  f.Counter("skydb_store_expirations_total", "sessions removed because their deadline passed",
            D(st.expirations));
  auto& pool = f.Add("skydb_store_pool_connections", MetricType::kGauge,
                     "the store's PostgreSQL connections by state (idle, busy, closed)");
  pool.samples.push_back({{{"state", "busy"}}, D(st.pool_busy), {}});
  pool.samples.push_back(
      {{{"state", "idle"}}, D(st.pool_open - std::min(st.pool_open, st.pool_busy)), {}});
  pool.samples.push_back(
      {{{"state", "closed"}}, D(st.pool_size - std::min(st.pool_size, st.pool_open)), {}});
  f.Gauge("skydb_store_pool_waiters", "loads of evicted values waiting for a reader connection",
          D(st.pool_waiters));
}

void Resp(Families& f, const ObservedState& s) {
  if (!s.resp) return;
  const RespServerStats& r = *s.resp;
  f.Gauge("skydb_resp_connected_clients", "Redis-protocol clients connected now",
          D(r.connected_clients));
  f.Counter("skydb_resp_connections_total", "Redis-protocol connections accepted",
            D(r.total_connections));
  f.Counter("skydb_resp_rejected_connections_total",
            "connections refused because resp.max_clients were connected",
            D(r.rejected_connections));
  auto& commands = f.Add("skydb_resp_commands_total", MetricType::kCounter,
                         "commands run, by name (\"unknown\": names skydb does not support)");
  for (const auto& [name, n] : r.commands)
    commands.samples.push_back({{{"command", name}}, D(n), {}});
  auto& seconds = f.Add("skydb_resp_command_duration_seconds", MetricType::kHistogram,
                        "time from a command's dispatch to its reply, by name (in sync "
                        "durability a write's includes its COMMIT)");
  for (const auto& [name, h] : r.command_seconds)
    seconds.samples.push_back({{{"command", name}}, 0, h});
  f.Counter("skydb_resp_protocol_errors_total",
            "malformed requests (the connection is closed after the error reply)",
            D(r.protocol_errors));
}

void Postgres(Families& f, const ObservedState& s) {
  if (!s.cluster) return;
  const SupervisorSnapshot& c = *s.cluster;
  f.Gauge("skydb_postgres_up", "1 when PostgreSQL answered skydb's last health check (PQping)",
          s.postgres_answers ? 1 : 0);
  f.Counter("skydb_postgres_restarts_total", "postmaster restarts after a crash", c.restarts);
  auto& state = f.Add("skydb_postgres_supervisor_state", MetricType::kGauge,
                      "the supervisor's state: 1 for the current one");
  for (auto st :
       {SupervisorState::kInitializing, SupervisorState::kStarting, SupervisorState::kMigrating,
        SupervisorState::kReady, SupervisorState::kBackoff, SupervisorState::kStopping,
        SupervisorState::kStopped, SupervisorState::kFailed}) {
    state.samples.push_back({{{"state", SupervisorStateName(st)}}, st == c.state ? 1.0 : 0.0, {}});
  }
  f.Counter("skydb_postgres_poll_failures_total",
            "failed queries for PostgreSQL's own figures (backends, database size)",
            D(s.postgres_poll_failures));
  if (s.memory.postgres_pss_bytes) {
    f.Gauge("skydb_postgres_pss_bytes",
            "proportional set size of the postmaster and all its children (shared memory "
            "counted once, not summed RSS)",
            D(*s.memory.postgres_pss_bytes));
    f.Gauge("skydb_postgres_processes", "the postmaster and its children",
            s.memory.postgres_processes);
  }
  if (!s.postgres) return;
  auto& backends = f.Add("skydb_postgres_backends", MetricType::kGauge,
                         "client backends by pg_stat_activity.state");
  for (const auto& [name, n] : s.postgres->backends_by_state) {
    backends.samples.push_back({{{"state", name}}, D(n), {}});
  }
  auto& size = f.Add("skydb_postgres_database_size_bytes", MetricType::kGauge,
                     "pg_database_size of each database");
  for (const auto& [name, bytes] : s.postgres->database_bytes) {
    size.samples.push_back({{{"database", name}}, D(bytes), {}});
  }
}

// WAL archiving (pg_stat_archiver) and the daemon's backups (docs/backup.md).
void Backup(Families& f, const ObservedState& s) {
  if (!s.backup) return;
  const BackupStatus& b = *s.backup;
  f.Gauge("skydb_backup_last_success_timestamp_seconds",
          "end of the newest complete base backup in backup.repository (0: none)",
          D(b.last_success_time));
  f.Gauge("skydb_backup_last_duration_seconds", "how long the daemon's last base backup took",
          b.last_duration_seconds);
  f.Gauge("skydb_backup_last_size_bytes", "size of the daemon's last base backup",
          D(b.last_size_bytes));
  f.Gauge("skydb_backup_running", "1 while a scheduled base backup runs", b.running ? 1 : 0);
  f.Counter("skydb_backup_failures_total", "scheduled base backups that failed", D(b.failures));
  f.Counter("skydb_backup_successes_total", "scheduled base backups taken by this daemon",
            D(b.successes));
  f.Gauge("skydb_wal_archive_failing",
          "1 while the last archive_command attempt failed (the reason is in /status)",
          b.archive_failure.empty() ? 0 : 1);
  if (!s.postgres) return;
  const ArchiverStats& a = s.postgres->archiver;
  f.Counter("skydb_wal_archived_total", "WAL segments archived (pg_stat_archiver)",
            D(a.archived_count));
  f.Counter("skydb_wal_archive_failed_total", "failed archive attempts (pg_stat_archiver)",
            D(a.failed_count));
  f.Gauge("skydb_wal_archive_last_success_timestamp_seconds",
          "when the last WAL segment was archived (0: never)", D(a.last_archived_time));
  f.Gauge("skydb_wal_archive_pending_segments",
          "complete WAL segments not yet archived; each is 16 MiB of pg_wal that cannot be freed",
          D(a.ready_segments));
  f.Gauge("skydb_wal_archive_lag_seconds",
          "how long the oldest complete, unarchived WAL segment has waited; 0 when caught up",
          a.oldest_ready_seconds);
}

void SettingsGauges(Families& f, const ObservedState& s) {
  if (!s.settings) return;
  // Filled side by side, so neither is a reference into the growing output.
  MetricFamily numbers{"skydb_setting",
                       "each derived setting with a numeric value (memory in bytes); "
                       "pinned=\"true\" when [postgres.settings] set it",
                       MetricType::kGauge,
                       {}};
  MetricFamily words{"skydb_setting_info",
                     "each derived setting whose value is a word, as a label; always 1",
                     MetricType::kGauge,
                     {}};
  for (const auto& item : s.settings->items) {
    MetricLabels labels = {{"name", item.name}, {"pinned", item.pinned ? "true" : "false"}};
    if (item.numeric) {
      numbers.samples.push_back({std::move(labels), *item.numeric, {}});
    } else {
      labels.emplace_back("value", item.value);
      words.samples.push_back({std::move(labels), 1, {}});
    }
  }
  f.Push(std::move(numbers));
  f.Push(std::move(words));
}

}  // namespace

std::vector<MetricFamily> DaemonFamilies(const ObservedState& state) {
  std::vector<MetricFamily> out;
  Families f(out);
  Process(f, state);
  Store(f, state);
  Resp(f, state);
  Postgres(f, state);
  Backup(f, state);
  SettingsGauges(f, state);
  return out;
}

}  // namespace skydb
