// The app's launcher: a small process, forked by RunDaemon before root is dropped (and before
// any thread exists), that becomes the app's user for good and is the app's parent. The daemon
// drops root before PostgreSQL starts, so it could neither start the app as another user nor
// signal it; the launcher does both on its behalf, over a socketpair (daemon/app_protocol.h):
//
//   daemon: start ARGV ENV / signal N      launcher: started PID / exec-failed / exited STATUS
//
// The app runs in its own process group (a terminal's Ctrl-C reaches skydb, which stops it in
// order), with stdin /dev/null and stdout+stderr into one pipe whose read end the daemon keeps
// (output_fd), and with PR_SET_PDEATHSIG(SIGTERM) towards the launcher. The launcher dies with
// the daemon: EOF on the socketpair or its own parent-death signal (SIGUSR1, set after its
// credential change, which would clear it) → SIGTERM to the app, SIGKILL to its group after
// stop_timeout, exit; meanwhile the app's output goes to the launcher's stderr (nobody reads the
// pipe any more, and an app that logs while it stops must not block or die of SIGPIPE). Other
// signals (SIGTERM, SIGINT, SIGHUP to the process group) it ignores:
// they are the daemon's, which forwards them in order. Exec failure is reported through a
// close-on-exec pipe, so "started" means the app's program is running.
//
// Thread-safety: Send from any thread; Next from one thread (the app runner's).
// Ownership: the AppLauncher owns the socket and reaps the launcher in its destructor (which
// waits, bounded, for the launcher to stop the app).
// Failure: Fork fails with the reason; a launcher that could not become the user says so in its
// first report; Next fails once the launcher is gone.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/app_protocol.h"
#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/result.h"
#include "skydb/supervisor.h"

namespace skydb::daemon {

// Who the app runs as: app.user, else the service user (run_as_user). As root: that user, which
// must not be root (drop_privileges true). Not root: skydb's own user; an app.user naming
// someone else is refused, since only root can switch users.
Result<ClusterUser> ResolveAppUser(uid_t euid, const Config& config,
                                   const std::function<Result<RunAs>(uid_t)>& lookup_uid,
                                   const std::function<Result<RunAs>(const std::string&)>& lookup);

struct AppLauncherSetup {
  ClusterUser user;           // drop_privileges: become user.user with `groups`
  std::vector<gid_t> groups;  // supplementary groups (the user's, and app.group)
  std::chrono::milliseconds stop_timeout{10000};  // SIGTERM → SIGKILL when the daemon is gone
};

class AppLauncher {
 public:
  // Forks the launcher. Call before any thread exists (the launcher is single-threaded).
  static Result<std::unique_ptr<AppLauncher>> Fork(HostOps& host, const AppLauncherSetup& setup);
  ~AppLauncher();
  AppLauncher(const AppLauncher&) = delete;
  AppLauncher& operator=(const AppLauncher&) = delete;

  // The launcher's first report: it is the app's user now (or why it could not become it).
  Status AwaitReady(std::chrono::milliseconds timeout);
  Status Send(const AppRequest& request);
  // The next report within `timeout` (nullopt when none came); fails once the launcher is gone.
  Result<std::optional<AppReport>> Next(std::chrono::milliseconds timeout);
  // The read end of the app's output pipe; the caller takes it (once).
  int TakeOutput();
  pid_t pid() const { return pid_; }

 private:
  AppLauncher(pid_t pid, int socket, int output, std::chrono::milliseconds stop_timeout)
      : pid_(pid), socket_(socket), output_(output), stop_timeout_(stop_timeout) {}

  pid_t pid_;
  int socket_;
  int output_;
  std::chrono::milliseconds stop_timeout_;
  Mutex send_mu_;
  AppFrameDecoder decoder_;  // Next's thread only
};

}  // namespace skydb::daemon
