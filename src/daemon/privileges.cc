#include "daemon/privileges.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "daemon/app_access.h"
#include "daemon/run_dir.h"
#include "skydb/supervisor.h"
#include "supervisor/data_dir.h"

namespace skydb::daemon {
namespace {

// DIR and the entries an older skydb, run as root, may have left root's. DIR and run/ belong to
// the app's group when there is one (src/supervisor/data_dir.h RunDirAccess).
Status HandOver(Env& env, const supervisor::DataDirLayout& layout, const RunAs& user,
                const supervisor::RunDirAccess& access) {
  gid_t shared = access.group ? access.group->gid : user.gid;
  for (const auto& [path, gid] :
       {std::pair{layout.root, shared}, std::pair{layout.run, shared},
        std::pair{layout.runtime, user.gid}, std::pair{layout.lock_file, user.gid}}) {
    auto info = env.fs->Stat(path);
    if (!info.ok()) continue;
    if (info->uid == user.uid && info->gid == gid) continue;
    SKYDB_RETURN_IF_ERROR(env.host->Chown(path, user.uid, gid));
  }
  return Ok();
}

// initdb made DIR/pgdata as the service user; one that another user owns is not its cluster, and
// the dropped daemon could not even look inside it.
Status CheckClusterOwner(Env& env, const supervisor::DataDirLayout& layout, const RunAs& user) {
  auto info = env.fs->Stat(layout.pgdata);
  if (!info.ok() || info->uid == user.uid) return Ok();
  return Error::Permission(layout.pgdata + " belongs to uid " + std::to_string(info->uid) +
                           ", not to the service user " + user.name + ", so it is not this " +
                           "service's cluster: choose another --data-dir, or, if it is, chown -R " +
                           user.name + " " + layout.pgdata);
}

}  // namespace

Status DropRootForGood(Env& env, const Config& config) {
  if (env.host->EffectiveUid() != 0) return Ok();
  SKYDB_ASSIGN_OR_RETURN(ClusterUser owner,
                         ResolveClusterUser(0, config.run_as_user, LookupUserByUid, LookupUser));
  const RunAs& user = owner.user;
  auto layout = supervisor::DataDirLayout::For(AbsolutePath(config.data_dir));
  SKYDB_ASSIGN_OR_RETURN(auto app_group, ResolveAppGroup(config, user.name));
  supervisor::RunDirAccess access{app_group};
  SKYDB_RETURN_IF_ERROR(supervisor::CheckReachable(*env.fs, layout.root, owner));
  SKYDB_RETURN_IF_ERROR(supervisor::PrepareRoot(*env.fs, layout.root, access.root_mode()));
  SKYDB_RETURN_IF_ERROR(CheckClusterOwner(env, layout, user));
  SKYDB_RETURN_IF_ERROR(HandOver(env, layout, user, access));
  // The socket groups are kept so the dropped daemon can still give its sockets (and DIR/run)
  // to them.
  auto groups = GroupsToKeep(
      user, {config.resp.socket_group, config.http.socket_group, app_group ? app_group->name : ""});
  if (!groups.ok()) {
    return Error::InvalidArgument(groups.error().message +
                                  ": check resp.socket_group, http.socket_group and app.group");
  }
  SKYDB_RETURN_IF_ERROR(env.host->DropPrivileges(user, *groups));
  ::setenv("HOME", user.home.c_str(), 1);
  ::setenv("USER", user.name.c_str(), 1);
  ::setenv("LOGNAME", user.name.c_str(), 1);
  spdlog::info("running as {} (uid {}) from here on; root prepared {} and was dropped", user.name,
               user.uid, layout.root);
  return Ok();
}

}  // namespace skydb::daemon
