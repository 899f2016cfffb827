// Hashes and sets whose fields are not in memory (cold_keys.h): every pair of commands below,
// issued back to back without waiting (as a pipelining client's are), ends exactly as the same
// pair issued one at a time, in memory and after a restart; and field counters and set sizes
// stay exact while the collections keep leaving memory.
#include <map>
#include <set>
#include <thread>

#include "cold_keys.h"
#include "harnesses.h"

namespace skydb::testing {
namespace {

using CollectionReply = std::function<void(std::string)>;
using CollectionIssue = std::function<void(SessionStore&, const std::string&, CollectionReply)>;

CollectionIssue Cmd(CollectionOp::Kind kind, std::vector<std::string> fields = {},
                    std::vector<std::string> values = {}, int64_t integer = 0) {
  return [=](SessionStore& s, const std::string& key, CollectionReply done) {
    CollectionOp op;
    op.kind = kind;
    op.keys = {key};
    op.fields = fields;
    op.values = values;
    op.integer = integer;
    s.Collection(op, [done](Result<StoreReply> r) { done(ShowReply(r)); });
  };
}
CollectionIssue DelKey() {
  return [](SessionStore& s, const std::string& key, CollectionReply done) {
    s.Delete({key}, [done](Result<int64_t> r) {
      done(r.ok() ? std::to_string(*r) : "error: " + r.error().message);
    });
  };
}

enum class Holds { kHash, kSet };

struct CollectionPair {
  std::string name;
  Holds holds;  // what the key holds before the pair
  CollectionIssue first, second;
};

std::vector<CollectionPair> CollectionPairs() {
  using K = CollectionOp::Kind;
  return {
      {"HSET k f 7; HGET k f", Holds::kHash, Cmd(K::kHSet, {"f"}, {"7"}), Cmd(K::kHGet, {"f"})},
      {"HINCRBY k f 1; HINCRBY k f 1", Holds::kHash, Cmd(K::kHIncrBy, {"f"}, {}, 1),
       Cmd(K::kHIncrBy, {"f"}, {}, 1)},
      {"HDEL k f; HDEL k g", Holds::kHash, Cmd(K::kHDel, {"f"}), Cmd(K::kHDel, {"g"})},
      {"HDEL k f g; HSET k f new", Holds::kHash, Cmd(K::kHDel, {"f", "g"}),
       Cmd(K::kHSet, {"f"}, {"new"})},
      {"HGETALL k; DEL k", Holds::kHash, Cmd(K::kHGetAll), DelKey()},
      {"DEL k; HSET k f 1", Holds::kHash, DelKey(), Cmd(K::kHSet, {"f"}, {"1"})},
      {"HSET k h 1; HLEN k", Holds::kHash, Cmd(K::kHSet, {"h"}, {"1"}), Cmd(K::kHLen)},
      {"HGETDEL k f; HINCRBY k f 2", Holds::kHash, Cmd(K::kHGetDel, {"f"}),
       Cmd(K::kHIncrBy, {"f"}, {}, 2)},
      {"SADD k m; HGET k f", Holds::kHash, Cmd(K::kSAdd, {"m"}), Cmd(K::kHGet, {"f"})},
      {"SADD k c; SCARD k", Holds::kSet, Cmd(K::kSAdd, {"c"}), Cmd(K::kSCard)},
      {"SREM k a b; SADD k a", Holds::kSet, Cmd(K::kSRem, {"a", "b"}), Cmd(K::kSAdd, {"a"})},
      {"SMEMBERS k; DEL k", Holds::kSet, Cmd(K::kSMembers), DelKey()},
      {"SADD k c; SREM k c", Holds::kSet, Cmd(K::kSAdd, {"c"}), Cmd(K::kSRem, {"c"})},
      {"DEL k; SADD k z", Holds::kSet, DelKey(), Cmd(K::kSAdd, {"z"})},
      {"SISMEMBER k a; SREM k a", Holds::kSet, Cmd(K::kSIsMember, {"a"}), Cmd(K::kSRem, {"a"})},
  };
}

// `key` holds {f: 5, g: x} or {a, b}, committed, and none of it is in memory.
void MakeColdCollection(FakeTieredHarness& h, Cold cold, Holds holds, const std::string& key) {
  auto made = holds == Holds::kHash
                  ? h.Collection(CollectionOp::Kind::kHSet, {key}, {"f", "g"}, {"5", "x"})
                  : h.Collection(CollectionOp::Kind::kSAdd, {key}, {"a", "b"});
  ASSERT_TRUE(made.ok()) << made.error().message;
  LeaveMemory(h, cold);
}

// What the key holds: its type, its fields and its members.
std::string Contents(FakeTieredHarness& h, const std::string& key) {
  auto type = h.TypeOf(key);
  std::string out = !type.ok() ? "type error" : !*type ? "none" : ValueTypeName((*type)->type);
  return out + " " + ShowReply(h.Collection(CollectionOp::Kind::kHGetAll, {key})) + " " +
         ShowReply(h.Collection(CollectionOp::Kind::kSMembers, {key}));
}

std::string RunCollectionPair(FakeTieredHarness& h, const CollectionPair& pair,
                              const std::string& key, bool pipelined) {
  auto replies = std::make_shared<std::vector<std::promise<std::string>>>(2);
  std::future<std::string> first = (*replies)[0].get_future();
  std::future<std::string> second = (*replies)[1].get_future();
  pair.first(h.store(), key, [replies](std::string r) { (*replies)[0].set_value(r); });
  if (!pipelined) first.wait();
  pair.second(h.store(), key, [replies](std::string r) { (*replies)[1].set_value(r); });
  if (first.wait_for(std::chrono::seconds(10)) != std::future_status::ready ||
      second.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    return "no reply";
  }
  return first.get() + " | " + second.get() + " | " + Contents(h, key);
}

class ColdCollectionOrderTest : public ::testing::TestWithParam<std::tuple<Cold, Durability>> {};

TEST_P(ColdCollectionOrderTest, PipelinedPairsEndAsIfSentOneByOne) {
  const Cold cold = std::get<0>(GetParam());
  FakeTieredHarness h(ColdOptions(cold, std::get<1>(GetParam())));
  SlowReads(h.state());
  int n = 0;
  for (const CollectionPair& pair : CollectionPairs()) {
    std::string one_by_one = "seq" + std::to_string(n), pipelined = "pipe" + std::to_string(n);
    ++n;
    MakeColdCollection(h, cold, pair.holds, one_by_one);
    MakeColdCollection(h, cold, pair.holds, pipelined);
    std::string expected = RunCollectionPair(h, pair, one_by_one, /*pipelined=*/false);
    EXPECT_EQ(RunCollectionPair(h, pair, pipelined, /*pipelined=*/true), expected)
        << pair.name << ", fields " << ColdName(cold);
    // And durably: what the table holds is what memory said.
    std::string before_restart = Contents(h, pipelined);
    h.Restart();
    SlowReads(h.state());
    EXPECT_EQ(Contents(h, pipelined), before_restart) << pair.name << " after a restart";
    EXPECT_EQ(Contents(h, one_by_one), Contents(h, pipelined)) << pair.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ColdCollections, ColdCollectionOrderTest,
    ::testing::Combine(::testing::Values(Cold::kIdleEvicted, Cold::kOverMemoryCap, Cold::kShared),
                       ::testing::Values(Durability::kSync, Durability::kAsync)),
    [](const auto& case_info) {
      return ColdCaseName(std::get<0>(case_info.param), std::get<1>(case_info.param));
    });

// Runs `count` operations from each of `threads` threads, `in_flight` at a time per thread;
// `issue(thread, i, done)` starts one and calls `done` when it is answered.
void PipelineFromThreads(int threads, int count, size_t in_flight,
                         const std::function<void(int, int, std::function<void()>)>& issue) {
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      std::vector<std::future<void>> inflight;
      for (int i = 0; i < count; ++i) {
        auto done = std::make_shared<std::promise<void>>();
        inflight.push_back(done->get_future());
        issue(t, i, [done] { done->set_value(); });
        if (inflight.size() >= in_flight) {
          inflight.front().wait();
          inflight.erase(inflight.begin());
        }
      }
      for (auto& f : inflight) f.wait();
    });
  }
  for (auto& t : running) t.join();
}

