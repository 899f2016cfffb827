#include "skydb/supervisor.h"

namespace skydb {

const char* SupervisorStateName(SupervisorState s) {
  switch (s) {
    case SupervisorState::kInitializing:
      return "initializing";
    case SupervisorState::kStarting:
      return "starting";
    case SupervisorState::kMigrating:
      return "migrating";
    case SupervisorState::kReady:
      return "ready";
    case SupervisorState::kBackoff:
      return "backoff";
    case SupervisorState::kStopping:
      return "stopping";
    case SupervisorState::kStopped:
      return "stopped";
    case SupervisorState::kFailed:
      return "failed";
  }
  return "unknown";
}

Result<ClusterUser> ResolveClusterUser(
    uid_t euid, const std::string& run_as_user,
    const std::function<Result<RunAs>(uid_t)>& lookup_uid,
    const std::function<Result<RunAs>(const std::string&)>& lookup_name) {
  if (euid == 0) {
    if (run_as_user.empty()) {
      return Error::Permission(
          "skydb is running as root and PostgreSQL refuses to run as root: set run_as_user in "
          "the config or pass --user NAME (an unprivileged user that will own DIR/pgdata)");
    }
    SKYDB_ASSIGN_OR_RETURN(RunAs user, lookup_name(run_as_user));
    if (user.uid == 0) {
      return Error::Permission("run_as_user '" + run_as_user +
                               "' is root, and PostgreSQL refuses to run as root: name an "
                               "unprivileged user");
    }
    return ClusterUser{user, true};
  }
  SKYDB_ASSIGN_OR_RETURN(RunAs self, lookup_uid(euid));
  if (!run_as_user.empty() && run_as_user != self.name) {
    return Error::Permission("run_as_user is '" + run_as_user + "' but skydb runs as '" +
                             self.name + "', and only root can switch users: run skydb as " +
                             run_as_user + " (or as root), or remove run_as_user");
  }
  return ClusterUser{self, false};
}

}  // namespace skydb
