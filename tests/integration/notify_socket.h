// systemd's side of sd_notify for integration tests (obs_test.cc, embedding_test.cc).
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace skydb::testing {

// systemd's side of sd_notify: a datagram socket that records every message and when it came.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    // As systemd's /run/systemd/notify: a daemon that dropped root still reaches it.
    if (bound_) ::chmod(path_.c_str(), 0777);
    timeval tv{0, 100000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    thread_ = std::thread([this] { Receive(); });
  }
  ~NotifySocket() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }

  struct Message {
    std::chrono::steady_clock::time_point at;
    std::string text;
  };
  std::vector<Message> Messages() const {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  // Index of the first message at or after `from` containing `text`, waiting up to `timeout`.
  std::optional<size_t> WaitFor(const std::string& text, std::chrono::milliseconds timeout,
                                size_t from = 0) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto all = Messages();
      for (size_t i = from; i < all.size(); ++i) {
        if (all[i].text.find(text) != std::string::npos) return i;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  int CountSince(const std::string& text, std::chrono::steady_clock::time_point since) const {
    int n = 0;
    for (const auto& m : Messages()) {
      if (m.at >= since && m.text.find(text) != std::string::npos) ++n;
    }
    return n;
  }
  // Runs `on_message` on the receiving thread for each message as it arrives.
  void OnMessage(std::function<void(const std::string&)> on_message) {
    std::lock_guard<std::mutex> lock(mu_);
    on_message_ = std::move(on_message);
  }

 private:
  void Receive() {
    char buf[4096];
    while (!stop_) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::string text(buf, static_cast<size_t>(n));
      std::function<void(const std::string&)> hook;
      {
        std::lock_guard<std::mutex> lock(mu_);
        hook = on_message_;
      }
      if (hook) hook(text);
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back({std::chrono::steady_clock::now(), std::move(text)});
    }
  }
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<Message> messages_;
  std::function<void(const std::string&)> on_message_;
  std::thread thread_;
};

}  // namespace skydb::testing
