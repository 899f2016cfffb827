// The group committer on its own, over the fake durable layer: units commit whole (one
// transaction), a shallow queue is one writer's batch and a deep one overlaps commits, per-key
// order holds across concurrent batches, FLUSHALL and guarded units commit alone, reservations
// are all-or-nothing, and the listener hears of a commit before any waiter fires.
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
    for (const auto& key : batch.keys) not_committed.push_back(key);
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
    return {DurableWrite::Of(DurableWrite::Kind::kUpsert, key, value), committer_->NextSeq(),
            KeyHash(key)};
  }
  // Upserts of `prefix`0 .. `prefix`(n-1) to `value`, in that order.
  std::vector<QueuedWrite> Upserts(const std::string& prefix, int n, const std::string& value) {
    std::vector<QueuedWrite> writes;
    for (int i = 0; i < n; ++i) writes.push_back(Upsert(prefix + std::to_string(i), value));
    return writes;
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
  // A guard on `key` expecting `value` (nullopt: no row); `decided` counts its decisions,
  // `refused` is set when one was a refusal.
  std::shared_ptr<CommitGuard> GuardOn(const std::string& key, std::optional<std::string> value,
                                       std::shared_ptr<std::atomic<int>> decided,
                                       std::shared_ptr<std::atomic<bool>> refused = nullptr) {
    auto guard = std::make_shared<CommitGuard>();
    guard->check.keys = {key};
    guard->check.unchanged = [value](const std::vector<std::optional<DurableValue>>& rows) {
      if (!value) return !rows[0].has_value();
      return rows[0].has_value() && rows[0]->value == *value;
    };
    guard->decided = [decided, refused](CommitGuard::Outcome outcome) {
      ++*decided;
      if (refused && outcome == CommitGuard::Outcome::kRefused) *refused = true;
    };
    return guard;
  }
  // Waits until `n` commits are blocked in the held backend.
  bool WaitHeld(int n) {
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->cv.wait_for(lock, std::chrono::seconds(10), [&] { return state_->held == n; });
  }
  int HeldNow() {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->held;
  }
  // Holds the backend, starts one commit of k0 and, once it is held, queues k1..k`n` (each to
  // `value`); on a commit that never started, returns only k0's future (callers check the count).
  std::vector<std::future<Status>> OneRunningThenQueued(int n, const std::string& value = "v") {
    Hold(true);
    std::vector<std::future<Status>> done;
    done.push_back(Unit({Upsert("k0", "v")}));
    if (!WaitHeld(1)) return done;
    for (int i = 1; i <= n; ++i) done.push_back(Unit({Upsert("k" + std::to_string(i), value)}));
    return done;
  }
  // With one commit held (OneRunningThenQueued), no second starts for what waits; then every
  // write of `done` commits once the backend is released.
  void ExpectNoSecondCommitThenRelease(std::vector<std::future<Status>>& done, const char* why) {
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_EQ(HeldNow(), 1) << why;
    Hold(false);
    for (auto& f : done) ExpectReady({&f});
  }
  // With two commits held, releases the backend: every write of `done` commits, in two batches
  // of the sizes `sizes`.
  void ReleaseThenExpectTwoBatchesOf(std::vector<std::future<Status>>& done,
                                     std::set<size_t> sizes) {
    Hold(false);
    for (auto& f : done) ExpectReady({&f});
    auto batches = Batches();
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ((std::set<size_t>{batches[0].size(), batches[1].size()}), sizes);
  }
  // The committed batches, each as its "key=value" rows sorted; in commit order.
  std::vector<std::vector<std::string>> Batches() {
    std::lock_guard<std::mutex> lock(state_->mu);
    std::vector<std::vector<std::string>> batches;
    size_t at = 0;
    for (size_t n : state_->batch_sizes) {
      std::vector<std::string> rows;
      for (size_t i = at; i < at + n; ++i)
        rows.push_back(state_->log[i].key + "=" + state_->log[i].value.str());
      std::sort(rows.begin(), rows.end());
      batches.push_back(std::move(rows));
      at += n;
    }
    return batches;
  }
  // Another daemon writes "k" before every guard check; a unit writing "k" under `guard` and a
  // plain one writing "other" queue behind a running commit, so they become one batch. Expects
  // the first refused (kConflict) and the second committed.
  void RefusedBesidePlainInOneBatch(std::shared_ptr<CommitGuard> guard) {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->before_guard = [](std::map<std::string, DurableValue>& rows) {
        DurableValue row;
        row.value = "from another daemon";
        rows["k"] = row;
      };
    }
    Hold(true);
    auto running = Unit({Upsert("first", "v")});
    ASSERT_TRUE(WaitHeld(1));
    auto refused = Unit({Upsert("k", "tx")}, std::move(guard));
    auto plain = Unit({Upsert("other", "v")});
    Hold(false);
    ExpectReady({&running});
    ASSERT_EQ(refused.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(refused.get().error().code, ErrorCode::kConflict);
    ExpectReady({&plain});
  }
  static void ExpectReady(std::vector<std::future<Status>*> futures) {
    for (auto* f : futures) {
      ASSERT_EQ(f->wait_for(std::chrono::seconds(10)), std::future_status::ready);
      EXPECT_TRUE(f->get().ok());
    }
  }

  FakeClock clock_;
  std::shared_ptr<FakeDurableState> state_ = std::make_shared<FakeDurableState>();
  std::unique_ptr<FakeDurable> durable_;
  RecordingListener listener_;
  std::unique_ptr<GroupCommitter> committer_;
};

