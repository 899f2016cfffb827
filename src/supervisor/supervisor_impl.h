// The Supervisor's implementation, split across supervisor_prepare.cc (DIR, initdb, config
// files, leftovers) and supervisor_run.cc (start, readiness, watch, restart, stop, reload).
// Internal to src/supervisor; see skydb/supervisor.h for the contract.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "skydb/mutex.h"
#include "skydb/supervisor.h"
#include "supervisor/conf_render.h"
#include "supervisor/data_dir.h"
#include "supervisor/postmaster_pid.h"
#include "supervisor/restart_policy.h"

namespace skydb::supervisor {

class SupervisorImpl final : public Supervisor {
 public:
  SupervisorImpl(SupervisorOptions options, SupervisorEnv env);
  ~SupervisorImpl() override;

  Status Run() override;
  void RequestStop() override;
  void RequestReload(SupervisorReload reload) override;
  SupervisorSnapshot Snapshot() const override;
  std::string SocketDir() const override { return layout_.run; }
  std::string ConnInfo() const override;

 private:
  // How one start attempt ended when it did not fail outright.
  enum class StartOutcome { kReady, kExited, kStopRequested };

  // supervisor_prepare.cc
  Status Prepare();
  Status EnsureDataDir();
  Status EnsureCluster();
  Status RunInitdb();
  Status StopLeftover();
  Status StopOurLeftover(const LeftoverCheck& check);
  Status MovePidFileAside(const LeftoverCheck& check);
  Status WaitForPidGone(pid_t pid, std::chrono::milliseconds timeout);
  Status WriteSettingsFiles();     // skydb.conf and its include line
  Status WriteStartAccessFiles();  // pg_hba.conf and pg_ident.conf for the configured app
  Status CopyTlsFiles(const TcpListen& tcp);  // postgres.tcp_bind's certificate and key
  Status CheckConfigFiles();  // PostgreSQL's own check of what its next start would read
  Status WriteOwnedFile(const std::string& path, const std::string& contents);

  // supervisor_run.cc
  Status Supervise();
  Result<StartOutcome> StartOnce();
  Result<StartOutcome> WaitReady();
  PgProbe::Ping PingQuietly(const std::string& conninfo);
  Status Migrate();  // the version, the migrations, the app's role and database
  // After a failed Migrate: true once the postmaster exited (waited for while the server no
  // longer answers, up to stop_timeout); false while it answers, so the failure was the step's.
  bool LostDuringPreparation();
  bool Watch();  // true when the postmaster exited, false when a stop was requested
  Status OnUnexpectedExit();
  Status StopPostmaster();
  void ApplyPendingReload();
  bool ChildExited();
  bool SleepUnlessStopped(Clock::Duration d);
  void SetState(SupervisorState s, const std::string& detail = "");
  void WriteStatusFile(const std::string& error = "");
  void CapturePostgresLine(std::string_view line);
  std::string RecentPostgresLog() const;

  SupervisorOptions options_;
  SupervisorEnv env_;
  DataDirLayout layout_;
  RestartPolicy policy_;
  std::unique_ptr<ChildProcess> child_;
  std::atomic<bool> stop_requested_{false};

  mutable Mutex mu_;  // read by Snapshot from other threads
  SupervisorSnapshot snap_ GUARDED_BY(mu_);
  std::optional<SupervisorReload> pending_reload_ GUARDED_BY(mu_);
  std::deque<std::string> recent_log_
      GUARDED_BY(mu_);  // PostgreSQL's last stderr lines, for failure reasons
  std::atomic<bool> out_of_space_since_start_{false};  // a line said "No space left on device"
};

}  // namespace skydb::supervisor
