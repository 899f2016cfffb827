#include "support/store_suite.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <thread>

namespace skydb::testing {

using std::chrono::milliseconds;
using std::chrono::seconds;

Result<SetReply> StoreHarness::Set(const std::string& key, const std::string& value, Expiry expiry,
                                   SetCondition condition, bool return_old) {
  SetRequest request{key, value, expiry, condition, return_old};
  return Await<SetReply>([&](auto cb) { store().Set(request, cb); });
}
// Every GET of the suite also asks GetInPlace: whenever it answers, it answers as Get does.
Result<std::optional<std::string>> StoreHarness::Get(const std::string& key) {
  std::optional<std::string> in_place;
  bool served = store().GetInPlace(key, [&](const std::string* value) {
    if (value != nullptr) in_place = *value;
  });
  auto got = Await<std::optional<std::string>>([&](auto cb) { store().Get(key, cb); });
  if (served && got.ok()) {
    EXPECT_EQ(in_place, *got) << "GetInPlace and Get disagree";
  }
  return got;
}
Result<std::optional<std::string>> StoreHarness::GetEx(const std::string& key,
                                                       std::optional<Expiry> change) {
  return Await<std::optional<std::string>>([&](auto cb) { store().GetEx(key, change, cb); });
}
Result<std::optional<std::string>> StoreHarness::GetDel(const std::string& key) {
  return Await<std::optional<std::string>>([&](auto cb) { store().GetDel(key, cb); });
}
Result<int64_t> StoreHarness::Del(std::vector<std::string> keys) {
  return Await<int64_t>([&](auto cb) { store().Delete(keys, cb); });
}
Result<int64_t> StoreHarness::Exists(std::vector<std::string> keys) {
  return Await<int64_t>([&](auto cb) { store().Exists(keys, cb); });
}
Result<bool> StoreHarness::Expire(const std::string& key, Expiry expiry,
                                  ExpireCondition condition) {
  return Await<bool>([&](auto cb) { store().Expire(key, expiry, condition, cb); });
}
Result<IncrReply> StoreHarness::Incr(const std::string& key, int64_t by) {
  IncrRequest request = IncrRequest::Integer(key, by);
  return Await<IncrReply>([&](auto cb) { store().Increment(request, cb); });
}
Result<IncrReply> StoreHarness::IncrFloat(const std::string& key, long double by) {
  IncrRequest request = IncrRequest::Float(key, by);
  return Await<IncrReply>([&](auto cb) { store().Increment(request, cb); });
}
Result<int64_t> StoreHarness::DeleteAll() {
  return Await<int64_t>([&](auto cb) { store().DeleteAll(cb); });
}
Result<TtlReply> StoreHarness::Ttl(const std::string& key) {
  return Await<TtlReply>([&](auto cb) { store().Ttl(key, cb); });
}
Result<ScanReply> StoreHarness::Scan(uint64_t cursor, const std::string& pattern, size_t count) {
  return Await<ScanReply>([&](auto cb) { store().Scan(cursor, pattern, count, std::nullopt, cb); });
}
std::vector<std::string> StoreHarness::ScanAll(const std::string& pattern, size_t count) {
  std::vector<std::string> keys;
  uint64_t cursor = 0;
  for (int calls = 0; calls < 1000000; ++calls) {
    auto page = Scan(cursor, pattern, count);
    if (!page.ok()) break;
    keys.insert(keys.end(), page->keys.begin(), page->keys.end());
    cursor = page->next_cursor;
    if (cursor == 0) break;
  }
  return keys;
}
UnixMillis StoreHarness::NowMs() const {
  auto& self = const_cast<StoreHarness&>(*this);
  return std::chrono::duration_cast<milliseconds>(self.clock().WallNow().time_since_epoch())
      .count();
}

namespace {

std::string AllBytes() {
  std::string s;
  for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  return s;
}

TEST_P(StoreBehaviour, SetThenGetRoundTrips) {
  ASSERT_TRUE(h().Set("session:1", "hello")->applied);
  EXPECT_EQ(**h().Get("session:1"), "hello");
  EXPECT_FALSE(h().Get("session:2")->has_value());
  ExpectCount(1);
}

TEST_P(StoreBehaviour, BinaryKeysAndValuesWithEveryByteRoundTrip) {
  std::string key = "k\0\r\n\"'\\" + AllBytes().substr(0, 200);
  std::string value = AllBytes() + AllBytes() + std::string("\0tail", 5);
  ASSERT_TRUE(h().Set(key, value).ok());
  EXPECT_EQ(**h().Get(key), value);
  EXPECT_FALSE(h().Get(key.substr(0, 1))->has_value());  // NUL does not truncate the key
}

TEST_P(StoreBehaviour, OverwriteKeepsOneSession) {
  ASSERT_TRUE(h().Set("a", "1").ok());
  ASSERT_TRUE(h().Set("a", "2").ok());
  EXPECT_EQ(**h().Get("a"), "2");
  ExpectCount(1);
}

TEST_P(StoreBehaviour, NxSetsOnlyAbsentXxOnlyPresent) {
  EXPECT_FALSE(h().Set("a", "x", Expiry::Default(), SetCondition::kIfPresent)->applied);
  EXPECT_FALSE(h().Get("a")->has_value());
  EXPECT_TRUE(h().Set("a", "1", Expiry::Default(), SetCondition::kIfAbsent)->applied);
  EXPECT_FALSE(h().Set("a", "2", Expiry::Default(), SetCondition::kIfAbsent)->applied);
  EXPECT_EQ(**h().Get("a"), "1");
  EXPECT_TRUE(h().Set("a", "3", Expiry::Default(), SetCondition::kIfPresent)->applied);
  EXPECT_EQ(**h().Get("a"), "3");
}

TEST_P(StoreBehaviour, SetGetReturnsTheOldValue) {
  auto first = h().Set("a", "1", Expiry::Default(), SetCondition::kAlways, true);
  EXPECT_FALSE(first->old_value.has_value());
  auto second = h().Set("a", "2", Expiry::Default(), SetCondition::kAlways, true);
  EXPECT_EQ(second->old_value, "1");
  // NX with GET on an existing key: not applied, old value still returned (Redis 7).
  auto third = h().Set("a", "3", Expiry::Default(), SetCondition::kIfAbsent, true);
  EXPECT_FALSE(third->applied);
  EXPECT_EQ(third->old_value, "2");
}

TEST_P(StoreBehaviour, DefaultTtlAppliesAndNoneMeansNoExpiry) {
  ASSERT_TRUE(h().Set("a", "1").ok());
  auto ttl = h().Ttl("a");
  ASSERT_EQ(ttl->state, TtlReply::State::kExpiring);
  EXPECT_GT(ttl->remaining_ms, 0);
  EXPECT_LE(ttl->remaining_ms, 30 * 60 * 1000);
  ASSERT_TRUE(h().Set("b", "1", Expiry::None()).ok());
  EXPECT_EQ(h().Ttl("b")->state, TtlReply::State::kNoExpiry);
  EXPECT_EQ(h().Ttl("missing")->state, TtlReply::State::kMissing);
  ExpectExpiring(1);  // exact, like the session count
  ASSERT_TRUE(*h().Expire("b", Expiry::At(h().NowMs() + 5000)));
  ExpectExpiring(2);
  ASSERT_EQ(*h().Del({"a"}), 1);
  ExpectExpiring(1);
}

TEST_P(StoreBehaviour, ExpiryIsExactlyAtTheDeadline) {
  UnixMillis deadline = h().NowMs() + 1000;
  ASSERT_TRUE(h().Set("a", "1", Expiry::At(deadline)).ok());
  h().clock().Advance(milliseconds(999));
  EXPECT_EQ(**h().Get("a"), "1");
  EXPECT_EQ(h().Ttl("a")->remaining_ms, 1);
  h().clock().Advance(milliseconds(1));
  EXPECT_FALSE(h().Get("a")->has_value());
  EXPECT_EQ(h().Ttl("a")->state, TtlReply::State::kMissing);
  EXPECT_EQ(*h().Exists({"a"}), 0);
  ExpectCount(0);
}

TEST_P(StoreBehaviour, CountFollowsSetExpiryAndDelete) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(h().Set("k" + std::to_string(i), "v", Expiry::At(h().NowMs() + 1000 + i)).ok());
  }
  ASSERT_TRUE(h().Set("forever", "v", Expiry::None()).ok());
  ExpectCount(11);
  EXPECT_EQ(*h().Del({"k0", "k1", "nope"}), 2);
  ExpectCount(9);
  h().clock().Advance(milliseconds(1005));  // k2..k5 expire at +1002..+1005, k6.. later
  EXPECT_EQ(*h().Exists({"k2", "k3", "k4", "k5", "k6"}), 1);
  h().clock().Advance(seconds(1));
  // Expired keys leave the count when read or swept; a scan sees none of them.
  EXPECT_EQ(h().ScanAll(), std::vector<std::string>{"forever"});
  for (int i = 0; i < 10; ++i) (void)h().Get("k" + std::to_string(i));
  ExpectCount(1);
}

