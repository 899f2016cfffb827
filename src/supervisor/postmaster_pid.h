// postmaster.pid: what PostgreSQL writes into its data directory while it runs, and how skydb
// decides whether the process it names is a postmaster left over from an earlier daemon.
//
// skydb never deletes postmaster.pid. A file naming a dead pid is PostgreSQL's to handle at
// start; one naming a live postmaster of this directory means it still owns the directory. Only
// when /proc proves the live pid is no postmaster of this directory (kNotOurs: the pid was
// reused) does the supervisor move the file aside, since PostgreSQL itself would refuse to start
// while a process of its user has that pid.
// Thread-safety: pure functions over an injected FileSystem and HostOps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "skydb/env.h"
#include "skydb/supervisor.h"

namespace skydb::supervisor {

// The lines of postmaster.pid (PostgreSQL 10+): pid, data dir, start time (epoch seconds),
// port, socket dir, listen address, shared memory key, status ("ready", "starting", ...).
struct PostmasterPidFile {
  pid_t pid = 0;
  std::string data_dir;
  int64_t start_epoch = 0;
  int port = 0;
  std::string socket_dir;
  std::string status;  // may be empty (older servers, or written mid-start)
};
Result<PostmasterPidFile> ParsePostmasterPid(const std::string& text);

enum class LeftoverVerdict {
  kNone,     // no postmaster.pid
  kStale,    // the pid it names is not running
  kNotOurs,  // the pid runs, and /proc proves it is no postmaster of this directory (pid reused)
  kUnknown,  // the pid runs, and skydb cannot tell (its /proc is unreadable, or facts disagree)
  kOurs,     // a live postmaster of this data directory: stop it before starting
};
const char* LeftoverVerdictName(LeftoverVerdict v);

struct LeftoverCheck {
  LeftoverVerdict verdict = LeftoverVerdict::kNone;
  pid_t pid = 0;
  std::string reason;  // why the verdict, for the log
};

// Reads DIR/pgdata/postmaster.pid and /proc/<pid>/{exe,cmdline,cwd,stat} and /proc/stat (btime).
// A live pid is ours when its executable is named postgres (exe, or argv[0] when the binary was
// replaced since), its working directory is `pgdata` (a postmaster chdirs into its data
// directory and stays; the file's own data dir line is not trusted, the directory may have been
// renamed), and the file's start time agrees with the process's. It is not ours when its
// executable is readable and not postgres, its working directory is readable and elsewhere, or
// (with either unreadable) its start time disagrees with the file's. Anything else is kUnknown.
LeftoverCheck IdentifyLeftover(const FileSystem& fs, HostOps& host, const std::string& pgdata);

// Process start time in epoch seconds from /proc/<pid>/stat and /proc/stat; 0 if unreadable.
int64_t ProcessStartEpoch(const FileSystem& fs, pid_t pid, long ticks_per_second);

}  // namespace skydb::supervisor