TEST_F(CommitterTest, AMultiKeyUnitCommitsInOneTransaction) {
  CommitterOptions options;
  options.writers = 4;
  options.overlap_rows = 1;
  Open(options);
  auto done = Unit(Upserts("k", 20, "v"));
  ExpectReady({&done});
  std::lock_guard<std::mutex> lock(state_->mu);
  ASSERT_EQ(state_->batch_sizes.size(), 1u);
  EXPECT_EQ(state_->batch_sizes[0], 20u);
  EXPECT_EQ(committer_->queued(), 0u);
}

// While one commit runs, fewer than overlap_rows waiting writes start no second commit: they
// form the next batch, one WAL flush for all of them.
TEST_F(CommitterTest, AShallowQueueWaitsForTheRunningCommitAndBecomesOneBatch) {
  CommitterOptions options;
  options.writers = 4;
  options.overlap_rows = 64;
  Open(options);
  auto done = OneRunningThenQueued(10);
  ASSERT_EQ(done.size(), 11u);
  ExpectNoSecondCommitThenRelease(done, "a second commit started for a shallow queue");
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(state_->batch_sizes, (std::vector<size_t>{1, 10}));
}

TEST_F(CommitterTest, ASecondCommitOverlapsTheFirstWhenEnoughWritesWait) {
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 8;
  Open(options);
  auto done = OneRunningThenQueued(8);
  ASSERT_EQ(done.size(), 9u);
  EXPECT_TRUE(WaitHeld(2)) << "no second commit while 8 writes waited";
  ReleaseThenExpectTwoBatchesOf(done, {1, 8});
}

// Large values: a few of them are enough for a second commit, whatever overlap_rows says.
TEST_F(CommitterTest, ASecondCommitOverlapsTheFirstWhenEnoughBytesWait) {
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 64;
  options.overlap_bytes = 1000;
  Open(options);
  auto done = OneRunningThenQueued(2, std::string(600, 'x'));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_TRUE(WaitHeld(2)) << "no second commit while 1,200 bytes waited";
  ReleaseThenExpectTwoBatchesOf(done, {1, 2});
}

TEST_F(CommitterTest, FewerBytesThanOverlapBytesStartNoSecondCommit) {
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 64;
  options.overlap_bytes = 1000;
  Open(options);
  auto done = OneRunningThenQueued(1, std::string(600, 'x'));
  ASSERT_EQ(done.size(), 2u);
  ExpectNoSecondCommitThenRelease(done, "a second commit started for 600 waiting bytes");
}

// A guarded unit's writes stop counting as waiting once it is taken: afterwards one queued
// write behind a running commit still starts no second commit.
TEST_F(CommitterTest, AGuardedUnitLeavesNothingCountedAsWaiting) {
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 64;
  Open(options);
  auto decided = std::make_shared<std::atomic<int>>(0);
  auto guarded = Unit(Upserts("g", 64, "tx"), GuardOn("g0", std::nullopt, decided));
  ExpectReady({&guarded});
  auto done = OneRunningThenQueued(1);
  ASSERT_EQ(done.size(), 2u);
  ExpectNoSecondCommitThenRelease(done, "a second commit started for one waiting write");
}

