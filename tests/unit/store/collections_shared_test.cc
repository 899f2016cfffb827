// Hashes and sets written from two daemons on one database (shared coherence, over one fake
// table): a read-modify-write of a field or member is decided against the row as committed, so
// no update is lost, no popped member is answered twice, and each daemon reads the other's
// acknowledged writes.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "harnesses.h"

namespace skydb::testing {
namespace {

using Kind = CollectionOp::Kind;

class SharedCollectionsTest : public ::testing::Test {
 protected:
  FakeTieredHarness a_{FakeOptions(Durability::kSync, true)};
  FakeTieredHarness b_{FakeOptions(Durability::kSync, true), a_.shared_state()};
};

TEST_F(SharedCollectionsTest, FieldIncrementsLoseNoUpdateAndNoValueIsAnsweredTwice) {
  constexpr int kPerClient = 100;
  std::mutex mu;
  std::set<int64_t> answered;
  auto client = [&](FakeTieredHarness& h) {
    for (int i = 0; i < kPerClient; ++i) {
      CollectionOp op;
      op.kind = Kind::kHIncrBy;
      op.keys = {"sess"};
      op.fields = {"clicks"};
      op.integer = 1;
      auto r = h.Collection(op);
      ASSERT_TRUE(r.ok()) << r.error().message;
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_TRUE(answered.insert(r->integer).second) << r->integer << " answered twice";
    }
  };
  std::thread one([&] { client(a_); }), two([&] { client(b_); });
  one.join();
  two.join();
  EXPECT_EQ(answered.size(), 2u * kPerClient);
  for (auto* h : {&a_, &b_}) {
    auto got = h->Collection(Kind::kHGet, {"sess"}, {"clicks"});
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->bulk, std::to_string(2 * kPerClient));
  }
}

TEST_F(SharedCollectionsTest, MembersAddedFromBothDaemonsAreAllKept) {
  constexpr int kPerClient = 100;
  auto client = [&](FakeTieredHarness& h, const std::string& prefix) {
    for (int i = 0; i < kPerClient; ++i) {
      auto r = h.Collection(Kind::kSAdd, {"members"}, {prefix + std::to_string(i)});
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(r->integer, 1);
    }
  };
  std::thread one([&] { client(a_, "a"); }), two([&] { client(b_, "b"); });
  one.join();
  two.join();
  for (auto* h : {&a_, &b_}) {
    auto card = h->Collection(Kind::kSCard, {"members"});
    ASSERT_TRUE(card.ok());
    EXPECT_EQ(card->integer, 2 * kPerClient);
  }
}

TEST_F(SharedCollectionsTest, EachMemberIsPoppedByExactlyOneDaemon) {
  constexpr int kMembers = 120;
  std::vector<std::string> members;
  for (int i = 0; i < kMembers; ++i) members.push_back("m" + std::to_string(i));
  ASSERT_TRUE(a_.Collection(Kind::kSAdd, {"pool"}, members).ok());
  std::mutex mu;
  std::multiset<std::string> popped;
  auto client = [&](FakeTieredHarness& h) {
    for (int i = 0; i < kMembers; ++i) {
      auto r = h.Collection(Kind::kSPop, {"pool"});
      ASSERT_TRUE(r.ok()) << r.error().message;
      if (r->type == StoreReply::Type::kNull) return;
      std::lock_guard<std::mutex> lock(mu);
      popped.insert(r->bulk);
    }
  };
  std::thread one([&] { client(a_); }), two([&] { client(b_); });
  one.join();
  two.join();
  EXPECT_EQ(popped.size(), static_cast<size_t>(kMembers));
  EXPECT_EQ(std::set<std::string>(popped.begin(), popped.end()).size(),
            static_cast<size_t>(kMembers))
      << "a member was answered to both daemons";
  EXPECT_EQ(*b_.Exists({"pool"}), 0);
}

TEST_F(SharedCollectionsTest, EachDaemonReadsTheOthersAcknowledgedFieldWrites) {
  for (int i = 0; i < 20; ++i) {
    FakeTieredHarness& writer = i % 2 ? a_ : b_;
    FakeTieredHarness& reader = i % 2 ? b_ : a_;
    ASSERT_TRUE(writer.Collection(Kind::kHSet, {"h"}, {"f"}, {std::to_string(i)}).ok());
    auto got = reader.Collection(Kind::kHGet, {"h"}, {"f"});
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->bulk, std::to_string(i));
  }
  ASSERT_TRUE(a_.Del({"h"}).ok());
  auto len = b_.Collection(Kind::kHLen, {"h"});
  ASSERT_TRUE(len.ok());
  EXPECT_EQ(len->integer, 0);
}

}  // namespace
}  // namespace skydb::testing
