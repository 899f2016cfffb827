// Runs real `skydb serve --embed` daemons against real PostgreSQL for integration tests.
// Every process a test starts is stopped by pid; nothing is killed by name.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "skydb/process.h"
#include "skydb/status_file.h"

namespace skydb::testing {

// The unprivileged user the cluster runs as when the tests run as root.
std::string TestUser();
// `args` with `--user TestUser()` appended when the tests run as root: a daemon started as
// root needs a service user in every mode, and drops to it.
std::vector<std::string> AsServiceUser(std::vector<std::string> args);

// A temporary directory the test user can traverse (0755), removed at the end.
class TestRoot {
 public:
  TestRoot();
  ~TestRoot();
  TestRoot(const TestRoot&) = delete;
  TestRoot& operator=(const TestRoot&) = delete;
  const std::string& path() const { return path_; }
  std::string Dir(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// One daemon process, its stderr collected.
class DaemonProcess {
 public:
  // Starts SKYDB_BINARY with `args`; `env` adds to (or with nullopt removes from) the
  // environment. SKYDB_CONFIG is cleared so the machine's config file does not leak in.
  // `wrapper` runs first and execs the daemon (same pid), e.g. {"/usr/bin/env",
  // "NOTIFY_SOCKET=..."} for a variable the child launcher strips from every child.
  DaemonProcess(const std::vector<std::string>& args,
                const std::map<std::string, std::optional<std::string>>& env = {},
                const std::vector<std::string>& wrapper = {});
  // The same for another program (an absolute path), e.g. a wrapper that execs skydb.
  DaemonProcess(const std::string& program, const std::vector<std::string>& args,
                const std::map<std::string, std::optional<std::string>>& env = {});
  ~DaemonProcess();  // SIGTERM, bounded wait, then SIGKILL of the daemon (its pid only)

  pid_t pid() const { return child_ ? child_->pid() : 0; }
  std::string Log() const;
  bool LogContains(const std::string& text) const { return Log().find(text) != std::string::npos; }
  // Polls the log until it contains `text`: a line logged after the socket or the status file
  // says ready reaches the collected log a moment later. False after `timeout`.
  bool WaitLogContains(const std::string& text, std::chrono::milliseconds timeout) const;
  // Waits for the daemon to exit; its status, or nullopt on timeout. Then up to 2 s for its
  // stderr to close, so that its last lines are in Log().
  std::optional<ExitStatus> WaitExit(std::chrono::milliseconds timeout);
  // The same without waiting for stderr, which children that outlive it may still hold.
  std::optional<ExitStatus> WaitProcessExit(std::chrono::milliseconds timeout);
  Status Signal(int sig) { return child_->Signal(sig); }
  // SIGTERM, then waits up to `timeout` for exit status 0; "" when that happened, otherwise
  // what happened instead, with the daemon's log.
  std::string StopCleanly(std::chrono::milliseconds timeout);

 private:
  std::unique_ptr<ChildProcess> child_;
  mutable std::mutex mu_;
  std::string log_;
};

// `skydb status --json` of `dir`, parsed; nullopt when there is no readable status file.
std::optional<supervisor::StatusRecord> ReadStatus(const std::string& dir);
// Polls until the status file says "ready" with at least `min_restarts`, written by daemon
// `daemon_pid` (0: any); false on timeout.
bool WaitReady(const std::string& dir, std::chrono::milliseconds timeout, int min_restarts = 0,
               pid_t daemon_pid = 0);
// Pids of processes whose working directory is `pgdata` (a postmaster and its children).
std::vector<pid_t> PostgresProcessesOf(const std::string& pgdata);
// Runs `skydb psql --data-dir dir -Atc sql`; stdout trimmed, or "ERROR: ..." on failure.
std::string Psql(const std::string& dir, const std::string& sql);
// The same as TestUser(): root runs no psql from a place that user can write (an extracted
// bundle under DIR/runtime).
std::string PsqlAsTestUser(const std::string& dir, const std::string& sql);
// Every regular file under `dir` with size and mtime: a fingerprint to prove it was untouched.
std::string Fingerprint(const std::string& dir);

// `skydb --set supervisor.backoff_initial=100ms [--set S]... serve --embed --data-dir DIR
// --user TestUser()`.
std::unique_ptr<DaemonProcess> StartEmbedded(
    const std::string& dir, const std::vector<std::string>& sets = {},
    const std::map<std::string, std::optional<std::string>>& env = {});
// Waits (up to `timeout`) until daemon `d` reports ready in DIR's status file; false if it
// exited or the time passed.
bool WaitDaemonReady(DaemonProcess& d, const std::string& dir, std::chrono::seconds timeout);
// The daemon's store socket in DIR.
inline std::string StoreSocket(const std::string& dir) { return dir + "/run/skydb.sock"; }
// redis-cli against a store socket; stdout trimmed, or "ERROR: ..." when it could not run.
std::string RedisCli(const std::string& socket, const std::vector<std::string>& args);
// Polls PING until PONG; false after `timeout`.
bool WaitForPong(const std::string& socket, std::chrono::seconds timeout);
// A loopback TCP port nothing listens on right now (bound, read, released).
int FreePort();
// Runs `argv` as `user` (stdin closed, 30 s at most, PGCONNECT_TIMEOUT=5); `env` adds to (or with
// nullopt removes from) its environment. A process that cannot start: exit -1, the reason in err.
CommandOutput RunAsUser(const RunAs& user, std::vector<std::string> argv,
                        std::map<std::string, std::optional<std::string>> env = {});
// stdout and stderr together.
inline std::string Text(const CommandOutput& out) { return out.out + out.err; }

}  // namespace skydb::testing
