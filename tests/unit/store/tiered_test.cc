// What only the tiered store does: group commit, durability modes, outages, eviction, TTL
// persistence without rewriting values.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <future>
#include <sstream>
#include <thread>

#include "harnesses.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;

TEST(TieredStoreTest, SyncAcknowledgesOnlyAfterCommit) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  std::atomic<bool> acked{false};
  h.store().Set({"a", "1", Expiry::None()}, [&](Result<SetReply> r) { acked = r.ok(); });
  // A read of the key waits for the write's COMMIT: no reply reflects an uncommitted write.
  std::atomic<bool> read{false};
  std::optional<std::string> value;
  h.store().Get("a", [&](Result<std::optional<std::string>> r) {
    if (r.ok()) value = *r;
    read = true;
  });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(acked.load());
  EXPECT_FALSE(read.load());
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
  EXPECT_TRUE(WaitFor([&] { return acked.load() && read.load(); }));
  EXPECT_EQ(value, "1");
  std::lock_guard<std::mutex> lock(h.state().mu);
  EXPECT_EQ(h.state().rows.at("a").value, "1");
}

TEST(TieredStoreTest, AsyncAcknowledgesOnEnqueueAndCommitsSoonAfter) {
  FakeTieredHarness h(FakeOptions(Durability::kAsync));
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  ASSERT_TRUE(h.Set("a", "1", Expiry::None()).ok());  // acked although commits are held
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    EXPECT_EQ(h.state().rows.count("a"), 0u);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
  EXPECT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(h.state().mu);
    return h.state().rows.count("a") == 1;
  }));
}

TEST(TieredStoreTest, ConcurrentWritesShareCommits) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  std::atomic<int> acked{0};
  for (int i = 0; i < 100; ++i) {
    h.store().Set({"k" + std::to_string(i), "v", Expiry::None()},
                  [&](Result<SetReply> r) { acked += r.ok() ? 1 : 0; });
  }
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
  ASSERT_TRUE(WaitFor([&] { return acked.load() == 100; }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  // Two writers, each with at most one batch in flight while the rest queued behind it.
  EXPECT_LE(h.state().batch_sizes.size(), 4u);
  EXPECT_EQ(h.store().Stats().committed_rows, 100u);
}

TEST(TieredStoreTest, LatestValuePerKeyWinsWithinABatch) {
  FakeTieredHarness h(FakeOptions(Durability::kAsync));
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(h.Set("same", std::to_string(i), Expiry::None()).ok());
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  EXPECT_EQ(h.state().rows.at("same").value, "49");
  EXPECT_LT(h.state().log.size(), 50u);  // folded, not 50 row writes
}

TEST(TieredStoreTest, RepeatedLongKeysFoldIntoOneRowPerKey) {
  // Keys longer than the small-string buffer live on the heap; folding must keep each key's
  // single row, as PostgreSQL refuses a batch that names a key twice.
  FakeTieredHarness h(FakeOptions(Durability::kAsync));
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  for (int i = 0; i < 300; ++i) {
    std::string key = "key:00000000000" + std::to_string(i % 7);  // 16 bytes: heap-allocated
    ASSERT_TRUE(h.Set(key, "v" + std::to_string(i), Expiry::None()).ok());
    if (i % 3 == 0) {
      ASSERT_TRUE(*h.Expire(key, Expiry::At(h.NowMs() + 100000 + i)));
    }
  }
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  EXPECT_EQ(h.store().Stats().failed_commits, 0u);
  std::lock_guard<std::mutex> lock(h.state().mu);
  EXPECT_EQ(h.state().rows.size(), 7u);
  EXPECT_EQ(h.state().rows.at("key:000000000006").value, "v293");
}

TEST(TieredStoreTest, FailedCommitsTimeOutWaitersThenConvergeWhenBack) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.write_timeout = milliseconds(100);
  FakeTieredHarness h(options);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().fail_commits = true;
  }
  auto promise = std::make_shared<std::promise<Result<SetReply>>>();
  auto future = promise->get_future();
  h.store().Set({"a", "1", Expiry::None()},
                [promise](Result<SetReply> r) { promise->set_value(std::move(r)); });
  // The writer retries in real time; the timeout is judged on the injected clock.
  while (future.wait_for(milliseconds(10)) != std::future_status::ready) {
    h.clock().Advance(milliseconds(50));
  }
  auto result = future.get();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kTimeout);
  EXPECT_NE(result.error().message.find("store.write_timeout"), std::string::npos);
  EXPECT_NE(result.error().message.find("connection refused"), std::string::npos);
  EXPECT_GE(h.store().Stats().write_timeouts, 1u);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().fail_commits = false;
  }
  EXPECT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(h.state().mu);
    return h.state().rows.count("a") == 1;
  }));
  EXPECT_TRUE(h.Set("b", "2", Expiry::None()).ok());
}

