// Child mode's `--exit-with-parent`: the process that started skydb is watched, and its exit
// becomes a SIGTERM to skydb (the ordinary ordered stop: drain, PostgreSQL fast shutdown).
//
// The parent is named by the pid it passes (`--parent-pid N` or SKYDB_PARENT_PID), which
// cannot be read wrong however early it died; without one it is getppid() as RunDaemon
// starts, which is already init's (or a subreaper's) pid when the parent died before skydb
// got there. Open() takes a pidfd on that pid first, then checks that the process is still
// skydb's parent or an ancestor (e.g. across sudo): if it is, the pidfd names it, so its
// exit, even before Start(), cannot be missed. A pidfd follows the process, not the thread
// that forked skydb, so any thread of a multi-threaded parent may start skydb
// (PR_SET_PDEATHSIG follows the forking thread and is cleared by the root drop; it is the
// fallback only where pidfd_open(2) is missing, armed by Start()).
//
// Thread-safety: Open and Start on the main thread; the destructor stops the watching thread.
// Failure: Open fails (NotFound) with one sentence when the parent is already gone.
#pragma once

#include <sys/types.h>

#include <memory>
#include <thread>

#include "skydb/result.h"

namespace skydb::daemon {

class ParentWatch {
 public:
  // `parent`: the pid the parent passed; 0 = getppid().
  static Result<std::unique_ptr<ParentWatch>> Open(pid_t parent);
  ~ParentWatch();
  ParentWatch(const ParentWatch&) = delete;
  ParentWatch& operator=(const ParentWatch&) = delete;

  pid_t parent() const { return parent_; }
  // Starts watching (after the root drop): the parent's exit raises SIGTERM in this process.
  // False when neither a pidfd nor PR_SET_PDEATHSIG could be armed, or the parent just left.
  bool Start();

 private:
  ParentWatch(pid_t parent, int pidfd) : parent_(parent), pidfd_(pidfd) {}
  void Loop();

  pid_t parent_;
  int pidfd_;         // -1: no pidfd_open(2) on this kernel; PR_SET_PDEATHSIG instead
  int wake_fd_ = -1;  // an eventfd the destructor writes to end the thread
  std::thread thread_;
};

// Whether `pid` is this process's parent or one of that parent's ancestors (/proc/PID/stat).
bool IsAncestor(pid_t pid);

}  // namespace skydb::daemon
