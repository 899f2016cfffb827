#include <time.h>

#include <thread>

#include "skydb/env.h"

namespace skydb {
namespace {

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  // steady_clock's CLOCK_MONOTONIC as of the last tick, which the vDSO returns without reading
  // the TSC.
  TimePoint CoarseNow() const override {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return TimePoint(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }
  void SleepFor(Duration d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

std::unique_ptr<Clock> NewRealClock() { return std::make_unique<RealClock>(); }

}  // namespace skydb
