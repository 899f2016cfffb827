// Shared coherence (store.coherence = "shared"): two stores on one table, as two daemons on one
// database. What one acknowledges, the other's next read returns; no memory copy is served
// once it may be older than PostgreSQL's row.
#include <future>
#include <thread>

#include "harnesses.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;

class SharedStoresTest : public ::testing::Test {
 protected:
  TieredOptions Options(bool shared = true) {
    TieredOptions o = FakeOptions(Durability::kSync, shared);
    o.durable_sweep_interval = milliseconds(50);
    return o;
  }
  FakeTieredHarness a_{Options()};
  FakeTieredHarness b_{Options(), a_.shared_state()};
};

TEST_F(SharedStoresTest, EachStoreReadsTheOthersAcknowledgedWrites) {
  ASSERT_TRUE(a_.Set("s", "from-a", Expiry::None()).ok());
  EXPECT_EQ(**b_.Get("s"), "from-a");
  ASSERT_TRUE(b_.Set("s", "from-b", Expiry::None()).ok());
  EXPECT_EQ(**a_.Get("s"), "from-b");  // a had "from-a" in memory; it is not served
  ASSERT_EQ(*b_.Del({"s"}), 1);
  EXPECT_FALSE(a_.Get("s")->has_value());
  EXPECT_EQ(*a_.Exists({"s"}), 0);
}

TEST_F(SharedStoresTest, ConditionsAndDeadlinesSeeTheOtherStoresWrites) {
  ASSERT_TRUE(a_.Set("s", "1", Expiry::At(a_.NowMs() + 60000)).ok());
  EXPECT_FALSE(b_.Set("s", "2", Expiry::None(), SetCondition::kIfAbsent)->applied);
  EXPECT_TRUE(b_.Set("s", "3", Expiry::Keep(), SetCondition::kIfPresent)->applied);
  auto ttl = a_.Ttl("s");
  ASSERT_EQ(ttl->state, TtlReply::State::kExpiring);  // KEEPTTL kept a's deadline
  EXPECT_GT(ttl->remaining_ms, 59000);
  ASSERT_TRUE(*b_.Expire("s", Expiry::None()));
  EXPECT_EQ(a_.Ttl("s")->state, TtlReply::State::kNoExpiry);
  ASSERT_TRUE(*a_.Expire("s", Expiry::At(a_.NowMs() + 5000)));
  ttl = b_.Ttl("s");
  ASSERT_EQ(ttl->state, TtlReply::State::kExpiring);  // exact: no persist slack when shared
  EXPECT_LE(ttl->remaining_ms, 5000);
  EXPECT_EQ(**b_.GetDel("s"), "3");
  EXPECT_FALSE(a_.Get("s")->has_value());
}

TEST_F(SharedStoresTest, OwnUncommittedWriteIsServedUntilItCommits) {
  ASSERT_TRUE(a_.Set("s", "old", Expiry::None()).ok());
  HoldCommits(*a_.shared_state(), true);
  std::atomic<bool> acked{false};
  a_.store().Set({"s", "new", Expiry::None()}, [&](Result<SetReply> r) { acked = r.ok(); });
  // a's own read is answered from its write (newer than the row), once that write commits.
  std::atomic<bool> read{false};
  std::optional<std::string> seen;
  a_.store().Get("s", [&](Result<std::optional<std::string>> r) {
    if (r.ok()) seen = *r;
    read = true;
  });
  EXPECT_EQ(**b_.Get("s"), "old");  // not acknowledged: the other store still sees the row
  EXPECT_FALSE(read.load());
  HoldCommits(*a_.shared_state(), false);
  ASSERT_TRUE(WaitFor([&] { return acked.load() && read.load(); }));
  EXPECT_EQ(seen, "new");
  EXPECT_EQ(**b_.Get("s"), "new");
}

// Counts the row reads of the fake durable layer.
class CountedReads {
 public:
  explicit CountedReads(FakeDurableState& state) : state_(state) {
    std::lock_guard<std::mutex> lock(state_.mu);
    state_.after_read = [this](const std::string&) { ++reads_; };
  }
  ~CountedReads() {
    std::lock_guard<std::mutex> lock(state_.mu);
    state_.after_read = nullptr;
  }
  int reads() const { return reads_.load(); }

 private:
  FakeDurableState& state_;
  std::atomic<int> reads_{0};
};

// A key this store wrote, not committed yet: its row is read only once the write committed
// (while the read waits, nothing else of this store writes the key), so the row is never older
// than the write and is read once.
TEST_F(SharedStoresTest, ARowIsReadOnlyOnceTheStoresOwnWriteCommitted) {
  ASSERT_TRUE(a_.Set("s", "old", Expiry::None()).ok());
  HoldCommits(*a_.shared_state(), true);
  std::atomic<bool> acked{false};
  a_.store().Set({"s", "new", Expiry::None()}, [&](Result<SetReply> r) { acked = r.ok(); });
  CountedReads counted(*a_.shared_state());
  Pending<std::optional<std::string>> read;
  a_.store().Get("s", read.cb());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(counted.reads(), 0) << "the row was read before this store's write committed";
  HoldCommits(*a_.shared_state(), false);
  EXPECT_EQ(**read.get(), "new");
  EXPECT_TRUE(acked.load());
  EXPECT_EQ(counted.reads(), 1);
}

