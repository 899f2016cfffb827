// The operating system behind injected objects: files, time and child processes.
//
// Every part of skydb that touches the OS does so through these interfaces, so the logic above
// them (host facts, binary discovery, the supervisor's state machine) is unit-tested with fakes
// (tests/support) and proved against the real OS in integration tests.
//
// Thread-safety: the real implementations returned by the factories are safe for concurrent use.
// Ownership: factories return owning pointers; callers hold them for the life of the process.
// Failure: every fallible call returns a Result whose message names the path or command.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skydb/result.h"

namespace skydb {

enum class FileType { kRegular, kDirectory, kSymlink, kOther };

struct FileInfo {
  FileType type = FileType::kOther;
  uint32_t mode = 0;  // permission bits only (07777)
  uid_t uid = 0;
  gid_t gid = 0;
  uint64_t size = 0;
};

// Files and directories. Paths are absolute or relative to the process's working directory.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::string> ReadFile(const std::string& path) const = 0;
  // Follows symlinks; NotFound when nothing is there.
  virtual Result<FileInfo> Stat(const std::string& path) const = 0;
  // Entry names (not paths), sorted, without "." and "..".
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) const = 0;
  // A regular file the current process may execute.
  virtual bool IsExecutable(const std::string& path) const = 0;
  // Canonical absolute path with symlinks resolved.
  virtual Result<std::string> RealPath(const std::string& path) const = 0;
  // Writes to a temporary file beside `path` (an unpredictable name, created O_EXCL and
  // O_NOFOLLOW relative to the directory: a planted link is never followed), fsyncs it and
  // renames it into place.
  virtual Status WriteFileAtomic(const std::string& path, const std::string& contents,
                                 uint32_t mode) = 0;
  // Creates one directory (not its parents); Conflict if something is already there.
  virtual Status MakeDir(const std::string& path, uint32_t mode) = 0;
  // Sets the permission bits (07777) of what `path` names, following symlinks.
  virtual Status Chmod(const std::string& path, uint32_t mode) = 0;
  // rename(2): atomically replaces `to`; both on one file system.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;

  bool Exists(const std::string& path) const { return Stat(path).ok(); }
  bool IsDirectory(const std::string& path) const {
    auto info = Stat(path);
    return info.ok() && info->type == FileType::kDirectory;
  }
};

std::unique_ptr<FileSystem> NewRealFileSystem();

// Monotonic time for timeouts and backoff; wall time only for display.
class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // Now() to within a scheduler tick (a few ms), cheaper to read: for stamps that need no more
  // (a cached entry's last access).
  virtual TimePoint CoarseNow() const { return Now(); }
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
  virtual void SleepFor(Duration d) = 0;
};

std::unique_ptr<Clock> NewRealClock();

// A user to run a child as (privilege drop in the child, after fork, before exec).
struct RunAs {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

// The OS user that owns pgdata and runs PostgreSQL (its superuser role name too), or the one
// `skydb run`'s app runs as.
struct ClusterUser {
  RunAs user;
  bool drop_privileges = false;  // true when skydb runs as root and must switch to `user`
};

// Looks a user up in the password database; NotFound names the user.
Result<RunAs> LookupUser(const std::string& name);

// A group, by name and gid.
struct NamedGroup {
  std::string name;
  gid_t gid = 0;
  bool operator==(const NamedGroup&) const = default;
};
// Looks a group up by name, or by gid; NotFound names it.
Result<NamedGroup> LookupGroup(const std::string& name);
Result<NamedGroup> LookupGroupByGid(gid_t gid);

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path; no shell is involved
  // Extra variables on top of the parent's environment; a value of nullopt removes one.
  std::map<std::string, std::optional<std::string>> env;
  std::optional<RunAs> run_as;
  std::string working_dir;  // empty: inherit
  std::chrono::milliseconds timeout{30000};
};

struct CommandOutput {
  int exit_code = -1;  // -1 when killed by a signal
  int term_signal = 0;
  std::string out;
  std::string err;
};

// Ok when root may execute `program`: the file and every directory the kernel passes through
// to reach it (symlinks' targets included) belong to root and are writable by neither group
// nor others, so no other user can choose what runs. Permission names the first place that
// fails (the caller adds what to do). The real ProcessRunner and ChildLauncher apply it to every
// program they would execute as root (no run_as, or run_as root); a path that does not exist is Ok
// (exec then fails with its own error).
Status CheckRootMayExecute(const std::string& program);