// HINCRBY and SADD pipelined by several threads on hashes and sets whose contents leave memory
// after every commit: every acknowledged increment is in its field, no two replies of one field
// are the same number, and every acknowledged member is in its set, after a restart too.
TEST(CollectionFillTest, FieldCountersAndMembersStayExactWhileLeavingMemory) {
  FakeTieredHarness h(ColdOptions(Cold::kOverMemoryCap, Durability::kSync));
  SlowReads(h.state());
  constexpr int kThreads = 4, kKeys = 8, kPerThread = 40;
  std::mutex mu;
  std::map<std::string, std::set<int64_t>> answered;
  std::map<std::string, int> increments, members;
  PipelineFromThreads(kThreads, kPerThread, 6, [&](int t, int i, std::function<void()> done) {
    std::string hash = "h" + std::to_string((i + t) % kKeys);
    Cmd(CollectionOp::Kind::kHIncrBy, {"n"}, {}, 1)(h.store(), hash, [&, hash, done](auto r) {
      std::lock_guard<std::mutex> lock(mu);
      if (r.empty() || r.find_first_not_of("0123456789") != std::string::npos) {
        ADD_FAILURE() << hash << ": HINCRBY answered " << r;
      } else {
        EXPECT_TRUE(answered[hash].insert(std::stoll(r)).second) << hash << " answered " << r;
        ++increments[hash];
      }
      done();
    });
  });
  PipelineFromThreads(kThreads, kPerThread, 6, [&](int t, int i, std::function<void()> done) {
    std::string set = "s" + std::to_string((i + t) % kKeys);
    std::string member = std::to_string(t) + ":" + std::to_string(i);
    Cmd(CollectionOp::Kind::kSAdd, {member})(h.store(), set, [&, set, done](std::string r) {
      std::lock_guard<std::mutex> lock(mu);
      if (r == "1") ++members[set];
      done();
    });
  });
  EXPECT_GT(h.store().Stats().cache_misses, 0u) << "the collections never left memory";
  for (int pass = 0; pass < 2; ++pass) {
    int total = 0;
    for (const auto& [hash, n] : increments) {
      EXPECT_EQ(ShowReply(h.Collection(CollectionOp::Kind::kHGet, {hash}, {"n"})),
                "\"" + std::to_string(n) + "\"")
          << hash;
      total += n;
    }
    EXPECT_EQ(total, kThreads * kPerThread);
    total = 0;
    for (const auto& [set, n] : members) {
      EXPECT_EQ(ShowReply(h.Collection(CollectionOp::Kind::kSCard, {set})), std::to_string(n));
      total += n;
    }
    EXPECT_EQ(total, kThreads * kPerThread);
    h.Restart();
  }
}

}  // namespace
}  // namespace skydb::testing
