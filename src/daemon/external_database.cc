// `serve --database-url URL`: an external PostgreSQL (a managed service, a Patroni or
// pg_auto_failover cluster, Citus). Nothing is supervised: the database is someone else's to
// run. At start the schema is migrated under the migration lock, so several daemons starting
// together migrate once; a schema newer than this binary is refused. docs/scaling.md has the
// whole story.
#include <spdlog/spdlog.h>

#include <atomic>

#include "daemon/database_source.h"
#include "pgconn/pgconn.h"
#include "schema/migrate.h"
#include "skydb/mutex.h"
#include "skydb/schema.h"

namespace skydb::daemon {
namespace {

using std::chrono::milliseconds;

class ExternalDatabase final : public DatabaseSource {
 public:
  ExternalDatabase(Env& env, const Config& config) : env_(env), config_(config) {}

  std::string mode() const override { return "external"; }

  Status Prepare() override {
    auto described = pg::DescribeConnInfo(config_.store.database_url);
    if (!described.ok()) {
      return Error::InvalidArgument("store.database_url is " + described.error().message);
    }
    where_ = "external PostgreSQL (" + *described + ")";
    // The store's connections are sized as for a private cluster of this host.
    SKYDB_ASSIGN_OR_RETURN(HostFacts host,
                           ReadHostFacts(*env_.fs, SchedAffinityCpuCount(), config_.host));
    pools_ = Tune(host, Profile::kEmbedded, config_.postgres.settings, AppPool(config_)).pools;
    return Ok();
  }

  Status Run(const std::function<void(const DatabaseReady&)>& ready) override {
    auto migrated = ConnectAndMigrate();
    if (!migrated.ok()) {
      if (StopRequested()) return Ok();
      return std::move(migrated).error();
    }
    spdlog::info("schema of {}: {}", where_,
                 *migrated == 0 ? std::string("up to date")
                                : "applied " + std::to_string(*migrated) + " migration(s)");
    DatabaseReady r;
    r.conninfo = config_.store.database_url;
    r.description = where_;
    r.pools = pools_;
    r.banner = where_;
    r.app.url = config_.store.database_url;  // the app is given the URL as configured
    ready(r);
    MutexLock lock(mu_);
    while (!stop_) cv_.Wait(mu_);
    return Ok();
  }

  void RequestStop() override {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
  }

  void Reload(const Config&) override {
    spdlog::info(
        "SIGHUP: with an external database nothing is reloadable; restart skydb to "
        "apply changes");
  }

  // A store that cannot open on an external database is a failure, never a restart to wait
  // out: nothing here will call back again.
  bool Answers() override { return true; }

 private:
  bool StopRequested() {
    MutexLock lock(mu_);
    return stop_;
  }

  // Connects to a read-write server and migrates, retrying while no such server answers (down,
  // restarting, a standby not yet promoted) until supervisor.start_timeout. Errors of the
  // schema itself (a newer skydb's migration, a permission) are not retried.
  Result<int> ConnectAndMigrate() {
    auto deadline = env_.clock->Now() + config_.supervisor.start_timeout;
    std::string last;
    while (true) {
      auto conn = pg::Connection::Open(config_.store.database_url, /*read_write=*/true);
      if (conn.ok()) {
        auto recovery = conn->Exec("SELECT pg_is_in_recovery()");
        if (recovery.ok() && recovery->Get(0, 0) == "t") {
          last =
              "the server is a standby (pg_is_in_recovery() is true): skydb writes only to "
              "a primary; list every host in the URL with target_session_attrs=read-write";
        } else if (recovery.ok()) {
          auto applied = schema::ApplyMigrations(*conn, AllMigrations(),
                                                 config_.store.pooler == Pooler::kTransaction
                                                     ? schema::MigrationLock::kTransaction
                                                     : schema::MigrationLock::kSession);
          if (!applied.ok()) return std::move(applied).error().Within("the schema in " + where_);
          return applied;
        } else {
          last = recovery.error().message;
        }
      } else {
        last = conn.error().message;
      }
      if (env_.clock->Now() >= deadline) {
        return Error::Timeout("no read-write PostgreSQL at " + where_ + " within " +
                              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                 config_.supervisor.start_timeout)
                                                 .count()) +
                              " s (supervisor.start_timeout): " + last);
      }
      spdlog::warn("waiting for a read-write PostgreSQL at {}: {}", where_, last);
      MutexLock lock(mu_);
      if (!stop_) cv_.WaitFor(mu_, milliseconds(1000));
      if (stop_) return Error::Unavailable("stop requested while waiting for PostgreSQL");
    }
  }

  Env& env_;
  Config config_;
  std::string where_;
  Pools pools_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
};

// `serve --store memory`: no database; the store is ready at once.
class NoDatabase final : public DatabaseSource {
 public:
  std::string mode() const override { return "memory"; }
  Status Prepare() override { return Ok(); }
  Status Run(const std::function<void(const DatabaseReady&)>& ready) override {
    DatabaseReady r;
    r.description = "memory";
    r.banner = "memory";
    ready(r);  // no database: neither the store nor the app gets a URL
    MutexLock lock(mu_);
    while (!stop_) cv_.Wait(mu_);
    return Ok();
  }
  void RequestStop() override {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyAll();
  }
  void Reload(const Config&) override {
    spdlog::info("SIGHUP: a memory-only daemon has nothing to reload");
  }
  bool Answers() override { return true; }

 private:
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
};

}  // namespace

std::unique_ptr<DatabaseSource> NewExternalDatabase(Env& env, const Config& config) {
  return std::make_unique<ExternalDatabase>(env, config);
}

std::unique_ptr<DatabaseSource> NewNoDatabase(Env&, const Config&) {
  return std::make_unique<NoDatabase>();
}

std::unique_ptr<DatabaseSource> NewDatabaseSource(Env& env, const Config& config, Profile profile) {
  if (config.store.kind == StoreKind::kMemory) return NewNoDatabase(env, config);
  if (!config.store.database_url.empty()) return NewExternalDatabase(env, config);
  return NewEmbeddedCluster(env, config, profile);
}

}  // namespace skydb::daemon
