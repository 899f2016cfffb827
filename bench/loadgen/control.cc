// One-shot blocking requests (see control.h).
#include "control.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "loadgen_core.h"

namespace skydb::loadgen {
namespace {

class Control {
 public:
  ~Control() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string Connect(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      return "connect " + path + ": " + std::strerror(errno);
    }
    return "";
  }
  // Sends one command and waits for its whole reply.
  std::string Call(const std::vector<std::string_view>& args, Reply* reply) {
    std::string out;
    AppendCommand(&out, args);
    if (::send(fd_, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
      return std::string("send: ") + std::strerror(errno);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::string in;
    while (true) {
      long used = ParseReply(in, reply);
      if (used > 0) return "";
      if (used < 0) return "the reply is not RESP";
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return "no reply within 5 s";
      }
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return "the server closed the connection";
      in.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace

std::string ReadServerInfo(const std::string& socket_path, const std::string& store,
                           std::map<std::string, std::string>* info) {
  Control c;
  if (auto e = c.Connect(socket_path); !e.empty()) return e;
  Reply reply;
  if (auto e = c.Call({"INFO"}, &reply); !e.empty()) return "INFO: " + e;
  if (reply.type != Reply::Type::kBulk) return "INFO answered '" + reply.text + "'";
  *info = ParseInfo(reply.text);
  if (store != "redis") return "";
  for (const char* name : {"appendonly", "appendfsync"}) {
    if (auto e = c.Call({"CONFIG", "GET", name}, &reply); !e.empty()) return "CONFIG GET: " + e;
    if (reply.type == Reply::Type::kArray && reply.elements.size() == 2) {
      (*info)[std::string("config:") + name] = reply.elements[1].text;
    }
  }
  return "";
}

}  // namespace skydb::loadgen
