// Who `skydb run`'s app runs as. The launcher that runs it is an OS object (skydb/process.h,
// src/os/app_launcher.cc), forked through the Env (Env::app_launchers).
// Thread-safety: a pure function.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"
#include "skydb/supervisor.h"

namespace skydb::daemon {

// Who the app runs as: app.user, else the service user (run_as_user). As root: that user, which
// must not be root (drop_privileges true). Not root: skydb's own user; an app.user naming
// someone else is refused, since only root can switch users.
Result<ClusterUser> ResolveAppUser(uid_t euid, const Config& config,
                                   const std::function<Result<RunAs>(uid_t)>& lookup_uid,
                                   const std::function<Result<RunAs>(const std::string&)>& lookup);

}  // namespace skydb::daemon