TEST(TieredStoreTest, FullQueueFailsFastWithAClearError) {
  TieredOptions options = FakeOptions(Durability::kAsync);
  options.queue_max_writes = 10;
  FakeTieredHarness h(options);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  int accepted = 0;
  Error last;
  for (int i = 0; i < 30; ++i) {
    auto r = h.Set("k" + std::to_string(i), "v", Expiry::None());
    if (r.ok()) {
      ++accepted;
    } else {
      last = r.error();
    }
  }
  EXPECT_LE(accepted, 10);
  EXPECT_EQ(last.code, ErrorCode::kUnavailable);
  EXPECT_NE(last.message.find("write queue full"), std::string::npos);
  EXPECT_EQ(h.store().Count(), accepted);  // a refused write changed nothing
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
}

TEST(TieredStoreTest, TtlOnlyChangesNeverRewriteTheValue) {
  TieredOptions options = FakeOptions(Durability::kSync);
  FakeTieredHarness h(options);
  UnixMillis now = h.NowMs();
  ASSERT_TRUE(h.Set("a", "big-value", Expiry::At(now + 60000)).ok());
  ASSERT_TRUE(*h.Expire("a", Expiry::At(now + 3600000)));
  ASSERT_TRUE(h.GetEx("a", Expiry::At(now + 7200000)).ok());
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  int upserts = 0, touches = 0;
  for (const auto& w : h.state().log) {
    if (w.kind == DurableWrite::Kind::kUpsert) ++upserts;
    if (w.kind == DurableWrite::Kind::kTouch) ++touches;
  }
  EXPECT_EQ(upserts, 1);
  EXPECT_EQ(touches, 2);
  // Persisted deadline: the true one plus the slack — later, never earlier.
  EXPECT_EQ(h.state().rows.at("a").expires_at, now + 7200000 + options.ttl_persist_slack.count());
}

TEST(TieredStoreTest, SmallTtlSlidesWithinTheSlackWriteNothing) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  UnixMillis now = h.NowMs();
  ASSERT_TRUE(h.Set("a", "v", Expiry::At(now + 1800000)).ok());
  for (int i = 1; i <= 10; ++i) {
    h.clock().Advance(milliseconds(1000));
    ASSERT_TRUE(h.GetEx("a", Expiry::At(h.NowMs() + 1800000)).ok());  // slides 1 s each time
  }
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  // The upsert persisted the exact deadline; the first slide persists deadline + 60 s slack;
  // the nine after it stay within the slack and write nothing.
  ASSERT_EQ(h.state().log.size(), 2u);
  EXPECT_EQ(h.state().log[1].kind, DurableWrite::Kind::kTouch);
}

TEST(TieredStoreTest, IdleCleanValuesLeaveMemoryAndComeBackOnRead) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.memory.idle_evict = milliseconds(1000);
  FakeTieredHarness h(options);
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(h.Set("k" + std::to_string(i), "v" + std::to_string(i), Expiry::None()).ok());
  EXPECT_EQ(h.store().Stats().cached_values, 20u);
  h.clock().Advance(milliseconds(1500));
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().cached_values == 0; }));
  EXPECT_EQ(h.store().Stats().evictions_idle, 20u);
  EXPECT_EQ(h.store().Count(), 20);  // evicted, not lost
  EXPECT_EQ(*h.Exists({"k3"}), 1);   // answered from the index, no load
  EXPECT_EQ(**h.Get("k3"), "v3");
  EXPECT_EQ(h.store().Stats().cache_misses, 1u);
  EXPECT_EQ(h.Set("k4", "new", Expiry::None(), SetCondition::kAlways, true)->old_value, "v4");
}

// A session key is a bearer credential: the warning for an indexed key whose row vanished
// (swept by someone else) says what happened without the key.
TEST(TieredStoreTest, AKeyMissingFromPostgresIsDroppedWithoutLoggingIt) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.memory.idle_evict = milliseconds(1000);
  FakeTieredHarness h(options);
  const std::string key = "session:secret-bearer-token-4711";
  ASSERT_TRUE(h.Set(key, "alice", Expiry::None()).ok());
  h.clock().Advance(milliseconds(1500));
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().cached_values == 0; }));
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().rows.erase(key);
  }
  std::ostringstream logged;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(logged);
  spdlog::default_logger()->sinks().push_back(sink);
  auto got = h.Get(key);
  spdlog::default_logger()->sinks().pop_back();
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(h.store().Count(), 0);
  EXPECT_NE(logged.str().find("was not in PostgreSQL"), std::string::npos) << logged.str();
  EXPECT_EQ(logged.str().find("secret-bearer-token"), std::string::npos) << logged.str();
}

