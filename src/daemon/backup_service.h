// The daemon's backups (docs/backup.md): a thread that takes a base backup whenever the newest
// one in backup.repository is backup.schedule old (one at a time: the thread runs them in turn,
// and the repository's lock keeps out a `skydb backup` run beside it), and that watches the
// archive_command's failure file, logging one WARNING with the reason when archiving starts
// failing and one line when it catches up.
//
// Thread-safety: Status() from any thread; Start/Stop from the daemon's main thread.
// Ownership: borrows the Env and the supervisor; they must outlive Stop().
// Failure: a failed backup is logged with its reason, counted, and retried after
// min(schedule, 10 min); it never stops the daemon or the cluster.
#pragma once

#include <memory>
#include <thread>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/obs.h"
#include "skydb/supervisor.h"

namespace skydb::daemon {

class BackupService {
 public:
  BackupService(const Config& config, Env& env, Supervisor& supervisor);
  ~BackupService();  // stops: a running pg_basebackup finishes first

  BackupStatus Status() const;

 private:
  void Loop();
  void WatchArchiver();
  void TakeScheduled();

  Config config_;
  Env& env_;
  Supervisor& supervisor_;
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  BackupStatus status_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace skydb::daemon
