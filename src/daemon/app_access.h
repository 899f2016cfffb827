// Who the app is, resolved from [app] (skydb/config.h AppConfig) against the OS: the OS user it
// runs as, the group that may reach DIR/run and the sockets, and its role's password.
//
//   app.user ""             the app runs as the service user (child mode, skydb dev)
//   app.group ""            app.user's primary group; no group when the app is the service user
//   app.password_file       its first line, read by the service user; empty is refused
//
// Refused with the fix: a user or group that does not exist, an app.role naming the cluster's
// superuser role, an app.database naming one of PostgreSQL's own databases.
// Thread-safety: free functions over the password and group databases and `fs`.
#pragma once

#include <optional>
#include <string>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::daemon {

struct AppAccess {
  std::optional<RunAs> user;        // app.user when it names a user other than the service user
  std::optional<NamedGroup> group;  // may reach DIR/run, the PostgreSQL and store sockets
  std::string password;             // "" = peer authentication
};

// The group alone (no password file read): for the directory and socket modes.
Result<std::optional<NamedGroup>> ResolveAppGroup(const Config& config,
                                                  const std::string& service_user);
// Everything, for the embedded cluster, whose superuser role is `service_user`.
Result<AppAccess> ResolveAppAccess(const FileSystem& fs, const Config& config,
                                   const std::string& service_user);

}  // namespace skydb::daemon
