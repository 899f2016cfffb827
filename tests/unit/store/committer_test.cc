// The group committer on its own, over the fake durable layer: units commit whole (one
// transaction even across partitions), per-key order holds across them, reservations are
// all-or-nothing, and the listener hears of a commit before any waiter fires.
#include "store/committer.h"

#include <gtest/gtest.h>

#include <future>
#include <set>
#include <thread>

#include "store/shard.h"
#include "support/fake_durable.h"
#include "support/fakes.h"

namespace skydb::store {
namespace {

using skydb::testing::FakeClock;
using skydb::testing::FakeDurable;
using skydb::testing::FakeDurableState;
using std::chrono::milliseconds;

class RecordingListener final : public CommitListener {
 public:
  void OnCommitted(const Batch& batch) override {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < batch.rows.size(); ++i) committed[batch.rows[i].key] = batch.seqs[i];
  }
  void OnNotCommitted(const Batch& batch) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& row : batch.rows) not_committed.push_back(row.key);
  }
  std::mutex mu;
  std::map<std::string, uint64_t> committed;
  std::vector<std::string> not_committed;
};

class CommitterTest : public ::testing::Test {
 protected:
  void Open(CommitterOptions options) {
    durable_ = std::make_unique<FakeDurable>(state_);
    committer_ = std::make_unique<GroupCommitter>(options, clock_, *durable_, listener_);
    committer_->Start();
  }
  void TearDown() override {
    Hold(false);
    if (committer_) committer_->Stop(clock_.Now() + std::chrono::seconds(5));
  }
  void Hold(bool hold) {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->hold_commits = hold;
    }
    state_->cv.notify_all();
  }
  QueuedWrite Upsert(const std::string& key, const std::string& value) {
    return {{DurableWrite::Kind::kUpsert, key, value, 0}, committer_->NextSeq(), KeyHash(key)};
  }
  // Enqueues `writes` as one unit (guarded by `guard`, if given); the future is set when its
  // waiter fires.
  std::future<Status> Unit(std::vector<QueuedWrite> writes,
                           std::shared_ptr<CommitGuard> guard = nullptr) {
    auto promise = std::make_shared<std::promise<Status>>();
    auto future = promise->get_future();
    EXPECT_TRUE(committer_->Reserve(writes.size()));
    auto waiter = std::make_shared<Waiter>(
        clock_.Now(), [promise](Status s) { promise->set_value(std::move(s)); });
    committer_->Enqueue({std::move(writes), waiter, false, std::move(guard)});
    return future;
  }
  // A guard on `key` expecting `value` (nullopt: no row); `decided` counts its decisions.
  std::shared_ptr<CommitGuard> GuardOn(const std::string& key, std::optional<std::string> value,
                                       std::shared_ptr<std::atomic<int>> decided) {
    auto guard = std::make_shared<CommitGuard>();
    guard->keys = {key};
    guard->unchanged = [value](const std::vector<std::optional<DurableValue>>& rows) {
      if (!value) return !rows[0].has_value();
      return rows[0].has_value() && rows[0]->value == *value;
    };
    guard->decided = [decided] { ++*decided; };
    return guard;
  }
  int PartitionOf(const std::string& key, int partitions) {
    return static_cast<int>(KeyHash(key) % static_cast<uint64_t>(partitions));
  }

  FakeClock clock_;
  std::shared_ptr<FakeDurableState> state_ = std::make_shared<FakeDurableState>();
  std::unique_ptr<FakeDurable> durable_;
  RecordingListener listener_;
  std::unique_ptr<GroupCommitter> committer_;
};