// Async durability: a batch's worth of bytes ends the gather, as a batch's worth of rows does.
TEST_F(CommitterTest, AGatherEndsWhenABatchWorthOfBytesWaits) {
  CommitterOptions options;
  options.writers = 1;
  options.gather = true;
  options.flush_interval = milliseconds(30000);
  options.batch_max_bytes = 1000;
  Open(options);
  auto a = Unit({Upsert("a", std::string(500, 'x'))});
  auto b = Unit({Upsert("b", std::string(500, 'x'))});
  ASSERT_EQ(a.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the writer gathered on while a batch's worth of bytes waited";
  EXPECT_TRUE(a.get().ok());
}

// Async durability: a writer that gathered for a batch another writer took gathers afresh
// for the next one (it does not take it at once on the old deadline).
TEST_F(CommitterTest, AWriterThatLostABatchGathersAfreshForTheNext) {
  constexpr auto kFlush = milliseconds(1000);
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 64;
  options.gather = true;
  options.flush_interval = kFlush;
  Open(options);
  Hold(true);
  auto x = Unit({Upsert("x", "v")});
  ASSERT_TRUE(WaitHeld(1));  // x is taken after its own gather
  auto y = Unit({Upsert("y", "v")});
  // x commits; both writers gather for y (a flush_interval from y's arrival); one takes it and
  // is held, the other waits again.
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->hold_commits = false;
  }
  state_->cv.notify_all();
  std::this_thread::sleep_for(milliseconds(100));
  Hold(true);
  ASSERT_TRUE(WaitHeld(1)) << "y's commit did not start";
  std::vector<std::future<Status>> more;
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) more.push_back(Unit({Upsert("z" + std::to_string(i), "v")}));
  ASSERT_TRUE(WaitHeld(2));
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, kFlush / 2) << "64 writes were taken after "
                                << std::chrono::duration_cast<milliseconds>(waited).count()
                                << " ms, without gathering";
  Hold(false);
  ExpectReady({&x, &y});
  for (auto& f : more) ExpectReady({&f});
}

// A key held by a running commit is not in a concurrent batch, nor is any later write of a key
// of a unit that waits for it: the second writer takes only what is free.
TEST_F(CommitterTest, PerKeyOrderHoldsAcrossConcurrentBatches) {
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 3;  // the three writes waiting for a=1 then fit one batch
  Open(options);
  Hold(true);
  auto a1 = Unit({Upsert("a", "1")});
  ASSERT_TRUE(WaitHeld(1));
  auto ab2 = Unit({Upsert("a", "2"), Upsert("b", "2")});  // waits for a=1
  auto b3 = Unit({Upsert("b", "3")});                     // waits for the unit before it
  auto cd = Unit({Upsert("c", "1"), Upsert("d", "1")});   // free
  EXPECT_TRUE(WaitHeld(2)) << "the free unit did not overlap the running commit";
  Hold(false);
  ExpectReady({&a1, &ab2, &b3, &cd});
  auto batches = Batches();
  std::string seen;
  for (const auto& b : batches) seen += "[" + ::testing::PrintToString(b) + "]";
  ASSERT_EQ(batches.size(), 3u) << seen;
  std::vector<std::string> a1_batch{"a=1"}, cd_batch{"c=1", "d=1"}, rest_batch{"a=2", "b=3"};
  auto at = [&](const std::vector<std::string>& b) {
    return std::find(batches.begin(), batches.end(), b) - batches.begin();
  };
  ASSERT_LT(at(a1_batch), 3) << seen;
  ASSERT_LT(at(cd_batch), 3) << seen;
  ASSERT_LT(at(rest_batch), 3) << seen;  // the waiting units, folded into one batch
  EXPECT_LT(at(a1_batch), at(rest_batch)) << seen;
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(state_->rows.at("a").value, "2");
  EXPECT_EQ(state_->rows.at("b").value, "3");
}

TEST_F(CommitterTest, AFlushAllWaitsForRunningCommitsAndNothingOvertakesIt) {
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 1;
  Open(options);
  Hold(true);
  auto before = Unit({Upsert("a", "1")});
  ASSERT_TRUE(WaitHeld(1));
  auto promise = std::make_shared<std::promise<Status>>();
  auto flushed = promise->get_future();
  committer_->Enqueue({{},
                       std::make_shared<Waiter>(
                           clock_.Now(), [promise](Status s) { promise->set_value(std::move(s)); }),
                       true});
  auto after = Unit({Upsert("b", "1")});
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(HeldNow(), 1) << "a commit started beside a FLUSHALL";
  Hold(false);
  ExpectReady({&before, &flushed, &after});
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(state_->delete_alls, 1);
  EXPECT_EQ(state_->rows.count("a"), 0u) << "a write queued before FLUSHALL survived it";
  EXPECT_EQ(state_->rows.count("b"), 1u) << "a write queued after FLUSHALL was deleted by it";
}

