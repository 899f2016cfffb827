#include "supervisor/restart_policy.h"

#include <gtest/gtest.h>

#include "support/fakes.h"

namespace skydb::supervisor {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

SupervisorConfig Timing() {
  SupervisorConfig c;
  c.backoff_initial = milliseconds(500);
  c.backoff_max = seconds(30);
  c.stable_after = seconds(60);
  c.crash_window = seconds(300);
  c.max_crashes = 100;
  return c;
}

TEST(RestartPolicyTest, BackoffDoublesUpToTheCap) {
  testing::FakeClock clock;
  RestartPolicy policy(Timing(), clock);
  std::vector<long> delays;
  for (int i = 0; i < 9; ++i) {
    auto d = policy.OnCrash();
    ASSERT_FALSE(d.give_up);
    delays.push_back(std::chrono::duration_cast<milliseconds>(d.delay).count());
    clock.Advance(seconds(1));
  }
  EXPECT_EQ(delays, (std::vector<long>{500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000}));
}

TEST(RestartPolicyTest, StableUptimeResetsTheBackoff) {
  testing::FakeClock clock;
  RestartPolicy policy(Timing(), clock);
  policy.OnCrash();
  policy.OnCrash();
  EXPECT_EQ(policy.next_delay(), milliseconds(2000));
  policy.OnReady();
  clock.Advance(seconds(59));
  EXPECT_EQ(policy.OnCrash().delay, milliseconds(2000));  // not stable yet: keeps doubling
  policy.OnReady();
  clock.Advance(seconds(60));
  EXPECT_EQ(policy.OnCrash().delay, milliseconds(500));  // stable for 60 s: back to initial
}

TEST(RestartPolicyTest, CrashWithoutReadyDoesNotReset) {
  testing::FakeClock clock;
  RestartPolicy policy(Timing(), clock);
  policy.OnCrash();
  clock.Advance(seconds(120));  // a long time, but it never became ready
  EXPECT_EQ(policy.OnCrash().delay, milliseconds(1000));
}

TEST(RestartPolicyTest, GivesUpAfterMoreThanMaxCrashesInTheWindow) {
  testing::FakeClock clock;
  SupervisorConfig timing = Timing();
  timing.max_crashes = 3;
  timing.crash_window = seconds(60);
  RestartPolicy policy(timing, clock);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(policy.OnCrash().give_up);
    clock.Advance(seconds(10));
  }
  auto d = policy.OnCrash();
  EXPECT_TRUE(d.give_up);
  EXPECT_EQ(d.crashes_in_window, 4);
  EXPECT_NE(d.reason.find("4 times within 1m0s"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("supervisor.max_crashes = 3"), std::string::npos) << d.reason;
}

TEST(RestartPolicyTest, CrashesOutsideTheWindowAreForgotten) {
  testing::FakeClock clock;
  SupervisorConfig timing = Timing();
  timing.max_crashes = 2;
  timing.crash_window = seconds(60);
  RestartPolicy policy(timing, clock);
  for (int i = 0; i < 10; ++i) {
    auto d = policy.OnCrash();
    EXPECT_FALSE(d.give_up) << "crash " << i;
    EXPECT_LE(d.crashes_in_window, 2);
    clock.Advance(seconds(31));
  }
}

TEST(RestartPolicyTest, ReconfigureKeepsHistoryAndClampsDelay) {
  testing::FakeClock clock;
  RestartPolicy policy(Timing(), clock);
  for (int i = 0; i < 6; ++i) policy.OnCrash();
  SupervisorConfig timing = Timing();
  timing.backoff_max = seconds(5);
  policy.Reconfigure(timing);
  EXPECT_EQ(policy.OnCrash().delay, seconds(5));
}

// A full disk is an outage to wait out, not a crash loop: never counted, never given up on,
// retried at least every kOutOfSpaceRetryMax.
TEST(RestartPolicyTest, OutOfSpaceExitsNeverCountAndRetryOften) {
  testing::FakeClock clock;
  SupervisorConfig timing = Timing();
  timing.max_crashes = 2;
  RestartPolicy policy(timing, clock);
  std::vector<long> delays;
  for (int i = 0; i < 10; ++i) {
    auto d = policy.OnCrash(/*out_of_space=*/true);
    ASSERT_FALSE(d.give_up) << i;
    EXPECT_EQ(d.crashes_in_window, 0);
    delays.push_back(std::chrono::duration_cast<milliseconds>(d.delay).count());
    clock.Advance(seconds(1));
  }
  EXPECT_EQ(delays, (std::vector<long>{500, 1000, 2000, 4000, 5000, 5000, 5000, 5000, 5000, 5000}));
  // Ordinary crashes still count and still end in giving up.
  EXPECT_FALSE(policy.OnCrash().give_up);
  EXPECT_FALSE(policy.OnCrash().give_up);
  EXPECT_TRUE(policy.OnCrash().give_up);
}

TEST(FormatDurationTest, Readable) {
  EXPECT_EQ(FormatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(seconds(30)), "30s");
  EXPECT_EQ(FormatDuration(seconds(300)), "5m0s");
}

}  // namespace
}  // namespace skydb::supervisor
