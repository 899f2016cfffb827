// Root's part of a daemon's start-up, and the end of root.
//
// Started as root, skydb does only what needs root, then becomes the service user for good:
//   1. the service user (run_as_user / --user; root itself is refused), resolved before
//      anything is created, so a refused start leaves nothing behind;
//   2. DIR made the service user's: created 0700 when missing; an existing DIR must be a
//      skydb data dir (src/supervisor/data_dir.h) and is handed over with what an older skydb
//      left root's (DIR, run/, runtime/, skydb.lock; chown never follows a link);
//   3. the privilege drop: supplementary groups (the user's, resp/http.socket_group and the app's
//      group, daemon/app_access.h), gid, uid, and a check that root cannot be regained; HOME,
//      USER and LOGNAME then name the service user.
// Everything after — discovery, bundle extraction, initdb, PostgreSQL, the status file, the
// store, the RESP and HTTP listeners and their parsers — runs as the service user, so root
// never writes into a directory the service user owns. Not root: nothing to do.
//
// Thread-safety: call once, before any other thread starts.
// Failure: one sentence naming what is wrong and the fix; nothing is created on a refusal.
#pragma once

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::daemon {

Status DropRootForGood(Env& env, const Config& config);

}  // namespace skydb::daemon
