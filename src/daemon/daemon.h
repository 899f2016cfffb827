// The daemon `skydb serve --embed` and `skydb dev` run: discovery → tuning → HTTP endpoints →
// supervisor → (once PostgreSQL is ready) store and RESP listener, with signal handling, the
// banner and systemd notification (daemon/observing.h).
//
// Signals: SIGTERM and SIGINT stop (fast shutdown of PostgreSQL, exit 0); SIGHUP re-loads the
// configuration, applies the reloadable keys, re-renders the settings and reloads PostgreSQL.
// They are blocked in every thread and taken by one signal thread with sigwait, so no handler
// runs in async-signal context.
//
// Thread-safety: RunDaemon is called once per process, from the main thread, before any other
// thread exists (it blocks signals and the postmaster's death signal follows this thread).
// Failure: returns the exit status; a failure is logged as one sentence.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "skydb/config.h"
#include "skydb/result.h"
#include "skydb/tune.h"

namespace skydb::daemon {

struct DaemonOptions {
  Config config;
  Profile profile = Profile::kEmbedded;
  // Re-reads the configuration (file, environment, the original flags) for SIGHUP.
  std::function<Result<Config>()> reload_config;
};

// 0 after a requested stop, 1 when the cluster could not be started or kept running.
// With store.kind = memory, runs RunMemoryOnly instead (no PostgreSQL).
// With store.database_url set, runs RunExternal instead (no private cluster).
int RunDaemon(const DaemonOptions& options);
int RunMemoryOnly(const DaemonOptions& options);
// `serve --database-url`: store and listener on an external PostgreSQL; 2 for a URL libpq
// cannot parse, 1 when no read-write server answered within supervisor.start_timeout or the
// schema is newer than this binary.
int RunExternal(const DaemonOptions& options);

// DIR and DIR/run, created 0700 when missing; an existing DIR writable by others, or holding
// anything that is not skydb's, is refused; wider modes are set to 0700.
Status PrepareRunDir(const std::string& data_dir);
// PrepareRunDir, then DIR/skydb.lock held (one daemon per DIR) until the result is destroyed;
// a second daemon is refused with the holder's pid.
Result<std::shared_ptr<void>> PrepareAndLockRunDir(const std::string& data_dir);

}  // namespace skydb::daemon