TEST_F(CommitterTest, AUnitIsNeverSplitAcrossBatches) {
  CommitterOptions options;
  options.writers = 1;
  options.batch_max_rows = 2;
  Open(options);
  Hold(true);
  auto single = Unit({Upsert("x", "1")});
  auto unit = Unit(Upserts("u", 5, "v"));
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

// A guarded unit (shared coherence's WATCH) commits after what was queued before it on its keys,
// and only if its watched rows are still as expected inside its own transaction. (Units on
// other keys may commit in either order: they can share a batch or overlap in two writers.)
TEST_F(CommitterTest, AGuardedUnitCommitsAfterEarlierWritesOfItsKeysWhenItsRowsHeld) {
  CommitterOptions options;
  options.writers = 2;
  options.overlap_rows = 1;  // the second writer would take "k" at once if it could
  Open(options);
  Hold(true);
  auto earlier = Unit({Upsert("k", "1"), Upsert("other", "1")});
  auto decided = std::make_shared<std::atomic<int>>(0);
  auto guarded = Unit({Upsert("k", "tx")}, GuardOn("watched", std::nullopt, decided));
  Hold(false);
  ASSERT_EQ(guarded.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(guarded.get().ok());
  EXPECT_TRUE(earlier.get().ok());
  EXPECT_EQ(*decided, 1);
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(state_->guarded_commits, 1);
  std::vector<std::string> writes_of_k;
  for (const auto& w : state_->log) {
    if (w.key == "k") writes_of_k.push_back(w.value.str());
  }
  EXPECT_EQ(writes_of_k, (std::vector<std::string>{"1", "tx"}))
      << "the guarded unit overtook an earlier write of its key";
  EXPECT_EQ(state_->rows["k"].value, "tx");
}

TEST_F(CommitterTest, AGuardedUnitWhoseRowChangedCommitsNothingAndSaysSo) {
  Open(CommitterOptions{});
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    // Another daemon's write lands between EXEC's read and its COMMIT.
    state_->before_guard = [](std::map<std::string, DurableValue>& rows) {
      DurableValue row;
      row.value = "from another daemon";
      rows["k"] = row;
    };
  }
  auto decided = std::make_shared<std::atomic<int>>(0);
  auto was_refused = std::make_shared<std::atomic<bool>>(false);
  auto guard = GuardOn("k", std::nullopt, decided, was_refused);
  auto refused = Unit({Upsert("k", "tx"), Upsert("k2", "tx")}, guard);
  ASSERT_EQ(refused.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Status status = refused.get();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kConflict) << status.error().message;
  EXPECT_TRUE(*was_refused);
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

// Another daemon's next write must not win every race: a refused unit hears so as soon as its
// rows are checked, before the COMMIT of the rest of its batch (a WAL flush) ends.
TEST_F(CommitterTest, ARefusedUnitIsDecidedBeforeItsBatchsCommitEnds) {
  Open(CommitterOptions{});
  auto decided = std::make_shared<std::atomic<int>>(0);
  auto was_refused = std::make_shared<std::atomic<bool>>(false);
  std::optional<int> decided_before_commit_ended;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->after_guards = [&] { decided_before_commit_ended = decided->load(); };
  }
  RefusedBesidePlainInOneBatch(GuardOn("k", std::nullopt, decided, was_refused));
  EXPECT_TRUE(*was_refused);
  EXPECT_EQ(*decided, 1);
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(decided_before_commit_ended, 1) << "the refusal waited for the batch's COMMIT";
  EXPECT_EQ(state_->rows["k"].value, "from another daemon");
  EXPECT_EQ(state_->rows["other"].value, "v");
  EXPECT_EQ(committer_->queued(), 0u);
}

// A batch that fails after its refused units were settled is retried without their writes.
TEST_F(CommitterTest, ARetriedBatchLeavesOutTheUnitsRefusedBeforeItFailed) {
  Open(CommitterOptions{});
  auto decided = std::make_shared<std::atomic<int>>(0);
  int commits_failed = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->after_guards = [&] {
      if (commits_failed++ == 0) state_->fail_after_guards = true;
    };
  }
  RefusedBesidePlainInOneBatch(GuardOn("k", std::nullopt, decided));
  EXPECT_EQ(*decided, 1);
  std::lock_guard<std::mutex> lock(state_->mu);
  EXPECT_EQ(commits_failed, 1) << "the retry checked the refused unit's guard again";
  EXPECT_EQ(state_->refused_commits, 1);
  EXPECT_EQ(state_->rows["k"].value, "from another daemon") << "a refused write was retried";
  EXPECT_EQ(state_->rows["other"].value, "v");
  EXPECT_EQ(committer_->queued(), 0u);
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
