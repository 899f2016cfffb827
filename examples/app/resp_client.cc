#include "resp_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace app {

RespClient::~RespClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RespClient::Fail(const std::string& what) {
  error_ = what;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return false;
}

bool RespClient::Connect(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return Fail("socket path too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Fail(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Fail("connect " + socket_path + ": " + std::strerror(errno));
  }
  return true;
}

bool RespClient::ReadLine(std::string& line) {
  while (true) {
    auto end = buffer_.find("\r\n");
    if (end != std::string::npos) {
      line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return true;
    }
    char chunk[4096];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n <= 0) return Fail(n == 0 ? "the store closed the connection" : std::strerror(errno));
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

bool RespClient::ReadExactly(size_t n, std::string& out) {
  while (buffer_.size() < n) {
    char chunk[4096];
    ssize_t got = ::read(fd_, chunk, sizeof chunk);
    if (got <= 0) return Fail("the store closed the connection");
    buffer_.append(chunk, static_cast<size_t>(got));
  }
  out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return true;
}

std::optional<RespClient::Reply> RespClient::Call(const std::vector<std::string>& args) {
  if (fd_ < 0) {
    Fail("not connected");
    return std::nullopt;
  }
  std::string request = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& arg : args) {
    request += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  }
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      Fail(std::string("send: ") + std::strerror(errno));
      return std::nullopt;
    }
    sent += static_cast<size_t>(n);
  }
  std::string line;
  if (!ReadLine(line) || line.empty()) {
    if (error_.empty()) Fail("empty reply");
    return std::nullopt;
  }
  Reply reply{line[0], line.substr(1)};
  if (reply.type == '$') {
    long length = std::stol(reply.text);
    if (length < 0) {
      reply.nil = true;
    } else if (!ReadExactly(static_cast<size_t>(length) + 2, reply.text)) {
      return std::nullopt;
    } else {
      reply.text.resize(static_cast<size_t>(length));
    }
  }
  if (reply.type == '-') error_ = reply.text;
  return reply;
}

std::optional<std::string> RespClient::Get(const std::string& key) {
  error_.clear();
  auto reply = Call({"GET", key});
  if (!reply || reply->type != '$' || reply->nil) return std::nullopt;
  return reply->text;
}

bool RespClient::Set(const std::string& key, const std::string& value, int ttl_seconds) {
  error_.clear();
  auto reply = Call({"SET", key, value, "EX", std::to_string(ttl_seconds)});
  return reply && reply->type == '+';
}

}  // namespace app
