// The real BundleOutput: POSIX calls, every file fsynced before it counts as written.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <thread>

#include "skydb/bundle.h"

namespace skydb {
namespace {

// Out of space and out of quota are what an operator fixes by freeing disk; say so.
Error WriteError(const std::string& what, int err) {
  if (err == ENOSPC || err == EDQUOT) {
    return Error::Unavailable(what + ": no space left on device");
  }
  return ErrnoError(what, err);
}

class RealBundleOutput final : public BundleOutput {
 public:
  Status MakeDirs(const std::string& path, uint32_t mode) override {
    std::string partial;
    size_t start = 0;
    while (start < path.size()) {
      size_t end = path.find('/', start);
      if (end == std::string::npos) end = path.size();
      partial = path.substr(0, end);
      start = end + 1;
      if (partial.empty()) continue;
      if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) {
        return WriteError("cannot create directory " + partial, errno);
      }
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Error::Conflict(path + " exists and is not a directory");
    }
    return Ok();
  }

  Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix) override {
    std::string templ = parent + "/" + prefix + "XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      return WriteError("cannot create a temporary directory in " + parent, errno);
    }
    // mkdtemp makes it 0700; the cluster user must reach the binaries inside.
    if (::chmod(templ.c_str(), 0755) != 0) return ErrnoError("cannot chmod " + templ, errno);
    return templ;
  }

  Status WriteFile(const std::string& path, std::string_view data, uint32_t mode) override {
    return Write(path, data, mode, true);
  }

  Status WriteScratchFile(const std::string& path, std::string_view data, uint32_t mode) override {
    return Write(path, data, mode, false);
  }

  Status Write(const std::string& path, std::string_view data, uint32_t mode, bool durable) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return WriteError("cannot create " + path, errno);
    Status status = WriteAll(fd, path, data);
    if (status.ok() && ::fchmod(fd, mode) != 0) status = ErrnoError("cannot chmod " + path, errno);
    if (status.ok() && durable && ::fsync(fd) != 0) {
      status = WriteError("cannot fsync " + path, errno);
    }
    if (::close(fd) != 0 && status.ok()) status = WriteError("cannot close " + path, errno);
    return status;
  }

  Status SyncDir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot open directory " + path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    return rc == 0 ? Ok() : WriteError("cannot fsync directory " + path, err);
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError("cannot rename " + from + " to " + to, errno);
    }
    return Ok();
  }

  Status RemoveTree(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return Error::Io("cannot remove " + path + ": " + ec.message());
    return Ok();
  }

  Result<std::shared_ptr<void>> Lock(const std::string& path,
                                     std::chrono::milliseconds timeout) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoError("cannot open lock file " + path, errno);
    // The timeout counts the pauses between attempts (an attempt does not block), so no clock
    // is read.
    constexpr auto kPause = std::chrono::milliseconds(20);
    for (std::chrono::milliseconds paused{0}; ::flock(fd, LOCK_EX | LOCK_NB) != 0;
         paused += kPause) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        ::close(fd);
        return ErrnoError("cannot lock " + path, err);
      }
      if (paused >= timeout) {
        ::close(fd);
        return Error::Timeout("another process held " + path + " for longer than " +
                              std::to_string(timeout.count()) +
                              " ms while extracting a bundle; check for a stuck skydb");
      }
      std::this_thread::sleep_for(kPause);
    }
    return std::shared_ptr<void>(nullptr, [fd](void*) { ::close(fd); });
  }

 private:
  static Status WriteAll(int fd, const std::string& path, std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return WriteError("cannot write " + path, errno);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Ok();
  }
};

}  // namespace

std::unique_ptr<BundleOutput> NewRealBundleOutput() { return std::make_unique<RealBundleOutput>(); }

}  // namespace skydb
