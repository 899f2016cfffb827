// The PostgreSQL figures poller's stop: once stopped (before the database stops, so that no
// poll fails on its shutdown) it polls no more, and a second stop or the destructor is harmless.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "skydb/obs.h"
#include "support/fakes.h"

namespace skydb {
namespace {

using std::chrono::milliseconds;

TEST(PostgresPollerTest, StopEndsThePollsAndIsIdempotent) {
  testing::FakeClock clock;
  PollerOptions options;
  options.conninfo = "host=/nonexistent-skydb-poller-test port=1";  // fails at once
  options.interval = milliseconds(5);
  options.clock = &clock;
  auto poller = StartPostgresPoller(options);
  for (int i = 0; i < 400 && poller->failures() < 2; ++i)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_GE(poller->failures(), 2u) << "the poller was polling";
  poller->Stop();
  uint64_t after_stop = poller->failures();
  std::this_thread::sleep_for(milliseconds(100));  // 20 intervals
  EXPECT_EQ(poller->failures(), after_stop);
  poller->Stop();
  EXPECT_FALSE(poller->Latest().has_value());
}

}  // namespace
}  // namespace skydb
