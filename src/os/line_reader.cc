#include "os/line_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace skydb {

LineReader::LineReader(int fd, Sink sink) : fd_(fd), sink_(std::move(sink)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_read_ = fds[0];
    wake_write_ = fds[1];
  }
  thread_ = std::thread([this] { Loop(); });
}

LineReader::~LineReader() {
  Stop();
  if (wake_read_ >= 0) ::close(wake_read_);
  if (wake_write_ >= 0) ::close(wake_write_);
}

bool LineReader::WaitClosed(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mu_);
  while (!closed_) {
    if (!closed_cv_.WaitUntil(mu_, deadline)) return closed_;
  }
  return true;
}

void LineReader::Stop() {
  if (!thread_.joinable()) return;
  if (wake_write_ >= 0) (void)!::write(wake_write_, "x", 1);
  thread_.join();
}

void LineReader::Loop() {
  std::string pending;
  char buf[4096];
  while (true) {
    struct pollfd pfds[2] = {{fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    int n = ::poll(pfds, wake_read_ >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (pfds[1].revents & POLLIN) != 0) break;
    ssize_t got = ::read(fd_, buf, sizeof buf);
    // EAGAIN: a non-blocking pipe whose bytes another reader took first (the app launcher,
    // src/os/app_launcher.cc, drains the app's output too while it stops the app).
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break;
    pending.append(buf, static_cast<size_t>(got));
    EmitLines(pending);
  }
  if (!pending.empty()) sink_(pending);
  ::close(fd_);
  MutexLock lock(mu_);
  closed_ = true;
  closed_cv_.NotifyAll();
}

void LineReader::EmitLines(std::string& pending) {
  size_t start = 0;
  for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
    sink_(std::string_view(pending).substr(start, nl - start));
    start = nl + 1;
  }
  pending.erase(0, start);
}

}  // namespace skydb
