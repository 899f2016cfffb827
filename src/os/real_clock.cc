#include <thread>

#include "skydb/env.h"

namespace skydb {
namespace {

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }
  void SleepFor(Duration d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

std::unique_ptr<Clock> NewRealClock() { return std::make_unique<RealClock>(); }

}  // namespace skydb