TEST_P(StoreBehaviour, KeepTtlKeepsTheDeadline) {
  UnixMillis deadline = h().NowMs() + 5000;
  ASSERT_TRUE(h().Set("a", "1", Expiry::At(deadline)).ok());
  h().clock().Advance(milliseconds(1000));
  ASSERT_TRUE(h().Set("a", "2", Expiry::Keep()).ok());
  EXPECT_EQ(h().Ttl("a")->remaining_ms, 4000);
  EXPECT_EQ(**h().Get("a"), "2");
  ASSERT_TRUE(h().Set("new", "x", Expiry::Keep()).ok());  // nothing to keep: no expiry
  EXPECT_EQ(h().Ttl("new")->state, TtlReply::State::kNoExpiry);
}

TEST_P(StoreBehaviour, ExpireSetsPersistClearsPastDeadlineDeletes) {
  ASSERT_TRUE(h().Set("a", "1", Expiry::None()).ok());
  EXPECT_FALSE(*h().Expire("a", Expiry::None()));  // PERSIST on a key without a deadline
  EXPECT_TRUE(*h().Expire("a", Expiry::At(h().NowMs() + 10000)));
  EXPECT_EQ(h().Ttl("a")->remaining_ms, 10000);
  EXPECT_TRUE(*h().Expire("a", Expiry::None()));
  EXPECT_EQ(h().Ttl("a")->state, TtlReply::State::kNoExpiry);
  EXPECT_TRUE(*h().Expire("a", Expiry::At(h().NowMs() - 1)));
  EXPECT_FALSE(h().Get("a")->has_value());
  EXPECT_FALSE(*h().Expire("missing", Expiry::At(h().NowMs() + 1000)));
  ExpectCount(0);
}