// Runs short commands to completion (postgres --version, pg_config, initdb). The real one
// refuses, as root, what CheckRootMayExecute refuses.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Fails only if the command could not be started or ran past its timeout (then it is killed);
  // a non-zero exit is reported in CommandOutput, not as an error.
  virtual Result<CommandOutput> Run(const CommandSpec& spec) = 0;
};

std::unique_ptr<ProcessRunner> NewRealProcessRunner();

// Process-level facts the host-facts reader cannot get from files.
int SchedAffinityCpuCount();  // CPUs in this process's affinity mask; 0 if unknown

class AppLauncherForker;  // skydb/process.h
class BundleOutput;       // skydb/bundle.h
class ChildLauncher;      // skydb/process.h
class PgProbe;            // skydb/supervisor.h

// OS calls the FileSystem seam does not cover. Real implementation: NewRealHostOps().
class HostOps {
 public:
  virtual ~HostOps() = default;
  virtual pid_t SelfPid() const = 0;
  virtual Status Chown(const std::string& path, uid_t uid, gid_t gid) = 0;
  // Takes an exclusive flock on `path` (created 0600 if missing) and writes our pid into it.
  // Conflict naming the holder's pid when another process holds it. Released on destruction.
  virtual Result<std::shared_ptr<void>> LockExclusive(const std::string& path) = 0;
  virtual bool ProcessExists(pid_t pid) = 0;
  virtual Status Kill(pid_t pid, int sig) = 0;
  virtual long ClockTicksPerSecond() const = 0;
  virtual uid_t EffectiveUid() const = 0;
  // Gives up root for good: supplementary groups `user.gid` and `groups`, then the gid, then the
  // uid; fails (Permission) if root could be regained afterwards. Applies to every thread.
  virtual Status DropPrivileges(const RunAs& user, const std::vector<gid_t>& groups) = 0;
};
std::unique_ptr<HostOps> NewRealHostOps();
// Looks a user up by uid in the password database (LookupUser in env.h goes by name).
Result<RunAs> LookupUserByUid(uid_t uid);
// The groups `user` is a member of in the group database, plus each group named in `extra`
// (NotFound naming a group that does not exist); the set a dropped daemon keeps.
Result<std::vector<gid_t>> GroupsToKeep(const RunAs& user, const std::vector<std::string>& extra);

// Whether a lock file is held, and by which pid (from its contents), without holding it.
struct LockProbe {
  bool held = false;
  pid_t holder = 0;  // 0 when unknown
};
Result<LockProbe> ProbeDirLock(const std::string& lock_file);

// systemd's service protocol, one message at a time (ServiceNotifier, in skydb/notify.h,
// decides what to say and when).
class Notifier {
 public:
  virtual ~Notifier() = default;
  // One sd_notify message: newline-separated VAR=value assignments.
  virtual void Send(const std::string& message) = 0;
  // WatchdogSec as systemd passed it (WATCHDOG_USEC for this pid); nullopt when off.
  virtual std::optional<std::chrono::microseconds> WatchdogTimeout() const = 0;
  // CLOCK_MONOTONIC now, in microseconds (for MONOTONIC_USEC).
  virtual uint64_t MonotonicUsec() const = 0;
};

// libsystemd's sd_notify and sd_watchdog_enabled; sends nothing when NOTIFY_SOCKET is unset.
std::unique_ptr<Notifier> NewSystemdNotifier();

// Every seam to the operating system, built once for the process (src/env/real_env.h, from
// main.cc or the embedding API) and passed down; tests build one of fakes. The objects are
// borrowed: whoever builds the Env keeps them alive longer than anything that holds it.
struct Env {
  FileSystem* fs = nullptr;
  Clock* clock = nullptr;
  ProcessRunner* runner = nullptr;             // short commands: initdb, postgres --version
  ChildLauncher* launcher = nullptr;           // the postmaster
  HostOps* host = nullptr;                     // chown, flock, kill, privileges
  Notifier* notifier = nullptr;                // systemd's sd_notify
  PgProbe* pg = nullptr;                       // PQping, migrations, the server's version
  BundleOutput* bundle_output = nullptr;       // writes extracted PostgreSQL bundles
  AppLauncherForker* app_launchers = nullptr;  // `skydb run`: the app's launcher process
};

}  // namespace skydb
