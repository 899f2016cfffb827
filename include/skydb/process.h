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

}  // namespace skydb