TEST_P(StoreBehaviour, SetWithPastDeadlineRemovesTheKey) {
  ASSERT_TRUE(h().Set("a", "1").ok());
  ASSERT_TRUE(h().Set("a", "2", Expiry::At(h().NowMs() - 5)).ok());
  EXPECT_FALSE(h().Get("a")->has_value());
  ExpectCount(0);
}

TEST_P(StoreBehaviour, GetExSlidesTheTtlWithoutChangingTheValue) {
  ASSERT_TRUE(h().Set("a", "v", Expiry::At(h().NowMs() + 1000)).ok());
  h().clock().Advance(milliseconds(900));
  EXPECT_EQ(**h().GetEx("a", Expiry::At(h().NowMs() + 1000)), "v");
  h().clock().Advance(milliseconds(900));
  EXPECT_EQ(**h().Get("a"), "v");  // alive past the first deadline
  EXPECT_EQ(**h().GetEx("a", Expiry::None()), "v");
  EXPECT_EQ(h().Ttl("a")->state, TtlReply::State::kNoExpiry);
  EXPECT_EQ(**h().GetEx("a", std::nullopt), "v");
  EXPECT_FALSE(h().GetEx("missing", Expiry::None())->has_value());
}

TEST_P(StoreBehaviour, GetDelReturnsAndRemoves) {
  ASSERT_TRUE(h().Set("a", "v").ok());
  EXPECT_EQ(**h().GetDel("a"), "v");
  EXPECT_FALSE(h().GetDel("a")->has_value());
  ExpectCount(0);
}

