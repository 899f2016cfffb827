// Where the daemon's database comes from: the one part of the lifecycle that differs between
// `serve --embed`/`dev` (a private cluster, supervised), `serve --database-url` (an external
// PostgreSQL, migrated, not supervised) and `serve --store memory` (none).
//
// Run() blocks on the lifecycle's thread until RequestStop() (or a failure it cannot recover
// from) and calls `ready` each time the database becomes ready for the store: once for an
// external database or none, after every (re)start for a supervised cluster. The ready signal
// says where the app finds the database too (DatabaseReady::app): the lifecycle publishes the
// app's DATABASE_URL from it, so only the source knows where its database listens.
//
// Thread-safety: Run on one thread; RequestStop, Reload, Answers and the accessors from any.
// Failure: Prepare and Run return one sentence naming what failed and what to do.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skydb/app_env.h"
#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"
#include "skydb/supervisor.h"
#include "skydb/tune.h"

namespace skydb::daemon {

struct DatabaseReady {
  std::string conninfo;     // empty: no database (memory store)
  std::string description;  // for logs and INFO: "private cluster /var/lib/x/run"
  Pools pools;              // the store's connections, from tuning
  std::string banner;       // what the ready line says about the database
  int restarts = 0;         // > 0: ready again after a restart
  // Where the app finds its database: the source of the app's DATABASE_URL (skydb/app_env.h).
  AppDatabaseAddress app;
};

class DatabaseSource {
 public:
  virtual ~DatabaseSource() = default;
  // "embedded", "dev", "external" or "memory": the mode the metrics and /status show.
  virtual std::string mode() const = 0;
  // Work before Run that can refuse the start: discovery, tuning, URL checks.
  virtual Status Prepare() = 0;
  virtual Status Run(const std::function<void(const DatabaseReady&)>& ready) = 0;
  virtual void RequestStop() = 0;
  // SIGHUP: applies what can be applied without a restart; logs the rest.
  virtual void Reload(const Config& fresh) = 0;
  // Whether the database answers right now (a store that failed to open may just have lost
  // it to a crash the supervisor is about to repair).
  virtual bool Answers() = 0;
  virtual Supervisor* supervisor() { return nullptr; }
  virtual std::optional<Settings> settings() const { return std::nullopt; }
};

std::unique_ptr<DatabaseSource> NewEmbeddedCluster(Env& env, const Config& config, Profile profile);
std::unique_ptr<DatabaseSource> NewExternalDatabase(Env& env, const Config& config);
std::unique_ptr<DatabaseSource> NewNoDatabase(Env& env, const Config& config);
// The one the configuration names: none for store.kind = memory, external with
// store.database_url, else the private cluster with `profile`.
std::unique_ptr<DatabaseSource> NewDatabaseSource(Env& env, const Config& config, Profile profile);

}  // namespace skydb::daemon
