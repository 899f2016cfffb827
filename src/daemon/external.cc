// `skydb serve --database-url URL`: the store and the Redis-protocol listener on an external
// PostgreSQL (a managed service, a Patroni or pg_auto_failover cluster, Citus). Nothing is
// supervised: the database is someone else's to run. At start the schema is migrated under
// the migration lock, so several daemons starting together migrate once; a schema newer than
// this binary is refused. docs/scaling.md has the whole story.
#include <signal.h>

#include <spdlog/spdlog.h>

#include <chrono>

#include "daemon/daemon.h"
#include "daemon/observing.h"
#include "daemon/serving.h"
#include "pgconn/pgconn.h"
#include "schema/migrate.h"
#include "skydb/durable.h"
#include "skydb/supervisor.h"

namespace skydb::daemon {
namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  return set;
}

// Waits up to `wait` for SIGTERM or SIGINT (blocked in every thread); true if one came.
bool StopRequestedWithin(milliseconds wait) {
  sigset_t set = StopSignals();
  timespec ts{static_cast<time_t>(wait.count() / 1000),
              static_cast<long>((wait.count() % 1000) * 1000000)};
  int sig = ::sigtimedwait(&set, nullptr, &ts);
  return sig == SIGTERM || sig == SIGINT;
}

// Connects to a read-write server and migrates, retrying while no such server answers (down,
// restarting, a standby not yet promoted) until `timeout`. Errors of the schema itself (a newer
// skydb's migration, a permission) are not retried.
Result<int> ConnectAndMigrate(const std::string& url, const std::string& where,
                              milliseconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  std::string last;
  while (true) {
    auto conn = pg::Connection::Open(url, /*read_write=*/true);
    if (conn.ok()) {
      auto recovery = conn->Exec("SELECT pg_is_in_recovery()");
      if (recovery.ok() && recovery->Get(0, 0) == "t") {
        last = "the server is a standby (pg_is_in_recovery() is true): skydb writes only to a "
               "primary; list every host in the URL with target_session_attrs=read-write";
      } else if (recovery.ok()) {
        auto applied = schema::ApplyMigrations(*conn, AllMigrations());
        if (!applied.ok()) {
          return std::move(applied).error().Within("the schema in " + where);
        }
        return applied;
      } else {
        last = recovery.error().message;
      }
    } else {
      last = conn.error().message;
    }
    if (SteadyClock::now() >= deadline) {
      return Error::Timeout("no read-write PostgreSQL at " + where + " within " +
                            std::to_string(timeout.count() / 1000) +
                            " s (supervisor.start_timeout): " + last);
    }
    spdlog::warn("waiting for a read-write PostgreSQL at {}: {}", where, last);
    if (StopRequestedWithin(milliseconds(1000))) {
      return Error::Unavailable("stop requested while waiting for PostgreSQL");
    }
  }
}

}  // namespace

int RunExternal(const DaemonOptions& options) {
  const Config& config = options.config;
  auto described = pg::DescribeConnInfo(config.store.database_url);
  if (!described.ok()) {
    spdlog::error("skydb cannot start: store.database_url is {}", described.error().message);
    return 2;
  }
  std::string where = "external PostgreSQL (" + *described + ")";
  auto dir_lock = PrepareAndLockRunDir(config.data_dir);
  if (!dir_lock.ok()) {
    spdlog::error("skydb cannot start: {}", dir_lock.error().message);
    return 1;
  }
  auto fs = NewRealFileSystem();
  auto host = ReadHostFacts(*fs, SchedAffinityCpuCount(), config.host);
  if (!host.ok()) {
    spdlog::error("skydb cannot start: {}", host.error().message);
    return 1;
  }
  // The store's connections are sized as for a private cluster of this host.
  Settings settings = Tune(*host, Profile::kEmbedded, config.postgres.settings);
  auto clock = NewRealClock();
  auto notifier = NewSystemdNotifier();
  Serving serving(config, *clock, false);
  Observing observing(config, {"external", nullptr, nullptr, &serving, std::nullopt}, *notifier,
                      *clock);
  Status started = observing.Start();
  if (!started.ok()) {
    spdlog::error("skydb cannot start: {}", started.error().message);
    return 1;
  }
  auto migrated = ConnectAndMigrate(config.store.database_url, where,
                                    config.supervisor.start_timeout);
  if (!migrated.ok()) {
    spdlog::error("skydb cannot start: {}", migrated.error().message);
    observing.Stop();
    return 1;
  }
  spdlog::info("schema of {}: {}", where,
               *migrated == 0 ? std::string("up to date")
                              : "applied " + std::to_string(*migrated) + " migration(s)");
  Status opened = serving.Open(config.store.database_url, where, settings.pools);
  if (!opened.ok()) {
    spdlog::error("skydb cannot serve sessions: {}", opened.error().message);
    observing.Stop();
    return 1;
  }
  spdlog::info("skydb ready: {}", serving.Describe());
  observing.service().Ready("serving sessions: " + serving.Describe());
  sigset_t set = StopSignals();
  while (true) {
    int sig = 0;
    if (::sigwait(&set, &sig) != 0) continue;
    if (sig == SIGHUP) {
      observing.service().Reloading();
      spdlog::info("SIGHUP: with an external database nothing is reloadable; restart skydb "
                   "to apply changes");
      observing.service().Reloaded();
      continue;
    }
    break;
  }
  spdlog::info("stopping: closing the listener, then committing what is queued");
  observing.service().Stopping();
  serving.Stop(std::chrono::seconds(5), config.supervisor.stop_timeout);
  observing.Stop();
  spdlog::info("skydb stopped cleanly");
  return 0;
}

}  // namespace skydb::daemon