TEST_P(StoreBehaviour, ExistsCountsRepeatedKeys) {
  ASSERT_TRUE(h().Set("a", "1").ok());
  EXPECT_EQ(*h().Exists({"a", "a", "b"}), 2);
}

TEST_P(StoreBehaviour, OversizedKeyOrValueIsRefusedWithTheLimit) {
  auto big_key = h().Set(std::string(513, 'k'), "v");
  ASSERT_FALSE(big_key.ok());
  EXPECT_EQ(big_key.error().code, ErrorCode::kInvalidArgument);
  auto big_value = h().Set("k", std::string((1 << 20) + 1, 'v'));
  ASSERT_FALSE(big_value.ok());
  EXPECT_NE(big_value.error().message.find("store.max_value_bytes"), std::string::npos);
  ExpectCount(0);
  EXPECT_TRUE(h().Set(std::string(512, 'k'), std::string(1 << 20, 'v')).ok());
}

TEST_P(StoreBehaviour, ScanReturnsEveryKeyOnceAndFiltersByPattern) {
  std::set<std::string> expected;
  for (int i = 0; i < 500; ++i) {
    std::string key = (i % 2 == 0 ? "session:" : "other:") + std::to_string(i);
    ASSERT_TRUE(h().Set(key, "v").ok());
    if (i % 2 == 0) expected.insert(key);
  }
  auto all = h().ScanAll("", 7);
  EXPECT_EQ(all.size(), 500u);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 500u);
  auto sessions = h().ScanAll("session:*", 50);
  EXPECT_EQ(std::set<std::string>(sessions.begin(), sessions.end()), expected);
}

TEST_P(StoreBehaviour, ScanReturnsKeysLiveThroughoutDespiteConcurrentChanges) {
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(h().Set("stable:" + std::to_string(i), "v").ok());
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int churn = 0;
  do {
    auto page = h().Scan(cursor, "", 10);
    ASSERT_TRUE(page.ok());
    seen.insert(page->keys.begin(), page->keys.end());
    cursor = page->next_cursor;
    // Insert and delete other keys between pages.
    ASSERT_TRUE(h().Set("churn:" + std::to_string(churn), "v").ok());
    if (churn > 0) {
      ASSERT_TRUE(h().Del({"churn:" + std::to_string(churn - 1)}).ok());
    }
    ++churn;
  } while (cursor != 0);
  for (int i = 0; i < 300; ++i) EXPECT_TRUE(seen.count("stable:" + std::to_string(i))) << i;
}

