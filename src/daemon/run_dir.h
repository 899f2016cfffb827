// DIR and DIR/run before anything else uses them: created 0700 when missing; an existing DIR
// writable by others, or holding anything that is not skydb's, is refused with the fix; other
// modes are set to 0700 — or, when the app has a group (daemon/app_access.h), DIR 0710 and run/
// 0750, both that group's (src/supervisor/data_dir.h RunDirAccess).
// Thread-safety: free function over the injected Env.
#pragma once

#include <string>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::daemon {

Status PrepareRunDir(Env& env, const Config& config);

// `path` made absolute against the working directory and normalised; `path` itself if that fails.
std::string AbsolutePath(const std::string& path);

}  // namespace skydb::daemon
