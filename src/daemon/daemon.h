// `skydb serve`, `skydb dev` and `skydb run` as a process: start-up work only root may do (then
// root is dropped for good), the lifecycle (daemon/lifecycle.h) with the database source the
// configuration names, and the signals: SIGTERM and SIGINT stop it in order (exit 0); SIGHUP
// re-loads the configuration and applies what is reloadable. Signals are blocked in every
// thread and taken by one signal thread with sigwait, so no handler runs in signal context.
//
// `skydb run` (options.app): the app's launcher (skydb/process.h) is forked before root
// is dropped; the app starts once the lifecycle is ready and READY=1 waits for it; SIGTERM and
// SIGINT stop the app first, then the lifecycle; SIGHUP goes to the app too; the exit status is
// the app's (daemon/app_runner.h). Child mode (exit_with_parent, ready_fd): daemon/child_mode.h.
//
// Thread-safety: RunDaemon is called once per process, from the main thread, before any other
// thread exists (it blocks signals; the postmaster's parent-death signal follows this thread).
// Failure: returns the exit status; a failure is logged as one sentence.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

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
  // `skydb run`: APP and its arguments (empty: no app).
  std::vector<std::string> app;
  bool exit_with_parent = false;  // child mode: stop when the parent process dies
  pid_t parent_pid = 0;           // the parent's own pid (--parent-pid); 0: getppid()
  int ready_fd = -1;              // child mode: the ready line goes here; -1: none
};

// 0 after a requested stop; 1 when the start or the database failed; 2 for a configuration
// the daemon cannot use (a database URL libpq cannot parse, a --ready-fd that is not open, an
// app.user it cannot run the app as). With an app: the app's status (app_runner.h).
int RunDaemon(Env& env, const DaemonOptions& options);

}  // namespace skydb::daemon