// The same for a delete: the row still there before it committed must not bring the key back.
TEST_F(SharedStoresTest, ARowIsReadOnlyOnceTheStoresOwnDeleteCommitted) {
  ASSERT_TRUE(a_.Set("s", "v", Expiry::None()).ok());
  HoldCommits(*a_.shared_state(), true);
  std::atomic<bool> deleted{false};
  a_.store().Delete({"s"}, [&](Result<int64_t> r) { deleted = r.ok() && *r == 1; });
  ASSERT_TRUE(WaitFor([&] { return a_.ScanAll().empty(); }));  // the delete is applied
  CountedReads counted(*a_.shared_state());
  Pending<std::optional<std::string>> read;
  a_.store().Get("s", read.cb());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(counted.reads(), 0) << "the row was read before this store's delete committed";
  HoldCommits(*a_.shared_state(), false);
  EXPECT_FALSE(read.get()->has_value());
  EXPECT_TRUE(deleted.load());
  EXPECT_EQ(counted.reads(), 1);
}

TEST_F(SharedStoresTest, QueuedDeleteHidesTheRowStillInPostgres) {
  ASSERT_TRUE(a_.Set("s", "v", Expiry::None()).ok());
  HoldCommits(*a_.shared_state(), true);
  std::atomic<bool> deleted{false};
  a_.store().Delete({"s"}, [&](Result<int64_t> r) { deleted = r.ok() && *r == 1; });
  // Shared coherence reads the row on a loader thread before it applies the delete; once it
  // is applied (SCAN promises only keys live for the whole scan, so it stops listing "s"),
  // the key reads as gone to a's clients, and a reply saying so waits for the delete's commit.
  ASSERT_TRUE(WaitFor([&] { return a_.ScanAll().empty(); }));
  std::atomic<int> answered{0};
  bool gone = false;
  int64_t exists = -1;
  a_.store().Get("s", [&](Result<std::optional<std::string>> r) {
    gone = r.ok() && !r->has_value();
    ++answered;
  });
  a_.store().Exists({"s"}, [&](Result<int64_t> r) {
    if (r.ok()) exists = *r;
    ++answered;
  });
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(answered.load(), 0);
  HoldCommits(*a_.shared_state(), false);
  ASSERT_TRUE(WaitFor([&] { return deleted.load() && answered.load() == 2; }));
  EXPECT_TRUE(gone);
  EXPECT_EQ(exists, 0);
  EXPECT_FALSE(b_.Get("s")->has_value());
  // After the commit nothing lingers: a new row written by b is seen by a.
  ASSERT_TRUE(b_.Set("s", "again", Expiry::None()).ok());
  EXPECT_EQ(**a_.Get("s"), "again");
}

TEST_F(SharedStoresTest, ConcurrentWritersOnTheSameKeysEndAgreeing) {
  std::vector<std::thread> threads;
  for (auto* h : {&a_, &b_}) {
    threads.emplace_back([h] {
      for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(h->Set("k" + std::to_string(i % 7), std::to_string(i), Expiry::None()).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int k = 0; k < 7; ++k) {
    std::string key = "k" + std::to_string(k);
    std::string in_table;
    {
      std::lock_guard<std::mutex> lock(a_.shared_state()->mu);
      in_table = a_.shared_state()->rows.at(key).value;
    }
    EXPECT_EQ(**a_.Get(key), in_table);
    EXPECT_EQ(**b_.Get(key), in_table);
  }
}

TEST_F(SharedStoresTest, ScanSeesBothStoresKeysAndCountFollowsTheTable) {
  for (int i = 0; i < 30; ++i) {
    auto& h = i % 2 == 0 ? a_ : b_;
    ASSERT_TRUE(h.Set("key" + std::to_string(i), "v", Expiry::None()).ok());
  }
  auto keys = a_.ScanAll("key*", 4);
  EXPECT_EQ(keys.size(), 30u);
  // The count is PostgreSQL's, refreshed with each durable sweep.
  a_.clock().Advance(milliseconds(100));
  b_.clock().Advance(milliseconds(100));
  EXPECT_TRUE(WaitFor([&] { return a_.store().Count() == 30 && b_.store().Count() == 30; }))
      << a_.store().Count() << " " << b_.store().Count();
}

TEST_F(SharedStoresTest, MemoryKeepsOnlyUncommittedWrites) {
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(a_.Set("m" + std::to_string(i), "v").ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(a_.Get("m" + std::to_string(i)).ok());
  EXPECT_TRUE(WaitFor([&] { return a_.store().Stats().cached_values == 0; }))
      << a_.store().Stats().cached_values;
}

// The contrast that makes "shared" necessary: exclusive stores trust their memory, so a second
// daemon's write is not seen. This is why an external database defaults to shared.
TEST(ExclusiveStoresTest, DoNotSeeEachOthersWrites) {
  FakeTieredHarness a(FakeOptions(Durability::kSync));
  FakeTieredHarness b(FakeOptions(Durability::kSync), a.shared_state());
  ASSERT_TRUE(a.Set("s", "1", Expiry::None()).ok());
  EXPECT_FALSE(b.Get("s")->has_value());
}

}  // namespace
}  // namespace skydb::testing