TEST_P(StoreBehaviour, ConcurrentWritersEndAtTheLastAcknowledgedValue) {
  // Threads write the same keys at once. Each thread's writes to a key are acknowledged in
  // order, so the final value of a key must be some thread's last write to it, and the durable
  // state after a restart must equal what memory served before it.
  constexpr int kThreads = 8, kWrites = 300, kKeys = 5;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        std::string key = "k" + std::to_string(i % kKeys);
        if (!h().Set(key, std::to_string(t) + ":" + std::to_string(i), Expiry::None()).ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  std::map<std::string, std::string> final_values;
  for (int k = 0; k < kKeys; ++k) {
    std::string key = "k" + std::to_string(k);
    std::set<std::string> last_writes;
    for (int t = 0; t < kThreads; ++t) {
      int last_i = kWrites - kKeys + k;  // the last i with i % kKeys == k
      last_writes.insert(std::to_string(t) + ":" + std::to_string(last_i));
    }
    auto value = h().Get(key);
    ASSERT_TRUE(value.ok() && value->has_value());
    EXPECT_TRUE(last_writes.count(**value)) << key << " = " << **value;
    final_values[key] = **value;
  }
  if (h().durable()) {
    h().Restart();
    for (const auto& [key, value] : final_values) EXPECT_EQ(**h().Get(key), value) << key;
  }
}

TEST_P(StoreBehaviour, ExpireConditionsJudgeTheCurrentDeadline) {
  const ExpireCondition nx{true, false, false, false}, xx{false, true, false, false};
  const ExpireCondition gt{false, false, true, false}, lt{false, false, false, true};
  ASSERT_TRUE(h().Set("a", "1", Expiry::None()).ok());
  UnixMillis now = h().NowMs();
  // No deadline counts as infinite: GT never applies, LT always does.
  EXPECT_FALSE(*h().Expire("a", Expiry::At(now + 9000), xx));
  EXPECT_FALSE(*h().Expire("a", Expiry::At(now + 9000), gt));
  EXPECT_EQ(h().Ttl("a")->state, TtlReply::State::kNoExpiry);
  EXPECT_TRUE(*h().Expire("a", Expiry::At(now + 9000), lt));
  EXPECT_FALSE(*h().Expire("a", Expiry::At(now + 5000), nx));
  EXPECT_FALSE(*h().Expire("a", Expiry::At(now + 9000), gt));  // equal is not later
  EXPECT_FALSE(*h().Expire("a", Expiry::At(now + 9500), lt));
  EXPECT_EQ(h().Ttl("a")->remaining_ms, 9000);
  EXPECT_TRUE(*h().Expire("a", Expiry::At(now + 20000), gt));
  EXPECT_TRUE(*h().Expire("a", Expiry::At(now + 15000), xx));
  EXPECT_EQ(h().Ttl("a")->remaining_ms, 15000);
  EXPECT_FALSE(*h().Expire("missing", Expiry::At(now + 1000), lt));
  // A refused condition changes nothing, even with a past deadline; an accepted one deletes.
  EXPECT_FALSE(*h().Expire("a", Expiry::At(now - 1), nx));
  EXPECT_EQ(**h().Get("a"), "1");
  EXPECT_TRUE(*h().Expire("a", Expiry::At(now - 1), lt));
  EXPECT_FALSE(h().Get("a")->has_value());
  ExpectCount(0);
}

TEST_P(StoreBehaviour, IncrementCountsFromZeroAndKeepsTheDeadline) {
  auto first = h().Incr("n", 5);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->integer, 5);
  EXPECT_EQ(first->text, "5");
  // A new key is a write without EX: the store's default TTL (30 min in this suite).
  ASSERT_EQ(h().Ttl("n")->state, TtlReply::State::kExpiring);
  ASSERT_TRUE(h().Set("c", "10", Expiry::At(h().NowMs() + 7000)).ok());
  h().clock().Advance(milliseconds(1000));
  EXPECT_EQ(h().Incr("c", -11)->integer, -1);
  EXPECT_EQ(**h().Get("c"), "-1");
  EXPECT_EQ(h().Ttl("c")->remaining_ms, 6000);
  ASSERT_TRUE(h().Set("p", "1", Expiry::None()).ok());
  EXPECT_EQ(h().Incr("p", 1)->integer, 2);
  EXPECT_EQ(h().Ttl("p")->state, TtlReply::State::kNoExpiry);
  ExpectCount(3);
}

TEST_P(StoreBehaviour, IncrementRefusesWhatRedisRefusesAndChangesNothing) {
  ASSERT_TRUE(h().Set("s", "abc").ok());
  ASSERT_TRUE(h().Set("sp", " 1").ok());
  ASSERT_TRUE(h().Set("max", "9223372036854775807").ok());
  ASSERT_TRUE(h().Set("min", "-9223372036854775808").ok());
  EXPECT_EQ(h().Incr("s", 1).error().message, "value is not an integer or out of range");
  EXPECT_EQ(h().Incr("sp", 1).error().message, "value is not an integer or out of range");
  EXPECT_EQ(h().Incr("max", 1).error().message, "increment or decrement would overflow");
  EXPECT_EQ(h().Incr("min", -1).error().message, "increment or decrement would overflow");
  EXPECT_EQ(h().IncrFloat("s", 1).error().message, "value is not a valid float");
  ASSERT_TRUE(h().Set("f", "1").ok());
  EXPECT_EQ(h().IncrFloat("f", HUGE_VALL).error().message,
            "increment would produce NaN or Infinity");
  EXPECT_EQ(**h().Get("max"), "9223372036854775807");
  EXPECT_EQ(**h().Get("f"), "1");
  EXPECT_EQ(h().Incr("max", -1)->integer, 9223372036854775806);
}

