// The daemon's backups (docs/backup.md): a thread that takes a base backup whenever the newest
// one in backup.repository is backup.schedule old (one at a time: the thread runs them in turn,
// and the repository's lock keeps out a `skydb backup` run beside it), and that watches the
// archive_command's failure file, logging one WARNING with the reason when archiving starts
// failing and one line when it catches up.
//
// Thread-safety: Status() and SetPolicy() from any thread; construction and destruction from the
// daemon's main thread; Tick() only when the service runs no thread of its own (tick 0).
// Ownership: borrows the Env; it and whatever the BackupCluster calls must outlive the service.
// Failure: a failed backup is logged with its reason, counted, and retried after
// min(schedule, 10 min); it never stops the daemon or the cluster.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "skydb/backup.h"
#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/obs.h"
#include "skydb/supervisor.h"

namespace skydb::daemon {

// What the service needs of the cluster: the supervisor in the daemon, lambdas in tests.
struct BackupCluster {
  std::function<bool()> ready;              // no backup is attempted while this is false
  std::function<std::string()> socket_dir;  // pg_basebackup connects there
};
BackupCluster BackupClusterOf(Supervisor& supervisor);

inline constexpr std::chrono::milliseconds kBackupTick{1000};

class BackupService {
 public:
  // `tick` 0: no thread; the owner calls Tick() (tests drive it with a fake clock).
  BackupService(const Config& config, Env& env, BackupCluster cluster,
                std::chrono::milliseconds tick = kBackupTick);
  ~BackupService();  // stops: a running pg_basebackup finishes first

  BackupStatus Status() const;
  // SIGHUP: the new schedule, retention and compression apply from the next tick; the
  // repository stays.
  void SetPolicy(const BackupConfig& fresh);
  // One round: report the archiver's state, then take a backup if one is due.
  void Tick();

 private:
  void Loop();
  void WatchArchiver();
  Result<BackupTarget> TargetFor(const BackupConfig& policy) const;
  void TakeScheduled(const BackupConfig& policy);

  const Config config_;
  Env& env_;
  const BackupCluster cluster_;
  const std::chrono::milliseconds tick_;
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  BackupConfig policy_ GUARDED_BY(mu_);  // the config's schedule and retention, then SetPolicy's
  // When the last scheduled backup failed: the next try waits min(schedule, 10 min) from it.
  std::optional<std::chrono::system_clock::time_point> failed_at_ GUARDED_BY(mu_);
  BackupStatus status_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace skydb::daemon
