// The OS calls `skydb upgrade` needs beyond the Env: an atomic exchange of two directories,
// whether a file system clones, free and used space, removal and directory fsync.
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "skydb/upgrade.h"

namespace skydb {
namespace {

Status Exchange(const std::string& a, const std::string& b) {
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) {
    return ErrnoError("cannot exchange " + a + " and " + b, errno);
  }
  return Ok();
}

// Two files in `dir`, the second a clone of the first: what pg_upgrade --clone would do.
bool CanClone(const std::string& dir) {
  std::string a = dir + "/.clone-probe-a", b = dir + "/.clone-probe-b";
  int from = ::open(a.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int to = ::open(b.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool cloned = false;
  if (from >= 0 && to >= 0 && ::write(from, "x", 1) == 1) {
    cloned = ::ioctl(to, FICLONE, from) == 0;
  }
  if (from >= 0) ::close(from);
  if (to >= 0) ::close(to);
  ::unlink(a.c_str());
  ::unlink(b.c_str());
  return cloned;
}

Result<uint64_t> FreeBytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return ErrnoError("cannot statvfs " + dir, errno);
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

uint64_t TreeBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      total += static_cast<uint64_t>(st.st_size);
    }
  }
  return total;
}

Status RemoveTree(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return Error::Io("cannot remove " + dir + ": " + ec.message());
  return Ok();
}

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open " + dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? Ok() : ErrnoError("cannot fsync " + dir, err);
}

}  // namespace

UpgradeOs RealUpgradeOs() {
  return {Exchange, CanClone, FreeBytes, TreeBytes, RemoveTree, SyncDir};
}

}  // namespace skydb
