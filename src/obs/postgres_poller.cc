// PostgresPoller: PostgreSQL's own figures (backends by state, database sizes) on a timer.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

#include "pgconn/pgconn.h"
#include "skydb/mutex.h"
#include "skydb/obs.h"

namespace skydb {
namespace {

constexpr const char* kBackendsSql =
    "SELECT coalesce(state, 'unknown'), count(*) FROM pg_stat_activity"
    " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1";
constexpr const char* kSizesSql =
    "SELECT datname, pg_database_size(oid) FROM pg_database WHERE datallowconn";

constexpr const char* kArchiverSql =
    "SELECT current_setting('archive_mode') <> 'off', archived_count, failed_count,"
    " coalesce(last_archived_wal, ''), coalesce(extract(epoch FROM last_archived_time)::bigint, 0),"
    " coalesce(last_failed_wal, ''), coalesce(extract(epoch FROM last_failed_time)::bigint, 0),"
    " r.n, coalesce(extract(epoch FROM now() - r.oldest), 0)"
    " FROM pg_stat_archiver, (SELECT count(*) AS n, min(modification) AS oldest"
    " FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') r";

class Poller final : public PostgresPoller {
 public:
  explicit Poller(PollerOptions options) : options_(std::move(options)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Poller() override { Stop(); }

  void Stop() override {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
    MutexLock join(join_mu_);
    if (thread_.joinable()) thread_.join();
  }

  std::optional<PostgresStats> Latest() const override {
    MutexLock lock(mu_);
    return latest_;
  }
  uint64_t failures() const override {
    MutexLock lock(mu_);
    return failures_;
  }

 private:
  void Loop() {
    MutexLock lock(mu_);
    while (!stop_) {
      lock.Unlock();
      auto polled = Poll();
      lock.Lock();
      if (polled.ok()) {
        latest_ = std::move(polled).value();
      } else {
        ++failures_;
        if (failures_ == 1 || failures_ % 60 == 0) {
          spdlog::warn("metrics: cannot read PostgreSQL's figures ({} failures so far): {}",
                       failures_, polled.error().message);
        }
      }
      if (!stop_) cv_.WaitFor(mu_, options_.interval);  // a timed wait: no clock read
    }
  }

  Result<PostgresStats> Poll() {
    if (!conn_ || !conn_->Healthy()) {
      conn_.reset();
      SKYDB_ASSIGN_OR_RETURN(
          auto conn, pg::Connection::Open(options_.conninfo + " connect_timeout=" +
                                          std::to_string(options_.connect_timeout_seconds)));
      SKYDB_RETURN_IF_ERROR(conn.Run("SET statement_timeout = " +
                                     std::to_string(options_.statement_timeout.count())));
      conn_.emplace(std::move(conn));
    }
    PostgresStats stats;
    SKYDB_ASSIGN_OR_RETURN(auto backends, conn_->Exec(kBackendsSql));
    for (int i = 0; i < backends.rows(); ++i) {
      stats.backends_by_state[backends.Get(i, 0)] =
          std::strtoll(backends.Get(i, 1).c_str(), nullptr, 10);
    }
    SKYDB_ASSIGN_OR_RETURN(auto sizes, conn_->Exec(kSizesSql));
    for (int i = 0; i < sizes.rows(); ++i) {
      stats.database_bytes[sizes.Get(i, 0)] = std::strtoull(sizes.Get(i, 1).c_str(), nullptr, 10);
    }
    SKYDB_ASSIGN_OR_RETURN(auto archiver, conn_->Exec(kArchiverSql));
    if (archiver.rows() == 1) {
      ArchiverStats& a = stats.archiver;
      a.archive_mode = archiver.Get(0, 0) == "t";
      a.archived_count = std::strtoll(archiver.Get(0, 1).c_str(), nullptr, 10);
      a.failed_count = std::strtoll(archiver.Get(0, 2).c_str(), nullptr, 10);
      a.last_archived_wal = archiver.Get(0, 3);
      a.last_archived_time = std::strtoll(archiver.Get(0, 4).c_str(), nullptr, 10);
      a.last_failed_wal = archiver.Get(0, 5);
      a.last_failed_time = std::strtoll(archiver.Get(0, 6).c_str(), nullptr, 10);
      a.ready_segments = std::strtoll(archiver.Get(0, 7).c_str(), nullptr, 10);
      a.oldest_ready_seconds = std::strtod(archiver.Get(0, 8).c_str(), nullptr);
    }
    stats.taken_at = options_.clock->WallNow();
    return stats;
  }

  PollerOptions options_;
  std::optional<pg::Connection> conn_;  // poller thread only
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::optional<PostgresStats> latest_ GUARDED_BY(mu_);
  uint64_t failures_ GUARDED_BY(mu_) = 0;
  Mutex join_mu_;  // one joiner: Stop may be called from two threads
  std::thread thread_;
};

}  // namespace

std::unique_ptr<PostgresPoller> StartPostgresPoller(const PollerOptions& options) {
  return std::make_unique<Poller>(options);
}

}  // namespace skydb