TEST_F(CommitterTest, AUnitAcrossPartitionsCommitsInOneTransaction) {
  CommitterOptions options;
  options.partitions = 4;
  Open(options);
  std::vector<QueuedWrite> writes;
  std::set<int> partitions;
  for (int i = 0; i < 20; ++i) {
    std::string key = "k" + std::to_string(i);
    partitions.insert(PartitionOf(key, 4));
    writes.push_back(Upsert(key, "v"));
  }
  ASSERT_GT(partitions.size(), 1u);
  auto done = Unit(std::move(writes));
  ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  std::lock_guard<std::mutex> lock(state_->mu);
  ASSERT_EQ(state_->batch_sizes.size(), 1u);
  EXPECT_EQ(state_->batch_sizes[0], 20u);
  EXPECT_EQ(committer_->queued(), 0u);
}

TEST_F(CommitterTest, PerKeyOrderHoldsAcrossABarrier) {
  CommitterOptions options;
  options.partitions = 4;
  Open(options);
  // Two keys in different partitions.
  std::string a = "a", b;
  for (int i = 0; b.empty(); ++i) {
    std::string candidate = "b" + std::to_string(i);
    if (PartitionOf(candidate, 4) != PartitionOf(a, 4)) b = candidate;
  }
  Hold(true);
  auto first = Unit({Upsert(a, "1")});
  auto both = Unit({Upsert(a, "2"), Upsert(b, "2")});
  auto last_b = Unit({Upsert(b, "3")});
  auto last_a = Unit({Upsert(a, "3")});
  Hold(false);
  for (auto* f : {&first, &both, &last_b, &last_a}) {
    ASSERT_EQ(f->wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_TRUE(f->get().ok());
  }
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(state_->rows.at(a).value, "3");
  EXPECT_EQ(state_->rows.at(b).value, "3");
  // The unit's two rows were committed together, after a=1 and before either "3".
  std::vector<std::string> order;
  for (const auto& w : state_->log) order.push_back(w.key + "=" + w.value);
  auto pos = [&](const std::string& s) {
    return std::find(order.begin(), order.end(), s) - order.begin();
  };
  EXPECT_LT(pos(a + "=1"), pos(a + "=2"));
  EXPECT_EQ(std::abs(pos(a + "=2") - pos(b + "=2")), 1);
  EXPECT_LT(pos(a + "=2"), pos(a + "=3"));
  EXPECT_LT(pos(b + "=2"), pos(b + "=3"));
}

TEST_F(CommitterTest, AUnitIsNeverSplitAcrossBatches) {
  CommitterOptions options;
  options.partitions = 1;
  options.batch_max_rows = 2;
  Open(options);
  Hold(true);
  auto single = Unit({Upsert("x", "1")});
  std::vector<QueuedWrite> five;
  for (int i = 0; i < 5; ++i) five.push_back(Upsert("u" + std::to_string(i), "v"));
  auto unit = Unit(std::move(five));
  Hold(false);
  ASSERT_EQ(unit.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_EQ(single.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_NE(std::find(state_->batch_sizes.begin(), state_->batch_sizes.end(), 5u),
            state_->batch_sizes.end());
}

TEST_F(CommitterTest, ReservationsAreAllOrNothing) {
  CommitterOptions options;
  options.queue_max_writes = 10;
  Open(options);
  EXPECT_TRUE(committer_->Reserve(8));
  EXPECT_FALSE(committer_->Reserve(3));
  EXPECT_EQ(committer_->queued(), 8u);
  EXPECT_TRUE(committer_->Reserve(2));
  committer_->Release(10);
  EXPECT_EQ(committer_->queued(), 0u);
  EXPECT_NE(committer_->QueueFullMessage().find("nothing was applied"), std::string::npos);
}

TEST_F(CommitterTest, OldestPendingAgeFollowsTheOldestUncommittedWrite) {
  Open(CommitterOptions{});
  EXPECT_EQ(committer_->OldestPendingAge(), Clock::Duration::zero());
  Hold(true);
  auto first = Unit({Upsert("a", "1")});
  clock_.Advance(milliseconds(300));
  auto second = Unit({Upsert("b", "1")});
  EXPECT_GE(committer_->OldestPendingAge(), milliseconds(300));
  Hold(false);
  ASSERT_EQ(second.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_EQ(first.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  for (int i = 0; i < 200 && committer_->OldestPendingAge() != Clock::Duration::zero(); ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(committer_->OldestPendingAge(), Clock::Duration::zero());
}

TEST_F(CommitterTest, TheListenerHearsOfACommitBeforeItsWaiterFires) {
  Open(CommitterOptions{});
  auto promise = std::make_shared<std::promise<bool>>();
  auto future = promise->get_future();
  QueuedWrite w = Upsert("k", "v");
  uint64_t seq = w.seq;
  ASSERT_TRUE(committer_->Reserve(1));
  auto waiter = std::make_shared<Waiter>(clock_.Now(), [&, promise, seq](Status) {
    std::lock_guard<std::mutex> lock(listener_.mu);
    promise->set_value(listener_.committed["k"] == seq);
  });
  committer_->Enqueue({{std::move(w)}, waiter});
  ASSERT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(future.get());
}

// A guarded unit (shared coherence's WATCH) commits after what was queued before it, and only
// if its rows are still as expected inside its own transaction.
TEST_F(CommitterTest, AGuardedUnitCommitsAfterEarlierWritesWhenItsRowsHeld) {
  CommitterOptions options;
  options.partitions = 1;  // "other" and "k" queue in one partition
  Open(options);
  Hold(true);
  auto earlier = Unit({Upsert("other", "1")});
  auto decided = std::make_shared<std::atomic<int>>(0);
  auto guarded = Unit({Upsert("k", "tx")}, GuardOn("k", std::nullopt, decided));
  Hold(false);
  ASSERT_EQ(guarded.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(guarded.get().ok());
  EXPECT_TRUE(earlier.get().ok());
  EXPECT_EQ(*decided, 1);
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(state_->guarded_commits, 1);
  ASSERT_EQ(state_->log.size(), 2u);
  EXPECT_EQ(state_->log[0].key, "other") << "the guarded unit overtook an earlier write";
  EXPECT_EQ(state_->rows["k"].value, "tx");
}

TEST_F(CommitterTest, AGuardedUnitWhoseRowChangedCommitsNothingAndSaysSo) {
  Open(CommitterOptions{});
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    // Another daemon's write lands between EXEC's read and its COMMIT.
    state_->before_guard = [](std::map<std::string, DurableValue>& rows) {
      rows["k"] = {"from another daemon", 0};
    };
  }
  auto decided = std::make_shared<std::atomic<int>>(0);
  auto guard = GuardOn("k", std::nullopt, decided);
  auto refused = Unit({Upsert("k", "tx"), Upsert("k2", "tx")}, guard);
  ASSERT_EQ(refused.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Status status = refused.get();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kConflict) << status.error().message;
  EXPECT_TRUE(guard->refused);
  EXPECT_EQ(*decided, 1);
  EXPECT_EQ(committer_->queued(), 0u);
  {
    std::lock_guard<std::mutex> lock(listener_.mu);
    EXPECT_TRUE(listener_.committed.empty());
    EXPECT_EQ(listener_.not_committed.size(), 2u) << "memory was not told to forget the writes";
  }
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(state_->refused_commits, 1);
  EXPECT_EQ(state_->rows["k"].value, "from another daemon");
  EXPECT_EQ(state_->rows.count("k2"), 0u) << "a refused transaction applied part of itself";
}

TEST_F(CommitterTest, AGuardedUnitIsRetriedAndCheckedAgainAfterAFailedCommit) {
  Open(CommitterOptions{});
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->fail_commits = true;
  }
  auto decided = std::make_shared<std::atomic<int>>(0);
  auto guarded = Unit({Upsert("k", "tx")}, GuardOn("k", std::nullopt, decided));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(*decided, 0) << "decided while PostgreSQL was failing";
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->fail_commits = false;
  }
  ASSERT_EQ(guarded.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(guarded.get().ok());
  EXPECT_EQ(*decided, 1);
}

}  // namespace
}  // namespace skydb::store
