// postmaster.pid: what PostgreSQL writes into its data directory while it runs, and how skydb
// decides whether the process it names is a postmaster left over from an earlier daemon.
//
// skydb never deletes postmaster.pid: a stale one is PostgreSQL's to handle at start, and a live
// one means a postmaster still owns the directory.
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
  kNotOurs,  // the pid runs, but it is not a postmaster of this directory (pid reused)
  kOurs,     // a live postmaster of this data directory: stop it before starting
};
const char* LeftoverVerdictName(LeftoverVerdict v);

struct LeftoverCheck {
  LeftoverVerdict verdict = LeftoverVerdict::kNone;
  pid_t pid = 0;
  std::string reason;  // why the verdict, for the log
};

// Reads DIR/pgdata/postmaster.pid and /proc/<pid>/{exe,cwd,stat} and /proc/stat (btime).
// A postmaster is ours when it is alive, its executable is named postgres, its working directory
// (a postmaster chdirs into its data directory) and the file's data dir are `pgdata`, and the
// file's start time agrees with the process start time from /proc.
LeftoverCheck IdentifyLeftover(const FileSystem& fs, HostOps& host, const std::string& pgdata);

// Process start time in epoch seconds from /proc/<pid>/stat and /proc/stat; 0 if unreadable.
int64_t ProcessStartEpoch(const FileSystem& fs, pid_t pid, long ticks_per_second);

}  // namespace skydb::supervisor
