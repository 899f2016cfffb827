// The store's guarantees under attack: deadlines saturate instead of overflowing; no reply
// reflects a write that is not committed (sync); a deadline that shortens a key's life is
// committed before it is acknowledged; async's loss window holds while PostgreSQL stalls; a
// multi-key write is applied whole, in one commit, or not at all.
#include <limits>
#include <thread>

#include "harnesses.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
constexpr UnixMillis kMax = std::numeric_limits<UnixMillis>::max();

UnixMillis PersistedDeadline(FakeTieredHarness& h, const std::string& key) {
  std::lock_guard<std::mutex> lock(h.state().mu);
  auto it = h.state().rows.find(key);
  return it == h.state().rows.end() ? -1 : it->second.expires_at;
}

TEST(DeadlineTest, TheLargestDeadlinesKeepTheKeyAcrossARestart) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(h.Set("set", "v", Expiry::At(kMax)).ok());
  ASSERT_TRUE(h.Set("expire", "v", Expiry::None()).ok());
  ASSERT_TRUE(*h.Expire("expire", Expiry::At(kMax)));
  ASSERT_TRUE(h.Set("getex", "v", Expiry::At(h.NowMs() + 1000)).ok());
  ASSERT_TRUE(h.GetEx("getex", Expiry::At(kMax - 1)).ok());
  ASSERT_TRUE(h.Set("extend", "v", Expiry::At(h.NowMs() + 1000)).ok());
  ASSERT_TRUE(*h.Expire("extend", Expiry::At(kMax - 30000)));  // plus the slack: saturates
  for (const char* key : {"set", "expire", "getex", "extend"}) {
    EXPECT_GE(PersistedDeadline(h, key), kMax - 30000)
        << key << ": the persisted deadline overflowed";
  }
  h.Restart();
  for (const char* key : {"set", "expire", "getex", "extend"}) {
    EXPECT_EQ(**h.Get(key), "v") << key;
    auto ttl = h.Ttl(key);
    ASSERT_EQ(ttl->state, TtlReply::State::kExpiring) << key;
    EXPECT_GT(ttl->remaining_ms, int64_t{1} << 62) << key;
  }
}

TEST(InFlightTest, RepliesOnAKeyWithAWriteInFlightWaitForItsCommit) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(h.Set("other", "committed", Expiry::None()).ok());
  HoldCommits(h.state(), true);
  Pending<SetReply> a_set;
  h.store().Set({"sess", "alice", Expiry::At(h.NowMs() + 100000)}, a_set.cb());
  Pending<std::optional<std::string>> b_get;
  Pending<SetReply> b_nx;
  Pending<bool> b_expire;
  Pending<TtlReply> b_ttl;
  Pending<int64_t> b_exists;
  h.store().Get("sess", b_get.cb());
  h.store().Set({"sess", "bob", Expiry::None(), SetCondition::kIfAbsent}, b_nx.cb());
  h.store().Expire("sess", Expiry::At(h.NowMs() + 50000), {}, b_expire.cb());
  h.store().Ttl("sess", b_ttl.cb());
  h.store().Exists({"sess"}, b_exists.cb());
  // A key with no write in flight is answered at once, from memory.
  EXPECT_EQ(**h.Get("other"), "committed");
  std::this_thread::sleep_for(milliseconds(50));
  for (bool answered : {a_set.answered(), b_get.answered(), b_nx.answered(), b_expire.answered(),
                        b_ttl.answered(), b_exists.answered()}) {
    EXPECT_FALSE(answered) << "a reply reflected a write that is not committed";
  }
  HoldCommits(h.state(), false);
  EXPECT_TRUE(a_set.get().ok());
  EXPECT_EQ(**b_get.get(), "alice");
  EXPECT_FALSE(b_nx.get()->applied);
  EXPECT_TRUE(*b_expire.get());
  EXPECT_EQ(b_ttl.get()->state, TtlReply::State::kExpiring);
  EXPECT_EQ(*b_exists.get(), 1);
}

TEST(InFlightTest, AReadOfAWriteThatTimedOutFailsUntilItCommits) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.write_timeout = milliseconds(100);
  FakeTieredHarness h(options);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().fail_commits = true;
  }
  Pending<SetReply> set;
  h.store().Set({"k", "v", Expiry::None()}, set.cb());
  Pending<std::optional<std::string>> get;
  h.store().Get("k", get.cb());
  while (!get.answered(milliseconds(10))) h.clock().Advance(milliseconds(50));
  ASSERT_FALSE(set.get().ok());
  auto read = get.get();
  ASSERT_FALSE(read.ok()) << "a read answered from a write that was never committed";
  EXPECT_NE(read.error().message.find("store.write_timeout"), std::string::npos);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().fail_commits = false;
  }
  // The write stays queued and commits once PostgreSQL is back; then reads are served.
  EXPECT_TRUE(WaitFor([&] {
    auto r = h.Get("k");
    return r.ok() && r->has_value();
  }));
}

