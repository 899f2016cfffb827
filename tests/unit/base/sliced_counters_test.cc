#include "base/sliced_counters.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace skydb {
namespace {

using Counters = SlicedCounters<3>;

TEST(SlicedCountersTest, AnUnboundThreadAddsToTheSharedSlice) {
  Counters counters;
  EXPECT_FALSE(counters.BoundHere());
  counters.Add(0, 2);
  counters.Add(2, 5);
  EXPECT_EQ(counters.Sum(0), 2u);
  EXPECT_EQ(counters.Sum(1), 0u);
  EXPECT_EQ(counters.Sum(2), 5u);
}

TEST(SlicedCountersTest, ABoundThreadAddsToItsOwnSliceAndStopsAtUnbind) {
  Counters counters;
  ASSERT_TRUE(counters.BindThisThread());
  EXPECT_TRUE(counters.BoundHere());
  counters.Add(1, 3);
  counters.UnbindThisThread();
  EXPECT_FALSE(counters.BoundHere());
  counters.Add(1, 4);
  EXPECT_EQ(counters.Sum(1), 7u);
}

TEST(SlicedCountersTest, BindingAnotherObjectLeavesTheFirstCountingCorrectly) {
  Counters first;
  Counters second;
  ASSERT_TRUE(first.BindThisThread());
  ASSERT_TRUE(second.BindThisThread());
  EXPECT_FALSE(first.BoundHere());
  EXPECT_TRUE(second.BoundHere());
  first.Add(0, 1);
  second.Add(0, 10);
  EXPECT_EQ(first.Sum(0), 1u);
  EXPECT_EQ(second.Sum(0), 10u);
  second.UnbindThisThread();
}

// More threads than slices, bound and unbound, all adding at once: no addition is lost.
TEST(SlicedCountersTest, EveryAdditionOfManyThreadsIsSummed) {
  Counters counters;
  constexpr int kThreads = Counters::kSlices + 4;
  constexpr uint64_t kAdds = 30000;
  std::vector<std::thread> threads;
  std::atomic<int> bound{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      bool bind = t % 3 != 0;  // some threads never bind
      if (bind && counters.BindThisThread()) bound.fetch_add(1);
      for (uint64_t i = 0; i < kAdds; ++i) counters.Add(i % 3, 1);
      counters.UnbindThisThread();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_GT(bound.load(), 0);
  EXPECT_LE(bound.load(), static_cast<int>(Counters::kSlices));
  EXPECT_EQ(counters.Sum(0) + counters.Sum(1) + counters.Sum(2), kThreads * kAdds);
  EXPECT_EQ(counters.Sum(1), kThreads * (kAdds / 3));
}

}  // namespace
}  // namespace skydb