TEST(TieredStoreTest, MemoryCapEvictsCleanValuesNeverDirtyOnes) {
  TieredOptions options = FakeOptions(Durability::kAsync);
  options.memory.max_memory_bytes = 64 * 1024;
  FakeTieredHarness h(options);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  std::string value(2080, 'x');
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(h.Set("k" + std::to_string(i), value, Expiry::None()).ok());
  // Nothing is committed yet, so nothing may be evicted, whatever the cap says.
  EXPECT_EQ(h.store().Stats().cached_values, 100u);
  EXPECT_EQ(h.store().Stats().evictions_memory, 0u);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().memory_bytes <= 64 * 1024; }));
  EXPECT_GT(h.store().Stats().evictions_memory, 0u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(**h.Get("k" + std::to_string(i)), value);
}

TEST(TieredStoreTest, CloseFlushesQueuedWrites) {
  auto state_holder = std::make_shared<FakeDurableState>();
  FakeClock clock;
  auto store = NewTieredStore(FakeOptions(Durability::kAsync), clock,
                              std::make_unique<FakeDurable>(state_holder));
  ASSERT_TRUE(store.ok());
  for (int i = 0; i < 1000; ++i) {
    (*store)->Set({"k" + std::to_string(i), "v", Expiry::None()}, [](Result<SetReply>) {});
  }
  ASSERT_TRUE((*store)->Close(std::chrono::seconds(5)).ok());
  EXPECT_EQ(state_holder->rows.size(), 1000u);
  auto refused = Await<SetReply>([&](auto cb) {
    (*store)->Set({"late", "v", Expiry::None()}, cb);
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("shutting down"), std::string::npos);
}

TEST(TieredStoreTest, DurableSweepDeletesOnlyLongExpiredRows) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.durable_sweep_interval = milliseconds(10);
  FakeTieredHarness h(options);
  ASSERT_TRUE(h.Set("short", "v", Expiry::At(h.NowMs() + 1000)).ok());
  ASSERT_TRUE(h.Set("long", "v", Expiry::None()).ok());
  h.clock().Advance(std::chrono::minutes(7));  // past deadline + slack + sweep grace
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(h.state().mu);
    return h.state().rows.count("short") == 0;
  }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  EXPECT_EQ(h.state().rows.count("long"), 1u);
}

// FLUSHALL is a barrier on every writer: the writes queued before it commit first (so none
// brings a key back after it), it is acknowledged only after its own COMMIT in sync mode, and a
// write after it commits after it.
TEST(TieredStoreTest, DeleteAllCommitsAfterEarlierWritesAndBeforeLaterOnes) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.writers = 4;
  FakeTieredHarness h(options);
  ASSERT_TRUE(h.Set("old", "1", Expiry::None()).ok());
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = true;
  }
  std::atomic<int> acked{0};
  for (int i = 0; i < 20; ++i) {
    h.store().Set({"k" + std::to_string(i), "v", Expiry::None()},
                  [&](Result<SetReply> r) { acked += r.ok() ? 1 : 0; });
  }
  std::atomic<bool> flushed{false};
  h.store().DeleteAll([&](Result<int64_t> r) { flushed = r.ok(); });
  std::atomic<bool> later{false};
  h.store().Set({"after", "v", Expiry::None()}, [&](Result<SetReply> r) { later = r.ok(); });
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(flushed.load()) << "a sync FLUSHALL waits for its COMMIT";
  EXPECT_EQ(h.store().Count(), 1) << "memory is cleared at once; the later write is in it";
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().hold_commits = false;
  }
  h.state().cv.notify_all();
  ASSERT_TRUE(WaitFor([&] { return flushed.load() && later.load() && acked.load() == 20; }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  EXPECT_EQ(h.state().delete_alls, 1);
  ASSERT_EQ(h.state().rows.size(), 1u) << "no write before the flush survived it";
  EXPECT_EQ(h.state().rows.count("after"), 1u);
}

TEST(TieredStoreTest, DeleteAllFailsItsReplyWhenPostgresIsDown) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.write_timeout = milliseconds(100);
  FakeTieredHarness h(options);
  ASSERT_TRUE(h.Set("a", "1", Expiry::None()).ok());
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().fail_commits = true;
  }
  auto promise = std::make_shared<std::promise<Result<int64_t>>>();
  auto future = promise->get_future();
  h.store().DeleteAll([promise](Result<int64_t> r) { promise->set_value(std::move(r)); });
  // The writer retries in real time; the timeout is judged on the injected clock.
  for (int i = 0; i < 500 && future.wait_for(milliseconds(10)) != std::future_status::ready; ++i) {
    h.clock().Advance(milliseconds(50));
  }
  ASSERT_EQ(future.wait_for(milliseconds(0)), std::future_status::ready);
  auto r = future.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_NE(r.error().message.find("store.write_timeout"), std::string::npos) << r.error().message;
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().fail_commits = false;
  }
  // The delete stays queued and commits once PostgreSQL is back: memory and it converge.
  EXPECT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(h.state().mu);
    return h.state().rows.empty();
  }));
}

