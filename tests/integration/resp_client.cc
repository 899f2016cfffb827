#include "resp_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace skydb::testing {
namespace {

constexpr int kMaxDepth = 8;

timeval ToTimeval(std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  return tv;
}

}  // namespace

Result<RespClient> RespClient::Connect(const std::string& socket_path,
                                       std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return Error::InvalidArgument("socket path too long: " + socket_path);
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket", errno);
  timeval tv = ToTimeval(timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("connect " + socket_path, err);
  }
  return RespClient(fd);
}

RespClient::RespClient(RespClient&& other) noexcept
    : fd_(other.fd_), buffer_(std::move(other.buffer_)), pos_(other.pos_) {
  other.fd_ = -1;
}

RespClient& RespClient::operator=(RespClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    buffer_ = std::move(other.buffer_);
    pos_ = other.pos_;
    other.fd_ = -1;
  }
  return *this;
}

RespClient::~RespClient() {
  if (fd_ >= 0) ::close(fd_);
}

Result<RespReply> RespClient::Command(const std::vector<std::string>& args) {
  SKYDB_ASSIGN_OR_RETURN(auto replies, Pipeline({args}));
  return std::move(replies.front());
}

Result<std::vector<RespReply>> RespClient::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  SKYDB_RETURN_IF_ERROR(Send(commands));
  std::vector<RespReply> replies;
  for (size_t i = 0; i < commands.size(); ++i) {
    auto reply = ReadReply(0);
    if (!reply.ok()) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      return std::move(reply).error();
    }
    replies.push_back(std::move(reply).value());
  }
  return replies;
}

Status RespClient::Send(const std::vector<std::vector<std::string>>& commands) {
  if (fd_ < 0) return Error::Unavailable("connection closed");
  std::string out;
  for (const auto& args : commands) {
    out += "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  size_t sent = 0;
  while (sent < out.size()) {
    ssize_t n = ::send(fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd_);
      fd_ = -1;
      return ErrnoError("send", err);
    }
    sent += static_cast<size_t>(n);
  }
  return Ok();
}

Status RespClient::Fill() {
  if (pos_ > 0) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[16384];
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("recv", errno);
    if (n == 0) return Error::Unavailable("server closed the connection");
    buffer_.append(chunk, static_cast<size_t>(n));
    return Ok();
  }
}

Result<std::string> RespClient::ReadLine() {
  for (;;) {
    size_t end = buffer_.find("\r\n", pos_);
    if (end != std::string::npos) {
      std::string line = buffer_.substr(pos_, end - pos_);
      pos_ = end + 2;
      return line;
    }
    SKYDB_RETURN_IF_ERROR(Fill());
  }
}

Result<RespReply> RespClient::ReadReply(int depth) {
  if (depth > kMaxDepth) return Error::Internal("reply nested too deeply");
  SKYDB_ASSIGN_OR_RETURN(std::string line, ReadLine());
  if (line.empty()) return Error::Internal("empty reply line");
  RespReply reply;
  std::string rest = line.substr(1);
  switch (line[0]) {
    case '+':
      reply.type = RespReply::Type::kSimple;
      reply.text = rest;
      return reply;
    case '-':
      reply.type = RespReply::Type::kError;
      reply.text = rest;
      return reply;
    case ':':
      reply.type = RespReply::Type::kInteger;
      reply.integer = std::stoll(rest);
      return reply;
    case '$': {
      long long len = std::stoll(rest);
      if (len < 0) return reply;  // null bulk
      while (buffer_.size() - pos_ < static_cast<size_t>(len) + 2) SKYDB_RETURN_IF_ERROR(Fill());
      reply.type = RespReply::Type::kBulk;
      reply.text = buffer_.substr(pos_, static_cast<size_t>(len));
      pos_ += static_cast<size_t>(len) + 2;
      return reply;
    }
    case '_':  // RESP3 null
      return reply;
    case '*':
    case '>':    // RESP3 push (a pub/sub message or confirmation)
    case '%': {  // RESP3 map, as its keys and values in turn
      long long n = std::stoll(rest);
      if (n < 0) return reply;  // null array
      reply.type = RespReply::Type::kArray;
      reply.push = line[0] == '>';
      if (line[0] == '%') n *= 2;
      for (long long i = 0; i < n; ++i) {
        SKYDB_ASSIGN_OR_RETURN(RespReply element, ReadReply(depth + 1));
        reply.elements.push_back(std::move(element));
      }
      return reply;
    }
    default:
      return Error::Internal("unexpected reply type byte '" + line.substr(0, 1) + "'");
  }
}

}  // namespace skydb::testing
