// Real HostOps (chown, flock, kill, the privilege drop) and the lock probe `skydb status`
// uses.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/strings.h"
#include "skydb/env.h"

namespace skydb {
namespace {

pid_t ReadPidFrom(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? static_cast<pid_t>(std::atoi(buf)) : 0;
}

// Holds the lock for as long as it lives; the descriptor is close-on-exec so that PostgreSQL
// never inherits it (a leftover postmaster must not keep a new daemon out).
struct HeldLock {
  int fd = -1;
  ~HeldLock() {
    if (fd >= 0) ::close(fd);
  }
};

class RealHostOps final : public HostOps {
 public:
  pid_t SelfPid() const override { return ::getpid(); }

  Status Chown(const std::string& path, uid_t uid, gid_t gid) override {
    if (::lchown(path.c_str(), uid, gid) != 0) return ErrnoError("cannot chown " + path, errno);
    return Ok();
  }

  Result<std::shared_ptr<void>> LockExclusive(const std::string& path) override {
    auto lock = std::make_shared<HeldLock>();
    lock->fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock->fd < 0) return ErrnoError("cannot open " + path, errno);
    if (::flock(lock->fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) return ErrnoError("cannot lock " + path, errno);
      pid_t holder = ReadPidFrom(lock->fd);
      return Error::Conflict("another skydb (pid " + std::to_string(holder) +
                             ") is already running on this data directory (it holds " + path + ")");
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(lock->fd, 0) != 0 ||
        ::pwrite(lock->fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      return ErrnoError("cannot write our pid into " + path, errno);
    }
    return std::shared_ptr<void>(lock);
  }

  bool ProcessExists(pid_t pid) override {
    if (pid <= 0) return false;
    if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
    // A zombie still answers kill(0) until its parent reaps it; it no longer runs.
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z') {
      return false;
    }
    return true;
  }

  Status Kill(pid_t pid, int sig) override {
    if (::kill(pid, sig) != 0) return ErrnoError("kill " + std::to_string(pid), errno);
    return Ok();
  }

  long ClockTicksPerSecond() const override { return ::sysconf(_SC_CLK_TCK); }

  uid_t EffectiveUid() const override { return ::geteuid(); }

  Status DropPrivileges(const RunAs& user, const std::vector<gid_t>& groups) override {
    std::vector<gid_t> all = {user.gid};
    all.insert(all.end(), groups.begin(), groups.end());
    // glibc applies each of these to every thread of the process.
    if (::setgroups(all.size(), all.data()) != 0) return ErrnoError("setgroups", errno);
    if (::setgid(user.gid) != 0) return ErrnoError("setgid " + std::to_string(user.gid), errno);
    if (::setuid(user.uid) != 0) return ErrnoError("setuid " + std::to_string(user.uid), errno);
    if (::setuid(0) == 0 || ::geteuid() == 0) {
      return Error::Permission("dropping root to " + user.name +
                               " failed: root could be "
                               "regained afterwards");
    }
    // A process that changed its uid is not dumpable, which makes its /proc files root's; it
    // reads its own (memory figures) and its children's, so it must stay dumpable.
    (void)::prctl(PR_SET_DUMPABLE, 1);
    return Ok();
  }
};

Result<RunAs> FromPasswd(const struct passwd& pw) {
  return RunAs{pw.pw_name, pw.pw_uid, pw.pw_gid, pw.pw_dir != nullptr ? pw.pw_dir : ""};
}

}  // namespace

std::unique_ptr<HostOps> NewRealHostOps() { return std::make_unique<RealHostOps>(); }

Result<LockProbe> ProbeDirLock(const std::string& lock_file) {
  int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return LockProbe{};
    return ErrnoError("cannot open " + lock_file, errno);
  }
  LockProbe probe;
  probe.holder = ReadPidFrom(fd);
  // A shared lock conflicts with the daemon's exclusive one; taken and dropped at once.
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    probe.held = errno == EWOULDBLOCK;
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return probe;
}

Result<RunAs> LookupUserByUid(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  int rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
  if (rc != 0) return ErrnoError("cannot look up uid " + std::to_string(uid), rc);
  if (found == nullptr) return Error::NotFound("uid " + std::to_string(uid) + " has no user");
  return FromPasswd(pw);
}

Result<std::vector<gid_t>> GroupsToKeep(const RunAs& user, const std::vector<std::string>& extra) {
  int count = 64;
  std::vector<gid_t> groups(count);
  while (::getgrouplist(user.name.c_str(), user.gid, groups.data(), &count) < 0) {
    if (count <= static_cast<int>(groups.size())) count = static_cast<int>(groups.size()) * 2;
    groups.resize(count);
  }
  groups.resize(count);
  for (const std::string& name : extra) {
    if (name.empty()) continue;
    std::vector<char> buffer(16384);
    struct group entry {};
    struct group* found = nullptr;
    if (::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
        found == nullptr) {
      return Error::NotFound("group '" + name + "' does not exist");
    }
    groups.push_back(found->gr_gid);
  }
  return groups;
}

}  // namespace skydb
