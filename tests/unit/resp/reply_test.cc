// Reply budgets (resp/reply.h): claims within a connection's and the server's limits, the
// first refusal recorded, claims released when dropped and resized to the reply built.
#include "resp/reply.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace skydb::resp {
namespace {

TEST(ReplyBudget, ClaimsWithinTheConnectionLimit) {
  ReplyMemory server(1000);
  ReplyBudget budget(100, &server);
  EXPECT_TRUE(budget.TryClaim(60));
  EXPECT_TRUE(budget.TryClaim(40));  // exactly the limit
  EXPECT_EQ(budget.refused(), ReplyLimit::kNone);
  EXPECT_FALSE(budget.TryClaim(1));
  EXPECT_EQ(budget.refused(), ReplyLimit::kConnection);
  EXPECT_EQ(budget.refused_bytes(), 1U);
  EXPECT_EQ(budget.held(), 100U);
  EXPECT_EQ(server.held(), 100U);
  budget.Release(100);
  EXPECT_EQ(server.held(), 0U);
}

TEST(ReplyBudget, HugeClaimsDoNotOverflow) {
  ReplyBudget budget(100, nullptr);
  EXPECT_TRUE(budget.TryClaim(10));
  EXPECT_FALSE(budget.TryClaim(SIZE_MAX));
  EXPECT_EQ(budget.held(), 10U);
}

TEST(ReplyBudget, TheServerLimitCountsEveryConnection) {
  ReplyMemory server(150);
  ReplyBudget first(100, &server);
  ReplyBudget second(100, &server);
  EXPECT_TRUE(first.TryClaim(100));
  EXPECT_TRUE(second.TryClaim(50));
  EXPECT_FALSE(second.TryClaim(1));
  EXPECT_EQ(second.refused(), ReplyLimit::kServer);
  EXPECT_EQ(first.refused(), ReplyLimit::kNone);
  EXPECT_EQ(second.held(), 50U) << "a refused claim counts nothing";
  EXPECT_EQ(server.held(), 150U);
}

TEST(ReplyMemory, AnEpisodeIsLoggedOnceAndEndsBelowHalfTheLimit) {
  ReplyMemory server(100);
  ReplyBudget budget(100, &server);
  ASSERT_TRUE(budget.TryClaim(100));
  EXPECT_TRUE(server.BeginEpisode());
  EXPECT_FALSE(server.BeginEpisode());
  budget.Release(40);  // 60 held: still the same episode
  EXPECT_FALSE(server.BeginEpisode());
  budget.Release(20);  // 40 held
  EXPECT_TRUE(server.BeginEpisode());
}

TEST(ReplyBudget, ConcurrentClaimsNeverPassTheLimit) {
  ReplyMemory server(1 << 20);
  ReplyBudget budget(1000, &server);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) granted += budget.TryClaim(7) ? 1 : 0;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(granted.load(), 1000 / 7);
  EXPECT_EQ(budget.held(), static_cast<size_t>(granted.load()) * 7);
}

TEST(ReplyClaim, ReleasesWhenDroppedAndFollowsTheReplySize) {
  auto budget = std::make_shared<ReplyBudget>(100, nullptr);
  {
    ASSERT_TRUE(budget->TryClaim(30));
    ReplyClaim claim(budget, 30);
    EXPECT_TRUE(claim.Extend(20));
    EXPECT_FALSE(claim.Extend(60));
    EXPECT_EQ(claim.bytes(), 50U);
    claim.Resize(55);  // the built reply's size, whatever the limit
    EXPECT_EQ(budget->held(), 55U);
    ReplyClaim moved = std::move(claim);
    EXPECT_EQ(moved.bytes(), 55U);
  }
  EXPECT_EQ(budget->held(), 0U);
  ASSERT_TRUE(budget->TryClaim(10));
  ReplyClaim kept(budget, 10);
  EXPECT_EQ(kept.Take(), 10U);  // the holder keeps counting them
  EXPECT_EQ(budget->held(), 10U);
}

TEST(ReplyFn, HandsTheReplyOverWithItsBytesCounted) {
  auto budget = std::make_shared<ReplyBudget>(100, nullptr);
  std::string got;
  size_t counted = 0;
  ReplyFn reply(budget, [&](std::string r, ReplyClaim claim) {
    got = std::move(r);
    counted = claim.Take();
  });
  reply("+OK\r\n");
  EXPECT_EQ(got, "+OK\r\n");
  EXPECT_EQ(counted, 5U);
  EXPECT_EQ(budget->held(), 5U);

  auto claim = reply.Claim(40);
  ASSERT_TRUE(claim.has_value());
  reply(std::string(30, 'x'), std::move(*claim));  // the claim shrinks to the reply
  EXPECT_EQ(counted, 30U);
  EXPECT_EQ(budget->held(), 35U);
  EXPECT_FALSE(reply.Claim(66).has_value());
  EXPECT_EQ(budget->refused(), ReplyLimit::kConnection);
}

TEST(ReplyFn, WithoutABudgetEveryClaimSucceeds) {
  std::string got;
  ReplyFn reply([&got](std::string r) { got = std::move(r); });
  EXPECT_EQ(reply.limit(), SIZE_MAX);
  auto claim = reply.Claim(SIZE_MAX);
  ASSERT_TRUE(claim.has_value());
  reply("$1\r\nv\r\n", std::move(*claim));
  EXPECT_EQ(got, "$1\r\nv\r\n");
}

TEST(ReplySizes, BulkFraming) {
  EXPECT_EQ(BulkReplySize(0), std::string("$0\r\n\r\n").size());
  EXPECT_EQ(BulkReplySize(1 << 20), std::string("$1048576\r\n\r\n").size() + (1 << 20));
}

}  // namespace
}  // namespace skydb::resp
