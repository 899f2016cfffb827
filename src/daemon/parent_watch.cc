#include "daemon/parent_watch.h"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace skydb::daemon {
namespace {

// The ppid field of /proc/PID/stat; 0 when unreadable. The command name, field 2, may hold
// spaces and parentheses, so the fields are counted after its last ')'.
pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto close = text.rfind(')');
  if (close == std::string::npos || close + 4 > text.size()) return 0;
  // ") S 1234 ...": state, then the ppid.
  return static_cast<pid_t>(std::strtol(text.c_str() + close + 4, nullptr, 10));
}

bool Readable(int fd) {
  struct pollfd p {
    fd, POLLIN, 0
  };
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

Error Gone(pid_t parent) {
  return Error::NotFound("the parent (pid " + std::to_string(parent) +
                         ") is already gone: it is not skydb's parent or an ancestor any more");
}

}  // namespace

bool IsAncestor(pid_t pid) {
  pid_t at = ::getppid();
  // Bounded: a chain longer than this is no process tree a parent starts skydb through.
  for (int hops = 0; at > 0 && hops < 64; ++hops) {
    if (at == pid) return true;
    if (at == 1) return false;
    at = ParentOf(at);
  }
  return false;
}

Result<std::unique_ptr<ParentWatch>> ParentWatch::Open(pid_t parent) {
  pid_t pid = parent > 0 ? parent : ::getppid();
  // The pidfd first: if `pid` is an ancestor after it was taken, the pidfd names that process.
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0 && errno != ENOSYS && errno != EPERM) return Gone(pid);
  if (!IsAncestor(pid) || (fd >= 0 && Readable(fd))) {
    if (fd >= 0) ::close(fd);
    return Gone(pid);
  }
  return std::unique_ptr<ParentWatch>(new ParentWatch(pid, fd));
}

ParentWatch::~ParentWatch() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool ParentWatch::Start() {
  if (pidfd_ < 0) {
    // Cleared by a credential change, so armed only now, after the root drop.
    spdlog::info(
        "--exit-with-parent: no pidfd_open(2) here; PR_SET_PDEATHSIG instead, which "
        "follows the parent's thread that started skydb");
    return ::prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && IsAncestor(parent_);
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) return false;
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void ParentWatch::Loop() {
  struct pollfd fds[2] = {{pidfd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) break;
  }
  spdlog::info("--exit-with-parent: the parent (pid {}) exited; stopping", parent_);
  ::kill(::getpid(), SIGTERM);
}

}  // namespace skydb::daemon
