#include "daemon/cluster_task.h"

#include "daemon/database_source.h"
#include "daemon/privileges.h"
#include "daemon/run_dir.h"
#include "skydb/data_dir_layout.h"

namespace skydb::daemon {

Status RunOnStoppedCluster(Env& env, const Config& config,
                           const std::function<Status(const ClusterSession&)>& work) {
  Config absolute = config;
  absolute.data_dir = AbsolutePath(config.data_dir);
  SKYDB_RETURN_IF_ERROR(DropRootForGood(env, absolute));
  SKYDB_RETURN_IF_ERROR(PrepareRunDir(env, absolute));
  const DataDirLayout layout = DataDirLayout::For(absolute.data_dir);
  SKYDB_ASSIGN_OR_RETURN(auto lock, env.host->LockExclusive(layout.lock_file));
  SKYDB_ASSIGN_OR_RETURN(RunAs self, LookupUserByUid(env.host->EffectiveUid()));
  auto source = NewEmbeddedCluster(env, absolute, Profile::kEmbedded);
  SKYDB_RETURN_IF_ERROR(source->Prepare());
  Status result = Error::Unavailable("PostgreSQL stopped before it was ready");
  bool ran_work = false;
  Status ran = source->Run([&](const DatabaseReady& ready) {
    if (ran_work) return;  // ready again after a crash: the work ran once
    ran_work = true;
    result = work({ready.conninfo, layout.pgdata, self.name});
    source->RequestStop();
  });
  if (!ran.ok()) return std::move(ran).error();
  return result;
}

}  // namespace skydb::daemon
