// One key's operations take effect in the order they were called, whatever had to be loaded
// first (key_gates.h): every pair of operations below, issued back to back without waiting (as
// a pipelining client's are) on a key whose value is not in memory, ends exactly as the same
// pair issued one at a time. And counters stay exact while values keep leaving memory, and
// across two stores on one table (shared coherence) every read-modify-write has one winner.
#include <map>
#include <set>
#include <thread>

#include "cold_keys.h"
#include "harnesses.h"
#include "store/memory_tier.h"

namespace skydb::testing {
namespace {

using Reply = std::function<void(std::string)>;
using Issue = std::function<void(SessionStore&, const std::string& key, UnixMillis now, Reply)>;

std::string Text(const Result<std::optional<std::string>>& r) {
  if (!r.ok()) return "error: " + r.error().message;
  return *r ? **r : "nil";
}

Issue SetOf(std::string value, Expiry (*expiry)(UnixMillis), bool get) {
  return [value, expiry, get](SessionStore& s, const std::string& key, UnixMillis now, Reply done) {
    s.Set({key, value, expiry(now), SetCondition::kAlways, get}, [done, get](Result<SetReply> r) {
      if (!r.ok()) return done("error: " + r.error().message);
      done(get ? (r->old_value ? *r->old_value : "nil") : (r->applied ? "OK" : "nil"));
    });
  };
}
Expiry DefaultExpiry(UnixMillis) { return Expiry::Default(); }
Expiry In100s(UnixMillis now) { return Expiry::At(now + 100000); }

Issue Incr() {
  return [](SessionStore& s, const std::string& key, UnixMillis, Reply done) {
    s.Increment(IncrRequest::Integer(key, 1), [done](Result<IncrReply> r) {
      done(r.ok() ? std::to_string(r->integer) : "error: " + r.error().message);
    });
  };
}
Issue Del() {
  return [](SessionStore& s, const std::string& key, UnixMillis, Reply done) {
    s.Delete({key}, [done](Result<int64_t> r) { done(r.ok() ? std::to_string(*r) : "error"); });
  };
}
Issue Get() {
  return [](SessionStore& s, const std::string& key, UnixMillis, Reply done) {
    s.Get(key, [done](Result<std::optional<std::string>> r) { done(Text(r)); });
  };
}
Issue GetDel() {
  return [](SessionStore& s, const std::string& key, UnixMillis, Reply done) {
    s.GetDel(key, [done](Result<std::optional<std::string>> r) { done(Text(r)); });
  };
}
Issue GetExPersist() {
  return [](SessionStore& s, const std::string& key, UnixMillis, Reply done) {
    s.GetEx(key, Expiry::None(), [done](Result<std::optional<std::string>> r) { done(Text(r)); });
  };
}
Issue ExpireIn100s() {
  return [](SessionStore& s, const std::string& key, UnixMillis now, Reply done) {
    s.Expire(key, Expiry::At(now + 100000), {},
             [done](Result<bool> r) { done(r.ok() ? (*r ? "1" : "0") : "error"); });
  };
}

struct Pair {
  std::string name;
  Issue first, second;
};

std::vector<Pair> Pairs() {
  return {
      {"SET k old GET; SET k new", SetOf("old", DefaultExpiry, true),
       SetOf("new", DefaultExpiry, false)},
      {"INCR c; SET c 100", Incr(), SetOf("100", DefaultExpiry, false)},
      {"INCR k; DEL k", Incr(), Del()},
      {"INCR k; INCR k", Incr(), Incr()},
      {"GETDEL k; SET k new", GetDel(), SetOf("new", DefaultExpiry, false)},
      {"GETEX k PERSIST; SET k new EX 100", GetExPersist(), SetOf("new", In100s, false)},
      {"SET k x GET; EXPIRE k 100", SetOf("x", DefaultExpiry, true), ExpireIn100s()},
      {"GET k; DEL k", Get(), Del()},
      {"GET k; SET k new", Get(), SetOf("new", DefaultExpiry, false)},
  };
}

// What the pair answered and what the key holds after it: value and whether it has a deadline
// (and roughly how far).
std::string RunPair(FakeTieredHarness& h, const Pair& pair, const std::string& key,
                    bool pipelined) {
  auto replies = std::make_shared<std::vector<std::promise<std::string>>>(2);
  std::future<std::string> first = (*replies)[0].get_future();
  std::future<std::string> second = (*replies)[1].get_future();
  pair.first(h.store(), key, h.NowMs(), [replies](std::string r) { (*replies)[0].set_value(r); });
  if (!pipelined) first.wait();
  pair.second(h.store(), key, h.NowMs(), [replies](std::string r) { (*replies)[1].set_value(r); });
  if (first.wait_for(std::chrono::seconds(10)) != std::future_status::ready ||
      second.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    return "no reply";
  }
  std::string out = first.get() + " | " + second.get();
  auto ttl = h.Ttl(key);
  std::string deadline = !ttl.ok()                                 ? "ttl error"
                         : ttl->state == TtlReply::State::kMissing ? "missing"
                         : ttl->state == TtlReply::State::kNoExpiry
                             ? "no deadline"
                             : std::to_string((ttl->remaining_ms + 50000) / 100000) + "00s";
  return out + " | " + Text(h.Get(key)) + " | " + deadline;
}

class ColdKeyOrderTest : public ::testing::TestWithParam<std::tuple<Cold, Durability>> {};

TEST_P(ColdKeyOrderTest, PipelinedPairsEndAsIfSentOneByOne) {
  auto [cold, durability] = GetParam();
  FakeTieredHarness h(ColdOptions(cold, durability));
  SlowReads(h.state());
  int n = 0;
  for (const Pair& pair : Pairs()) {
    std::string one_by_one = "seq" + std::to_string(n), pipelined = "pipe" + std::to_string(n);
    ++n;
    MakeCold(h, cold, one_by_one);
    MakeCold(h, cold, pipelined);
    std::string expected = RunPair(h, pair, one_by_one, /*pipelined=*/false);
    EXPECT_EQ(RunPair(h, pair, pipelined, /*pipelined=*/true), expected)
        << pair.name << ", value " << ColdName(cold);
    // And durably: what PostgreSQL holds is what memory says.
    h.Restart();
    SlowReads(h.state());
    auto after = h.Get(pipelined);
    auto reference = h.Get(one_by_one);
    EXPECT_EQ(Text(after), Text(reference)) << pair.name << " after a restart";
  }
}

INSTANTIATE_TEST_SUITE_P(
    ColdKeys, ColdKeyOrderTest,
    ::testing::Combine(::testing::Values(Cold::kIdleEvicted, Cold::kOverMemoryCap, Cold::kShared),
                       ::testing::Values(Durability::kSync, Durability::kAsync)),
    [](const auto& case_info) {
      return ColdCaseName(std::get<0>(case_info.param), std::get<1>(case_info.param));
    });

// Increments pipelined by several threads on counters whose values leave memory after every
// commit: every acknowledged increment is in the final value, and no two replies of one
// counter are the same number.
TEST(FillTest, CountersStayExactWhileTheirValuesKeepLeavingMemory) {
  FakeTieredHarness h(ColdOptions(Cold::kOverMemoryCap, Durability::kSync));
  SlowReads(h.state());
  constexpr int kThreads = 4, kCounters = 8, kPerThread = 60, kInFlight = 6;
  std::mutex mu;
  std::map<std::string, std::set<int64_t>> answered;
  std::map<std::string, int> acked;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::future<void>> inflight;
      for (int i = 0; i < kPerThread; ++i) {
        std::string key = "c" + std::to_string((i + t) % kCounters);
        auto done = std::make_shared<std::promise<void>>();
        inflight.push_back(done->get_future());
        h.store().Increment(IncrRequest::Integer(key, 1), [&, key, done](Result<IncrReply> r) {
          if (r.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            EXPECT_TRUE(answered[key].insert(r->integer).second)
                << key << " answered " << r->integer << " twice";
            ++acked[key];
          }
          done->set_value();
        });
        if (inflight.size() >= kInFlight) {
          inflight.front().wait();
          inflight.erase(inflight.begin());
        }
      }
      for (auto& f : inflight) f.wait();
    });
  }
  for (auto& t : threads) t.join();
  int total = 0;
  for (const auto& [key, n] : acked) {
    EXPECT_EQ(Text(h.Get(key)), std::to_string(n)) << key;
    total += n;
  }
  EXPECT_EQ(total, kThreads * kPerThread);
  EXPECT_GT(h.store().Stats().cache_misses, 0u) << "the values never left memory";
}

