// Listening sockets: a unix socket (mode, group, stale-file handling) or TCP.
#include "os/listen_socket.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace skydb {
namespace {

constexpr int kBacklog = 511;

bool FillUnixAddress(const std::string& path, sockaddr_un* addr) {
  *addr = {};
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// A socket file left by a dead server is removed; one a live server answers on is not.
Status ClearStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Ok() : ErrnoError("stat " + path, errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Error::Conflict(path + " exists and is not a socket; remove it or choose another path");
  }
  int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return ErrnoError("socket", errno);
  int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  int err = errno;
  ::close(probe);
  if (rc == 0) {
    return Error::Conflict("another server is already listening on " + path);
  }
  if (err != ECONNREFUSED) return ErrnoError("probe " + path, err);
  if (::unlink(path.c_str()) != 0) return ErrnoError("remove stale socket " + path, errno);
  return Ok();
}

Status ApplyGroup(const std::string& path, const std::string& group) {
  if (group.empty()) return Ok();
  std::vector<char> buffer(16384);
  struct group entry {};
  struct group* found = nullptr;
  int rc = ::getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0 || found == nullptr) {
    return Error::NotFound("unix socket group '" + group + "' does not exist");
  }
  if (::chown(path.c_str(), static_cast<uid_t>(-1), found->gr_gid) != 0) {
    return ErrnoError("chgrp " + group + " " + path, errno);
  }
  return Ok();
}

Status BindUnix(int fd, const std::string& path, const sockaddr_un& addr, uint32_t mode,
                const std::string& group) {
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return ErrnoError("bind " + path, errno);
  }
  Status status = ::chmod(path.c_str(), mode) == 0 ? ApplyGroup(path, group)
                                                   : ErrnoError("chmod " + path, errno);
  if (status.ok() && ::listen(fd, kBacklog) != 0) status = ErrnoError("listen " + path, errno);
  if (!status.ok()) ::unlink(path.c_str());
  return status;
}

}  // namespace

Result<int> ListenUnix(const std::string& path, uint32_t mode, const std::string& group) {
  sockaddr_un addr{};
  if (!FillUnixAddress(path, &addr)) {
    return Error::InvalidArgument("unix socket path is too long (" + std::to_string(path.size()) +
                                  " bytes, at most 107): " + path);
  }
  SKYDB_RETURN_IF_ERROR(ClearStaleSocket(path, addr));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket", errno);
  Status bound = BindUnix(fd, path, addr, mode, group);
  if (!bound.ok()) {
    ::close(fd);
    return std::move(bound).error();
  }
  return fd;
}

Result<int> ListenTcp(const std::string& host, int port, int* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) return Error::InvalidArgument("cannot resolve " + host + ": " + gai_strerror(rc));
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  Status status = fd < 0 ? ErrnoError("socket", errno) : Ok();
  if (status.ok()) (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (status.ok() && ::bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
    status = ErrnoError("bind " + host + ":" + service, errno);
  }
  ::freeaddrinfo(found);
  if (status.ok() && ::listen(fd, kBacklog) != 0) status = ErrnoError("listen", errno);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (status.ok() && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    *bound_port =
        ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  }
  if (!status.ok()) {
    if (fd >= 0) ::close(fd);
    return std::move(status).error();
  }
  return fd;
}

}  // namespace skydb
