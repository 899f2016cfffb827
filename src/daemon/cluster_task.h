// Work on the private cluster of a data directory no daemon serves (`skydb app ...` on a stopped
// DIR): the start a daemon makes, without its store, listeners or signals — root's part and the
// root drop (daemon/privileges.h), DIR/skydb.lock held throughout, PostgreSQL started by the
// supervisor (which also brings the configured app and pg_hba.conf up to date), `work` run once
// it is ready, then the fast stop.
//
// Thread-safety: call from the main thread before any other thread exists (the root drop and
// the postmaster's parent-death signal follow this thread).
// Failure: the start's failure, or `work`'s; PostgreSQL is stopped either way.
#pragma once

#include <functional>
#include <string>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::daemon {

struct ClusterSession {
  std::string conninfo;   // the superuser, in skydb's own database, over the private socket
  std::string pgdata;     // DIR/pgdata
  std::string superuser;  // the cluster's superuser role (the service user's name)
};

Status RunOnStoppedCluster(Env& env, const Config& config,
                           const std::function<Status(const ClusterSession&)>& work);

}  // namespace skydb::daemon
