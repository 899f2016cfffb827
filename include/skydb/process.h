// Long-running child processes: the postmaster, which the supervisor spawns, watches and stops.
//
// ProcessRunner (env.h) runs short commands to completion; a ChildLauncher starts a process that
// outlives the call and hands back a ChildProcess to signal, reap and watch. The real launcher:
//   - drops privileges in the child (setgroups/setgid/setuid to spec.run_as) before exec;
//   - then sets PR_SET_PDEATHSIG (a credential change clears it, so it must come after the
//     drop) and re-checks getppid(): if the parent already died, the child exits at once, so
//     the child can never outlive a SIGKILLed parent as an orphan;
//   - puts the child in its own process group, so a terminal's Ctrl-C reaches only skydb, which
//     then stops PostgreSQL in order;
//   - resets the signal mask and dispositions the parent may have changed;
//   - removes NOTIFY_SOCKET from the environment (the readiness protocol is skydb's, not
//     PostgreSQL's) and marks every inherited descriptor above stderr close-on-exec;
//   - captures stderr through a pipe and hands it, line by line, to a sink on a reader thread.
//
// PR_SET_PDEATHSIG fires when the *thread* that forked exits, so Spawn must be called from a
// thread that lives as long as the child should (the supervisor's main loop thread).
//
// Thread-safety: a ChildLauncher may be shared. A ChildProcess is used by one thread (its owner);
// the stderr sink is called on the reader thread and must be thread-safe (spdlog is).
// Ownership: destroying a ChildProcess neither signals nor reaps the child; it stops the stderr
// reader (after draining what is already buffered).
// Failure: Spawn fails with the reason exec (or the privilege drop) failed in the child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path; no shell
  // Changes to the inherited environment (nullopt removes); NOTIFY_SOCKET is always removed.
  std::map<std::string, std::optional<std::string>> env;
  std::optional<RunAs> run_as;  // drop to this user in the child; nullopt: stay as we are
  std::string working_dir;      // empty: inherit
  int parent_death_signal = 0;  // delivered to the child when its parent thread dies; 0: none
};

// How a child ended.
struct ExitStatus {
  int exit_code = -1;   // -1 when killed by a signal
  int term_signal = 0;  // the signal that killed it, 0 if it exited
  // "exited with status 1", "killed by signal 9 (Killed)".
  std::string Describe() const;
};

// Receives one line of the child's stderr (without the newline).
using LineSink = std::function<void(std::string_view line)>;

class ChildProcess {
 public:
  virtual ~ChildProcess() = default;
  virtual pid_t pid() const = 0;
  // Sends `sig`; an error once the child has been reaped or if kill(2) fails.
  virtual Status Signal(int sig) = 0;
  // Reaps the child if it has exited; nullopt while it runs. Once reaped, returns the same.
  virtual std::optional<ExitStatus> TryWait() = 0;
  // Waits up to `timeout` for the child to exit; nullopt if it is still running.
  virtual std::optional<ExitStatus> WaitFor(std::chrono::milliseconds timeout) = 0;
  // Waits up to `timeout` until every process holding the stderr pipe closed it: for the
  // postmaster that means its backends are gone too (safe to start a new postmaster).
  virtual bool WaitOutputClosed(std::chrono::milliseconds timeout) = 0;
};

class ChildLauncher {
 public:
  virtual ~ChildLauncher() = default;
  virtual Result<std::unique_ptr<ChildProcess>> Spawn(const ChildSpec& spec,
                                                      LineSink stderr_sink) = 0;
};

std::unique_ptr<ChildLauncher> NewRealChildLauncher();

