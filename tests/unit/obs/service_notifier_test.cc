// ServiceNotifier's decisions against a recording Notifier and a fake clock.
#include <gtest/gtest.h>

#include "skydb/notify.h"
#include "support/fakes.h"

namespace skydb {
namespace {

using testing::FakeClock;

using std::chrono::milliseconds;
using std::chrono::seconds;

class RecordingNotifier final : public Notifier {
 public:
  void Send(const std::string& message) override { sent.push_back(message); }
  std::optional<std::chrono::microseconds> WatchdogTimeout() const override { return watchdog; }
  uint64_t MonotonicUsec() const override { return 123456789; }

  // Messages that contain `text`, counted.
  int Count(const std::string& text) const {
    int n = 0;
    for (const auto& m : sent) n += m.find(text) != std::string::npos ? 1 : 0;
    return n;
  }
  std::vector<std::string> sent;
  std::optional<std::chrono::microseconds> watchdog;
};

ServiceObservation Cluster(SupervisorState state, bool store_open = false, bool answers = false) {
  return {state, store_open, answers};
}

class ServiceNotifierTest : public ::testing::Test {
 protected:
  // Ticks every 250 ms for `d`, as the daemon's health thread does.
  void TickFor(ServiceNotifier& n, const ServiceObservation& o, milliseconds d) {
    for (auto t = milliseconds(0); t < d; t += milliseconds(250)) {
      n.Tick(o);
      clock_.Advance(milliseconds(250));
    }
  }
  RecordingNotifier notifier_;
  FakeClock clock_;
};

TEST_F(ServiceNotifierTest, StatusIsSentOnlyWhenItChanges) {
  ServiceNotifier n(notifier_, clock_);
  n.Tick(Cluster(SupervisorState::kInitializing));
  n.Tick(Cluster(SupervisorState::kInitializing));
  n.Tick(Cluster(SupervisorState::kStarting));
  EXPECT_EQ(notifier_.Count("STATUS=preparing the data directory"), 1);
  EXPECT_EQ(notifier_.Count("STATUS=starting PostgreSQL"), 1);
  EXPECT_EQ(notifier_.Count("READY=1"), 0) << "ticks never declare readiness";
}

TEST_F(ServiceNotifierTest, StartUpIsExtendedUntilReadyThenNever) {
  ServiceNotifier n(notifier_, clock_, seconds(90));
  TickFor(n, Cluster(SupervisorState::kInitializing), seconds(61));
  // At 0 s, 30 s and 60 s: each asks for 90 s more.
  EXPECT_EQ(notifier_.Count("EXTEND_TIMEOUT_USEC=90000000"), 3);
  n.Ready("serving sessions");
  int before = notifier_.Count("EXTEND_TIMEOUT_USEC");
  TickFor(n, Cluster(SupervisorState::kReady, true, true), seconds(120));
  EXPECT_EQ(notifier_.Count("EXTEND_TIMEOUT_USEC"), before);
}

TEST_F(ServiceNotifierTest, ReadyCarriesStatusAndIsSentOnce) {
  ServiceNotifier n(notifier_, clock_);
  n.Ready("serving sessions: tiered");
  ASSERT_FALSE(notifier_.sent.empty());
  EXPECT_EQ(notifier_.sent.back(), "READY=1\nSTATUS=serving sessions: tiered");
  n.Tick(Cluster(SupervisorState::kReady, true, true));
  EXPECT_EQ(notifier_.Count("READY=1"), 1);
  EXPECT_EQ(notifier_.Count("STATUS="), 1) << "serving keeps Ready's own status text";
  n.Tick(Cluster(SupervisorState::kBackoff, true, false));
  n.Tick(Cluster(SupervisorState::kReady, true, true));
  EXPECT_EQ(notifier_.sent.back(), "STATUS=serving sessions: tiered");
}

TEST_F(ServiceNotifierTest, NoWatchdogMessagesWhenSystemdDidNotAskForThem) {
  ServiceNotifier n(notifier_, clock_);
  n.Ready("up");
  TickFor(n, Cluster(SupervisorState::kReady, true, true), seconds(10));
  EXPECT_EQ(notifier_.Count("WATCHDOG=1"), 0);
}

TEST_F(ServiceNotifierTest, WatchdogAtHalfTheTimeoutOnlyWhilePostgresAnswers) {
  notifier_.watchdog = std::chrono::microseconds(2000000);  // WatchdogSec=2s → every 1 s
  ServiceNotifier n(notifier_, clock_);
  n.Ready("up");
  TickFor(n, Cluster(SupervisorState::kReady, true, true), seconds(4));
  EXPECT_EQ(notifier_.Count("WATCHDOG=1"), 4);  // at 0, 1, 2, 3 s
  TickFor(n, Cluster(SupervisorState::kReady, true, false), seconds(5));
  EXPECT_EQ(notifier_.Count("WATCHDOG=1"), 4) << "silent while PostgreSQL does not answer";
  EXPECT_EQ(notifier_.Count("PostgreSQL is not answering"), 1);
  TickFor(n, Cluster(SupervisorState::kReady, true, true), milliseconds(250));
  EXPECT_EQ(notifier_.Count("WATCHDOG=1"), 5) << "resumes at once when it answers again";
  TickFor(n, Cluster(SupervisorState::kBackoff, true, false), seconds(3));
  EXPECT_EQ(notifier_.Count("WATCHDOG=1"), 5) << "silent while PostgreSQL restarts";
}

TEST_F(ServiceNotifierTest, WatchdogFollowsProgressDuringStartUp) {
  notifier_.watchdog = std::chrono::microseconds(2000000);
  ServiceNotifier n(notifier_, clock_);
  TickFor(n, Cluster(SupervisorState::kStarting), seconds(3));
  EXPECT_EQ(notifier_.Count("WATCHDOG=1"), 3) << "a long recovery must not trip the watchdog";
}

TEST_F(ServiceNotifierTest, ReloadIsBracketedByReloadingAndReady) {
  ServiceNotifier n(notifier_, clock_);
  n.Reloading();
  n.Reloaded();
  EXPECT_TRUE(notifier_.sent.empty()) << "no reload messages before READY";
  n.Ready("serving sessions");
  n.Reloading();
  n.Reloaded();
  ASSERT_EQ(notifier_.sent.size(), 3u);
  EXPECT_EQ(notifier_.sent[1],
            "RELOADING=1\nMONOTONIC_USEC=123456789\nSTATUS=reloading the configuration");
  EXPECT_EQ(notifier_.sent[2], "READY=1\nSTATUS=serving sessions");
}

TEST_F(ServiceNotifierTest, StoppingIsSentOnceAndEndsWatchdogAndReadiness) {
  notifier_.watchdog = std::chrono::microseconds(2000000);
  ServiceNotifier n(notifier_, clock_);
  n.Ready("up");
  n.Stopping();
  n.Stopping();
  EXPECT_EQ(notifier_.Count("STOPPING=1"), 1);
  int watchdogs = notifier_.Count("WATCHDOG=1");
  TickFor(n, Cluster(SupervisorState::kStopping, true, true), seconds(3));
  EXPECT_EQ(notifier_.Count("WATCHDOG=1"), watchdogs);
  n.Ready("late");
  n.Reloaded();
  EXPECT_EQ(notifier_.Count("READY=1"), 1);
}

TEST(ServiceNotifierStatusTest, TextForEveryState) {
  EXPECT_EQ(ServiceNotifier::StatusFor({std::nullopt, false, true}), "opening the session store");
  EXPECT_EQ(ServiceNotifier::StatusFor({std::nullopt, true, true}), "serving sessions");
  EXPECT_EQ(ServiceNotifier::StatusFor({SupervisorState::kReady, false, true}),
            "opening the session store");
  EXPECT_EQ(ServiceNotifier::StatusFor({SupervisorState::kMigrating, false, true}),
            "applying schema migrations");
  EXPECT_EQ(ServiceNotifier::StatusFor({SupervisorState::kBackoff, true, false}),
            "PostgreSQL exited unexpectedly; restarting it");
}

}  // namespace
}  // namespace skydb