TEST_P(StoreBehaviour, IncrementByFloatFormatsAsRedis) {
  ASSERT_TRUE(h().Set("f", "10.5").ok());
  EXPECT_EQ(h().IncrFloat("f", 0.1L)->text, "10.6");
  EXPECT_EQ(**h().Get("f"), "10.6");
  EXPECT_EQ(h().IncrFloat("f", 5.0e3L)->text, "5010.60000000000000009");
  ASSERT_TRUE(h().Set("g", "3.0e3").ok());
  EXPECT_EQ(h().IncrFloat("g", 200)->text, "3200");
  EXPECT_EQ(h().IncrFloat("new", -1.5L)->text, "-1.5");
  EXPECT_EQ(h().Incr("g", 1)->integer, 3201);  // an integer-looking float is an integer
}

TEST_P(StoreBehaviour, IncrementsSurviveARestart) {
  if (!h().durable()) GTEST_SKIP() << "memory-only: nothing survives by design";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h().Incr("hits", 2).ok());
  ASSERT_TRUE(h().IncrFloat("score", 0.25L).ok());
  h().Restart();
  EXPECT_EQ(**h().Get("hits"), "6");
  EXPECT_EQ(**h().Get("score"), "0.25");
  EXPECT_EQ(h().Incr("hits", 1)->integer, 7);
}

TEST_P(StoreBehaviour, DeleteAllRemovesEveryKeyForGood) {
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(h().Set("k" + std::to_string(i), "v", Expiry::At(h().NowMs() + 60000)).ok());
  }
  ASSERT_TRUE(h().Set("forever", "v", Expiry::None()).ok());
  ASSERT_TRUE(h().Incr("n", 1).ok());
  ASSERT_EQ(*h().Del({"k0"}), 1);  // a delete still queued must not confuse the flush
  auto removed = h().DeleteAll();
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  ExpectCount(0);
  ExpectExpiring(0);
  EXPECT_FALSE(h().Get("k1")->has_value());
  EXPECT_EQ(*h().Exists({"forever", "n", "k49"}), 0);
  EXPECT_TRUE(h().ScanAll().empty());
  ASSERT_TRUE(h().Set("after", "v", Expiry::None()).ok());  // writes after it are kept
  EXPECT_EQ(h().Incr("n", 1)->integer, 1);
  if (h().durable()) {
    h().Restart();
    EXPECT_FALSE(h().Get("k1")->has_value()) << "no key survives a restart";
    EXPECT_FALSE(h().Get("forever")->has_value());
    EXPECT_EQ(**h().Get("after"), "v");
    EXPECT_EQ(**h().Get("n"), "1");
    ExpectCount(2);
  }
}

TEST_P(StoreBehaviour, AcknowledgedWritesSurviveARestart) {
  if (!h().durable()) GTEST_SKIP() << "memory-only: nothing survives by design";
  ASSERT_TRUE(h().Set("keep", "v1", Expiry::None()).ok());
  ASSERT_TRUE(h().Set("ttl", "v2", Expiry::At(h().NowMs() + 60000)).ok());
  ASSERT_TRUE(h().Set("gone", "v3").ok());
  ASSERT_EQ(*h().Del({"gone"}), 1);
  h().Restart();
  ExpectCount(2);
  EXPECT_EQ(**h().Get("keep"), "v1");
  EXPECT_EQ(**h().Get("ttl"), "v2");
  EXPECT_FALSE(h().Get("gone")->has_value());
  auto ttl = h().Ttl("ttl");
  ASSERT_EQ(ttl->state, TtlReply::State::kExpiring);
  // Persisted deadlines may be later than the true one (by the persist slack), never earlier.
  EXPECT_GE(ttl->remaining_ms, 60000);
  h().clock().Advance(std::chrono::minutes(10));
  EXPECT_FALSE(h().Get("ttl")->has_value());
  ExpectCount(1);
}

}  // namespace
}  // namespace skydb::testing