// ---- `skydb run`'s app launcher ---------------------------------------------------------------
//
// A small process, forked before root is dropped (and before any thread exists), that becomes
// the app's user for good and is the app's parent. The daemon drops root before PostgreSQL
// starts, so it could neither start the app as another user nor signal it; the launcher does
// both on its behalf, over a socketpair (src/os/app_protocol.h):
//
//   daemon: start ARGV ENV / signal N      launcher: started PID / exec-failed / exited STATUS
//
// The real one (src/os/app_launcher.cc) runs the app in its own process group (a terminal's
// Ctrl-C reaches skydb, which stops it in order), with stdin /dev/null and stdout+stderr into
// one pipe whose read end the daemon keeps (TakeOutput), and with PR_SET_PDEATHSIG(SIGTERM)
// towards the launcher. The launcher dies with the daemon: EOF on the socketpair or its own
// parent-death signal (SIGUSR1, set after its credential change, which would clear it) →
// SIGTERM to the app, SIGKILL to its group after stop_timeout, exit; meanwhile the app's output
// goes to the launcher's stderr (nobody reads the pipe any more, and an app that logs while it
// stops must not block or die of SIGPIPE). Other signals (SIGTERM, SIGINT, SIGHUP to the process
// group) it ignores: they are the daemon's, which forwards them in order. Exec failure is
// reported through a close-on-exec pipe, so "started" means the app's program is running.
//
// Thread-safety: Send from any thread; Next from one thread (the app runner's).
// Ownership: the AppLauncher owns the socket and reaps the launcher in its destructor (which
// waits, bounded, for the launcher to stop the app).
// Failure: Fork fails with the reason; a launcher that could not become the user says so in its
// first report (AwaitReady); Next fails once the launcher is gone.

struct AppRequest {
  enum class Kind { kStart, kSignal };
  Kind kind = Kind::kStart;
  std::vector<std::string> argv;  // kStart; argv[0] without a slash is looked up on PATH
  std::vector<std::string> env;   // kStart, NAME=value: the app's whole environment
  int signal = 0;                 // kSignal
};

struct AppReport {
  enum class Kind { kLauncherReady, kLauncherFailed, kStarted, kExecFailed, kExited };
  Kind kind = Kind::kStarted;
  std::string text;      // kLauncherReady: the user; kLauncherFailed, kExecFailed: the reason
  pid_t pid = 0;         // kStarted
  int error_number = 0;  // kExecFailed
  int exit_code = -1;    // kExited
  int term_signal = 0;   // kExited
};

struct AppLauncherSetup {
  ClusterUser user;           // drop_privileges: become user.user with `groups`
  std::vector<gid_t> groups;  // supplementary groups (the user's, and app.group)
  std::chrono::milliseconds stop_timeout{10000};  // SIGTERM → SIGKILL when the daemon is gone
};

class AppLauncher {
 public:
  virtual ~AppLauncher() = default;
  // The launcher's first report: it is the app's user now (or why it could not become it).
  virtual Status AwaitReady(std::chrono::milliseconds timeout) = 0;
  virtual Status Send(const AppRequest& request) = 0;
  // The next report within `timeout` (nullopt when none came); fails once the launcher is gone.
  virtual Result<std::optional<AppReport>> Next(std::chrono::milliseconds timeout) = 0;
  // The read end of the app's output pipe; the caller takes it (once); -1 after that.
  virtual int TakeOutput() = 0;
  virtual pid_t pid() const = 0;
};

// Forks launchers: the Env's seam (Env::app_launchers), so that what drives the app is tested
// with a fake and only src/os forks and signals.
class AppLauncherForker {
 public:
  virtual ~AppLauncherForker() = default;
  // Call before any thread exists (the launcher is single-threaded).
  virtual Result<std::unique_ptr<AppLauncher>> Fork(const AppLauncherSetup& setup) = 0;
};

// The real launcher; `host` drops the launcher's privileges (HostOps::DropPrivileges).
Result<std::unique_ptr<AppLauncher>> ForkRealAppLauncher(HostOps& host,
                                                         const AppLauncherSetup& setup);
// Forks real launchers; borrows `host`, which must outlive it.
std::unique_ptr<AppLauncherForker> NewRealAppLauncherForker(HostOps& host);

}  // namespace skydb
