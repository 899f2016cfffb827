// PostgresPoller: PostgreSQL's own figures (backends by state, database sizes) on a timer.
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "pgconn/pgconn.h"
#include "skydb/obs.h"

namespace skydb {
namespace {

constexpr const char* kBackendsSql =
    "SELECT coalesce(state, 'unknown'), count(*) FROM pg_stat_activity"
    " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1";
constexpr const char* kSizesSql =
    "SELECT datname, pg_database_size(oid) FROM pg_database WHERE datallowconn";

class Poller final : public PostgresPoller {
 public:
  explicit Poller(PollerOptions options) : options_(std::move(options)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Poller() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::optional<PostgresStats> Latest() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_;
  }
  uint64_t failures() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      auto polled = Poll();
      lock.lock();
      if (polled.ok()) {
        latest_ = std::move(polled).value();
      } else {
        ++failures_;
        if (failures_ == 1 || failures_ % 60 == 0) {
          spdlog::warn("metrics: cannot read PostgreSQL's figures ({} failures so far): {}",
                       failures_, polled.error().message);
        }
      }
      cv_.wait_for(lock, options_.interval, [this] { return stop_; });
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
    stats.taken_at = std::chrono::system_clock::now();
    return stats;
  }

  PollerOptions options_;
  std::optional<pg::Connection> conn_;  // poller thread only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                    // guarded by mu_
  std::optional<PostgresStats> latest_;  // guarded by mu_
  uint64_t failures_ = 0;                // guarded by mu_
  std::thread thread_;
};

}  // namespace

std::unique_ptr<PostgresPoller> StartPostgresPoller(const PollerOptions& options) {
  return std::make_unique<Poller>(options);
}

}  // namespace skydb