// What GetInPlace answers: the committed value or its absence, at once. It declines what Get
// must wait for or load: a write not yet committed (sync), an evicted value, any key under
// shared coherence (whose row must be read first).
using InPlaceAnswer = std::optional<std::optional<std::string>>;  // nullopt: declined
const InPlaceAnswer kNoSuchKey{std::optional<std::string>()};

InPlaceAnswer InPlace(SessionStore& store, const std::string& key) {
  std::optional<std::string> value;
  bool served = store.GetInPlace(key, [&](const std::string* v) {
    if (v != nullptr) value = *v;
  });
  if (!served) return std::nullopt;
  return InPlaceAnswer(std::move(value));
}

TEST(TieredStoreTest, GetInPlaceAnswersOnlyWhatIsCommittedAndInMemory) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.memory.idle_evict = milliseconds(1000);
  FakeTieredHarness h(options);
  HoldCommits(h.state(), true);
  Pending<SetReply> set;
  h.store().Set({"a", "1", Expiry::None()}, set.cb());
  EXPECT_EQ(InPlace(h.store(), "a"), std::nullopt) << "served a write not yet committed";
  HoldCommits(h.state(), false);
  ASSERT_TRUE(set.get().ok());
  EXPECT_EQ(InPlace(h.store(), "a"), InPlaceAnswer("1"));
  EXPECT_EQ(InPlace(h.store(), "absent"), kNoSuchKey);

  h.clock().Advance(milliseconds(1500));
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().cached_values == 0; }));
  EXPECT_EQ(InPlace(h.store(), "a"), std::nullopt) << "served an evicted value";
  EXPECT_EQ(**h.Get("a"), "1");  // loaded
  EXPECT_EQ(InPlace(h.store(), "a"), InPlaceAnswer("1"));
}

// A key whose deadline has passed is gone at once; every in-place read counts as a hit.
TEST(TieredStoreTest, GetInPlaceEndsAKeyAtItsDeadlineAndCountsEveryHit) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(h.Set("short", "v", Expiry::At(h.NowMs() + 1000)).ok());
  ASSERT_TRUE(h.Set("forever", "w", Expiry::None()).ok());
  uint64_t hits = h.store().Stats().cache_hits;
  EXPECT_EQ(InPlace(h.store(), "short"), InPlaceAnswer("v"));
  h.clock().Advance(milliseconds(999));
  EXPECT_EQ(InPlace(h.store(), "short"), InPlaceAnswer("v"));
  h.clock().Advance(milliseconds(1));
  EXPECT_EQ(InPlace(h.store(), "short"), kNoSuchKey) << "served a key past its deadline";
  EXPECT_EQ(InPlace(h.store(), "forever"), InPlaceAnswer("w"));
  EXPECT_EQ(h.store().Stats().cache_hits, hits + 4);
}

// A SET's bytes are copied into neither memory nor the write it queues: both hold one copy.
TEST(TieredStoreTest, ASetsValueIsOneCopyHeldByMemoryAndByItsWrite) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(h.Set("a", std::string(4096, 'v'), Expiry::None()).ok());
  const char* in_memory = nullptr;
  ASSERT_TRUE(h.store().GetInPlace("a", [&](const std::string* v) { in_memory = v->data(); }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  ASSERT_EQ(h.state().log.size(), 1u);
  EXPECT_EQ(h.state().log[0].value.str().data(), in_memory);
  EXPECT_EQ(h.state().log[0].value, std::string(4096, 'v'));
}

TEST(TieredStoreTest, GetInPlaceDeclinesEveryKeyUnderSharedCoherence) {
  FakeTieredHarness h(FakeOptions(Durability::kSync, /*shared=*/true));
  ASSERT_TRUE(h.Set("a", "1", Expiry::None()).ok());
  EXPECT_EQ(InPlace(h.store(), "a"), std::nullopt);
  EXPECT_EQ(InPlace(h.store(), "absent"), std::nullopt);
}

TEST(TieredStoreTest, GetInPlaceServesAsyncWritesAsGetDoes) {
  FakeTieredHarness h(FakeOptions(Durability::kAsync));
  HoldCommits(h.state(), true);
  ASSERT_TRUE(h.Set("a", "1", Expiry::None()).ok());  // acknowledged before its commit
  EXPECT_EQ(InPlace(h.store(), "a"), InPlaceAnswer("1"));
  HoldCommits(h.state(), false);
}

}  // namespace
}  // namespace skydb::testing
