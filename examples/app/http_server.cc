#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace app {
namespace {

constexpr size_t kMaxHead = 16 * 1024;

bool ParseHead(const std::string& head, Request& request) {
  auto line_end = head.find("\r\n");
  std::string first = head.substr(0, line_end);
  auto sp1 = first.find(' ');
  auto sp2 = first.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) return false;
  request.method = first.substr(0, sp1);
  request.path = first.substr(sp1 + 1, sp2 - sp1 - 1);
  for (size_t at = line_end + 2; at < head.size();) {
    auto end = head.find("\r\n", at);
    if (end == std::string::npos) end = head.size();
    std::string line = head.substr(at, end - at);
    auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto value = line.find_first_not_of(' ', colon + 1);
      request.headers[name] = value == std::string::npos ? "" : line.substr(value);
    }
    at = end + 2;
  }
  return true;
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    default:
      return "Internal Server Error";
  }
}

void WriteAll(int fd, const std::string& data) {
  for (size_t sent = 0; sent < data.size();) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace

bool HttpServer::Start(const std::string& listen, Handler handler, std::string& error) {
  auto colon = listen.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (colon == std::string::npos ||
      ::inet_pton(AF_INET, listen.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    error = "--listen " + listen + ": expected IPV4:PORT, e.g. 127.0.0.1:8080";
    return false;
  }
  char* end = nullptr;
  long port = std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535) {
    error = "--listen " + listen + ": the port must be 1..65535";
    return false;
  }
  addr.sin_port = htons(static_cast<uint16_t>(port));
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    error = "--listen " + listen + ": " + std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  handler_ = std::move(handler);
  thread_ = std::thread([this] { Serve(); });
  return true;
}

void HttpServer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;  // wakes up to see stop_
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval timeout{5, 0};  // a client that sends nothing does not hold the server forever
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ServeOne(fd);
    ::close(fd);
  }
}

void HttpServer::ServeOne(int fd) {
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxHead) {
    char chunk[2048];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return;
    head.append(chunk, static_cast<size_t>(n));
  }
  Request request;
  Response response;
  if (!ParseHead(head.substr(0, head.find("\r\n\r\n")), request)) {
    response = Reply(400, "{\"error\":\"malformed request\"}\n");
  } else {
    response = handler_(request);
  }
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + Reason(response.status) +
                    "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) +
                    "\r\nConnection: close\r\n";
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  WriteAll(fd, out + "\r\n" + response.body);
}

}  // namespace app
