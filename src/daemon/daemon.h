// `skydb serve` and `skydb dev` as a process: start-up work only root may do (then root is
// dropped for good), the lifecycle (daemon/lifecycle.h) with the database source the
// configuration names, and the signals: SIGTERM and SIGINT stop it in order (exit 0); SIGHUP
// re-loads the configuration and applies what is reloadable. Signals are blocked in every
// thread and taken by one signal thread with sigwait, so no handler runs in signal context.
//
// Thread-safety: RunDaemon is called once per process, from the main thread, before any other
// thread exists (it blocks signals; the postmaster's parent-death signal follows this thread).
// Failure: returns the exit status; a failure is logged as one sentence.
#pragma once

#include <functional>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"
#include "skydb/tune.h"

namespace skydb::daemon {

struct DaemonOptions {
  Config config;
  Profile profile = Profile::kEmbedded;
  // Re-reads the configuration (file, environment, the original flags) for SIGHUP.
  std::function<Result<Config>()> reload_config;
};

// 0 after a requested stop; 1 when the start or the database failed; 2 for a configuration
// the daemon cannot use (a database URL libpq cannot parse).
int RunDaemon(Env& env, const DaemonOptions& options);

}  // namespace skydb::daemon
