// FileSystem over POSIX calls.
#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "skydb/env.h"

namespace skydb {
namespace {

Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write " + path, errno);
    }
    done += static_cast<size_t>(n);
  }
  return Ok();
}

std::string DirName(const std::string& path) {
  auto pos = path.rfind('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

// 16 hex digits from the kernel's random source (getrandom), for names no one can guess.
std::string RandomSuffix() {
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits)) {
    bits = static_cast<uint64_t>(::getpid()) * 0x9e3779b97f4a7c15ULL ^
           static_cast<uint64_t>(::time(nullptr));
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(bits));
  return out;
}

class RealFileSystem final : public FileSystem {
 public:
  Result<std::string> ReadFile(const std::string& path) const override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot open " + path, errno);
    std::string out;
    char buf[65536];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        return ErrnoError("cannot read " + path, err);
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }

  Result<FileInfo> Stat(const std::string& path) const override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ErrnoError("cannot stat " + path, errno);
    FileInfo info;
    if (S_ISREG(st.st_mode)) {
      info.type = FileType::kRegular;
    } else if (S_ISDIR(st.st_mode)) {
      info.type = FileType::kDirectory;
    } else if (S_ISLNK(st.st_mode)) {
      info.type = FileType::kSymlink;
    }
    info.mode = st.st_mode & 07777;
    info.uid = st.st_uid;
    info.gid = st.st_gid;
    info.size = static_cast<uint64_t>(st.st_size);
    return info;
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) const override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return ErrnoError("cannot list " + path, errno);
    std::vector<std::string> names;
    while (struct dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }

  bool IsExecutable(const std::string& path) const override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), X_OK) == 0;
  }

  Result<std::string> RealPath(const std::string& path) const override {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) {
      return ErrnoError("cannot resolve " + path, errno);
    }
    return std::string(buf);
  }

  // The temporary file is created relative to a descriptor of the directory, with a name no
  // other user can predict, O_EXCL and O_NOFOLLOW: a link planted in the directory is never
  // followed and never overwritten; only the final rename replaces the target's entry.
  Status WriteFileAtomic(const std::string& path, const std::string& contents,
                         uint32_t mode) override {
    std::string dir = DirName(path);
    std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return ErrnoError("cannot open " + dir, errno);
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
      tmp = "." + name + ".tmp." + RandomSuffix();
      fd = ::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    mode & 0777);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
      Status failed = ErrnoError("cannot create a temporary file in " + dir, errno);
      ::close(dir_fd);
      return failed;
    }
    Status written = WriteAll(fd, contents, dir + "/" + tmp);
    if (written.ok() && ::fchmod(fd, mode) != 0) written = ErrnoError("cannot chmod " + tmp, errno);
    if (written.ok() && ::fsync(fd) != 0) written = ErrnoError("cannot fsync " + tmp, errno);
    ::close(fd);
    if (written.ok() && ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
      written = ErrnoError("cannot rename " + tmp + " to " + path, errno);
    }
    if (!written.ok()) {
      ::unlinkat(dir_fd, tmp.c_str(), 0);
      ::close(dir_fd);
      return written;
    }
    ::fsync(dir_fd);
    ::close(dir_fd);
    return Ok();
  }

  Status MakeDir(const std::string& path, uint32_t mode) override {
    if (::mkdir(path.c_str(), mode) != 0) return ErrnoError("cannot create " + path, errno);
    // mkdir honours the umask; the mode asked for is the mode wanted.
    if (::chmod(path.c_str(), mode) != 0) return ErrnoError("cannot chmod " + path, errno);
    return Ok();
  }

  Status Chmod(const std::string& path, uint32_t mode) override {
    if (::chmod(path.c_str(), mode & 07777) != 0) return ErrnoError("cannot chmod " + path, errno);
    return Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError("cannot rename " + from + " to " + to, errno);
    }
    return Ok();
  }
};

}  // namespace

std::unique_ptr<FileSystem> NewRealFileSystem() { return std::make_unique<RealFileSystem>(); }

}  // namespace skydb