TEST(FillTest, AFillAtAnOlderVersionIsNotInstalled) {
  store::TierOptions options;
  options.evictable = true;
  FakeClock clock;
  store::MemoryTier tier(options, clock);
  store::Shard& shard = tier.ShardFor(store::KeyHash("k"));
  MutexLock lock(shard.mu);
  store::Entry& e = tier.Insert(shard, "k");  // evicted: no value
  uint64_t asked = e.version;
  tier.Changed(shard, e);  // a write landed (and its value left memory again) meanwhile
  tier.Fill(shard, "k", asked, DurableValue::String("older"));
  EXPECT_FALSE(e.value.has_value()) << "a fill replaced a newer value";
  tier.Fill(shard, "k", e.version, DurableValue::String("current"));
  ASSERT_TRUE(e.value.has_value());
  EXPECT_EQ(e.value->str(), "current");
}

// Two daemons on one database race read-modify-write commands: each is decided in PostgreSQL.
class TwoDaemonsTest : public ::testing::Test {
 protected:
  FakeTieredHarness a_{FakeOptions(Durability::kSync, true)};
  FakeTieredHarness b_{FakeOptions(Durability::kSync, true), a_.shared_state()};
};

TEST_F(TwoDaemonsTest, IncrementsLoseNoUpdateAndNoValueIsAnsweredTwice) {
  constexpr int kPerClient = 100;
  std::mutex mu;
  std::set<int64_t> answered;
  int acked = 0;
  auto client = [&](FakeTieredHarness& h) {
    for (int i = 0; i < kPerClient; ++i) {
      auto r = h.Incr("counter", 1);
      ASSERT_TRUE(r.ok()) << r.error().message;
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_TRUE(answered.insert(r->integer).second) << r->integer << " answered twice";
      ++acked;
    }
  };
  std::thread one([&] { client(a_); }), two([&] { client(b_); });
  one.join();
  two.join();
  EXPECT_EQ(acked, 2 * kPerClient);
  EXPECT_EQ(Text(a_.Get("counter")), std::to_string(2 * kPerClient));
  EXPECT_EQ(Text(b_.Get("counter")), std::to_string(2 * kPerClient));
}

