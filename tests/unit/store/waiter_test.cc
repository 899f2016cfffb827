// Waiter and AfterAll: a reply that depends on writes runs once, when they are decided, with
// the first error; a single waiter takes the reply itself, not a copy of it.
#include "store/waiter.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

namespace skydb::store {
namespace {

// A reply that counts its copies and its runs.
struct CountingReply {
  std::shared_ptr<int> copies = std::make_shared<int>(0);
  std::shared_ptr<int> runs = std::make_shared<int>(0);
  std::shared_ptr<Status> last = std::make_shared<Status>();
  CountingReply() = default;
  CountingReply(const CountingReply& other)
      : copies(other.copies), runs(other.runs), last(other.last) {
    ++*copies;
  }
  CountingReply(CountingReply&& other) noexcept : CountingReply(std::as_const(other)) {
    --*copies;  // a move is not a copy
  }
  void operator()(const Status& s) const {
    ++*runs;
    *last = s;
  }
};

std::shared_ptr<Waiter> NewWaiter() {
  return std::make_shared<Waiter>(Clock::TimePoint{}, nullptr);
}

TEST(AfterAllTest, OneWaiterTakesTheReplyWithoutCopyingIt) {
  CountingReply reply;
  DurableDone done(std::move(reply));
  int copies_before = *reply.copies;
  auto waiter = NewWaiter();
  AfterAll({waiter}, std::move(done));
  EXPECT_EQ(*reply.copies, copies_before);
  EXPECT_EQ(*reply.runs, 0);
  EXPECT_TRUE(waiter->Fire(Ok()));
  EXPECT_EQ(*reply.runs, 1);
  EXPECT_FALSE(waiter->Fire(Error::Timeout("late")));
  EXPECT_EQ(*reply.runs, 1);
  EXPECT_TRUE(reply.last->ok());
}

TEST(AfterAllTest, AFiredWaiterRunsTheReplyAtOnceWithItsStatus) {
  CountingReply reply;
  auto waiter = NewWaiter();
  waiter->Fire(Error::Timeout("not committed"));
  AfterAll({waiter}, reply);
  EXPECT_EQ(*reply.runs, 1);
  EXPECT_FALSE(reply.last->ok());
}

TEST(AfterAllTest, SeveralWaitersRunTheReplyOnceAfterTheLastWithTheFirstError) {
  CountingReply reply;
  std::vector<std::shared_ptr<Waiter>> waiters{NewWaiter(), NewWaiter(), NewWaiter()};
  waiters[1]->Fire(Ok());
  AfterAll(waiters, reply);
  waiters[2]->Fire(Error::Timeout("first"));
  EXPECT_EQ(*reply.runs, 0);
  waiters[0]->Fire(Error::Unavailable("second"));
  EXPECT_EQ(*reply.runs, 1);
  ASSERT_FALSE(reply.last->ok());
  EXPECT_EQ(reply.last->error().message, "first");
}

}  // namespace
}  // namespace skydb::store
