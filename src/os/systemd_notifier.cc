// Notifier over libsystemd.
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <atomic>
#include <cstring>

#include "skydb/env.h"

namespace skydb {
namespace {

class SystemdNotifier final : public Notifier {
 public:
  void Send(const std::string& message) override {
    int r = sd_notify(0, message.c_str());
    if (r < 0 && !warned_.exchange(true)) {
      spdlog::warn("systemd: cannot notify the service manager (NOTIFY_SOCKET): {}",
                   std::strerror(-r));
    }
  }

  std::optional<std::chrono::microseconds> WatchdogTimeout() const override {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
    return std::chrono::microseconds(usec);
  }

  uint64_t MonotonicUsec() const override {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  }

 private:
  std::atomic<bool> warned_{false};
};

}  // namespace

std::unique_ptr<Notifier> NewSystemdNotifier() { return std::make_unique<SystemdNotifier>(); }

}  // namespace skydb