TEST_F(TwoDaemonsTest, ConditionalSetsHaveExactlyOneWinnerPerKey) {
  constexpr int kKeys = 100;
  std::vector<std::future<Result<SetReply>>> from_a, from_b;
  auto issue = [](FakeTieredHarness& h, const std::string& key, const std::string& value) {
    auto p = std::make_shared<std::promise<Result<SetReply>>>();
    h.store().Set({key, value, Expiry::None(), SetCondition::kIfAbsent},
                  [p](Result<SetReply> r) { p->set_value(std::move(r)); });
    return p->get_future();
  };
  for (int i = 0; i < kKeys; ++i) {
    std::string key = "lock" + std::to_string(i);
    from_a.push_back(issue(a_, key, "a"));
    from_b.push_back(issue(b_, key, "b"));
  }
  for (int i = 0; i < kKeys; ++i) {
    auto ra = from_a[i].get(), rb = from_b[i].get();
    ASSERT_TRUE(ra.ok() && rb.ok());
    std::string key = "lock" + std::to_string(i);
    EXPECT_NE(ra->applied, rb->applied)
        << key << ": " << (ra->applied ? "both" : "neither") << " won";
    EXPECT_EQ(Text(a_.Get(key)), ra->applied ? "a" : "b") << key;
  }
}

}  // namespace
}  // namespace skydb::testing
