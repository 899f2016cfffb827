#include "daemon/app_launcher.h"

namespace skydb::daemon {

Result<ClusterUser> ResolveAppUser(uid_t euid, const Config& config,
                                   const std::function<Result<RunAs>(uid_t)>& lookup_uid,
                                   const std::function<Result<RunAs>(const std::string&)>& lookup) {
  const std::string& wanted = config.app.user;
  if (euid != 0) {
    SKYDB_ASSIGN_OR_RETURN(RunAs self, lookup_uid(euid));
    if (!wanted.empty() && wanted != self.name) {
      return Error::Permission("app.user is '" + wanted + "' but skydb runs as '" + self.name +
                               "', and only root can start the app as another user: run skydb "
                               "as root, or remove app.user (the app then runs as " +
                               self.name + ")");
    }
    return ClusterUser{self, false};
  }
  if (wanted.empty()) return ResolveClusterUser(euid, config.run_as_user, lookup_uid, lookup);
  SKYDB_ASSIGN_OR_RETURN(RunAs user, lookup(wanted));
  if (user.uid == 0) {
    return Error::Permission("app.user '" + wanted +
                             "' is root; skydb never runs the app as root: name an unprivileged "
                             "user");
  }
  return ClusterUser{user, true};
}

}  // namespace skydb::daemon