TEST(InFlightTest, AQueuedDeleteIsNotReportedUntilCommitted) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(h.Set("k", "v", Expiry::None()).ok());
  HoldCommits(h.state(), true);
  Pending<int64_t> del;
  h.store().Delete({"k"}, del.cb());
  Pending<std::optional<std::string>> get;
  h.store().Get("k", get.cb());
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_FALSE(get.answered());
  HoldCommits(h.state(), false);
  EXPECT_EQ(*del.get(), 1);
  EXPECT_FALSE(get.get()->has_value());
}

TEST(ShortenedTtlTest, ASoonerDeadlineIsCommittedExactlyBeforeItIsAcknowledged) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  UnixMillis now = h.NowMs();
  ASSERT_TRUE(h.Set("k", "v", Expiry::At(now + 62000)).ok());
  HoldCommits(h.state(), true);
  Pending<bool> expire;
  h.store().Expire("k", Expiry::At(now + 2000), {}, expire.cb());
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_FALSE(expire.answered()) << "a shorter TTL was acknowledged before its commit";
  HoldCommits(h.state(), false);
  EXPECT_TRUE(*expire.get());
  EXPECT_EQ(PersistedDeadline(h, "k"),
            now + 2000);  // exact: a crash cannot bring the key back for longer
  h.Restart();
  h.clock().Advance(milliseconds(2500));
  EXPECT_FALSE(h.Get("k")->has_value());
}

TEST(ShortenedTtlTest, ExtensionsStayCoarse) {
  TieredOptions options = FakeOptions(Durability::kSync);
  FakeTieredHarness h(options);
  UnixMillis now = h.NowMs();
  ASSERT_TRUE(h.Set("k", "v", Expiry::At(now + 1800000)).ok());
  ASSERT_TRUE(*h.Expire("k", Expiry::At(now + 1801000)));  // longer: persisted with the slack
  ASSERT_TRUE(*h.Expire("k", Expiry::At(now + 1802000)));  // within the slack: nothing written
  ASSERT_TRUE(*h.Expire("k", Expiry::At(now + 1790000)));  // sooner: written exactly
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  ASSERT_EQ(h.state().log.size(), 3u);
  EXPECT_EQ(h.state().log[1].expires_at, now + 1801000 + options.ttl_persist_slack.count());
  EXPECT_EQ(h.state().log[2].expires_at, now + 1790000);
}

TEST(AsyncLagTest, WritesWaitForTheirCommitOnceTheOldestIsOlderThanTheBound) {
  TieredOptions options = FakeOptions(Durability::kAsync);
  options.async_max_lag = milliseconds(100);
  FakeTieredHarness h(options);
  HoldCommits(h.state(), true);
  Pending<SetReply> early;
  h.store().Set({"early", "v", Expiry::None()}, early.cb());
  EXPECT_TRUE(early.answered()) << "async acknowledges on enqueue while the lag is small";
  h.clock().Advance(milliseconds(150));  // PostgreSQL stalls past the bound
  Pending<SetReply> late;
  h.store().Set({"late", "v", Expiry::None()}, late.cb());
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_FALSE(late.answered()) << "acknowledged beyond store.async_max_lag";
  HoldCommits(h.state(), false);
  EXPECT_TRUE(late.get().ok());
  std::lock_guard<std::mutex> lock(h.state().mu);
  EXPECT_EQ(h.state().rows.count("late"), 1u);
}

TEST(MultiKeyTest, ARefusedDeleteChangesNothing) {
  TieredOptions options = FakeOptions(Durability::kAsync);
  options.queue_max_writes = 100;
  FakeTieredHarness h(options);
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back("k" + std::to_string(i));
  for (const auto& k : keys) ASSERT_TRUE(h.Set(k, "v", Expiry::None()).ok());
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  HoldCommits(h.state(), true);
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(h.Set("filler" + std::to_string(i), "v").ok());
  auto refused = h.Del(keys);  // 60 queued + 50 > 100
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("nothing was applied"), std::string::npos);
  EXPECT_EQ(*h.Exists(keys), 50);
  HoldCommits(h.state(), false);
  ASSERT_TRUE(WaitFor([&] { return h.store().Stats().queue_depth == 0; }));
  std::lock_guard<std::mutex> lock(h.state().mu);
  for (const auto& k : keys) EXPECT_EQ(h.state().rows.count(k), 1u) << k;
}

TEST(MultiKeyTest, AMultiKeyDeleteIsOneCommit) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));  // two writers
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) keys.push_back("k" + std::to_string(i));
  for (const auto& k : keys) ASSERT_TRUE(h.Set(k, "v", Expiry::None()).ok());
  size_t batches_before = 0;
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    batches_before = h.state().batch_sizes.size();
  }
  EXPECT_EQ(*h.Del(keys), 50);
  std::lock_guard<std::mutex> lock(h.state().mu);
  ASSERT_EQ(h.state().batch_sizes.size(), batches_before + 1);
  EXPECT_EQ(h.state().batch_sizes.back(), 50u);
  EXPECT_TRUE(h.state().rows.empty());
}

}  // namespace
}  // namespace skydb::testing
