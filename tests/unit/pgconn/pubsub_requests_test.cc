// The carrier's requests, with a hand-moved clock: each callback is answered exactly once, by
// the sender's result, the watchdog's fallback after the wait bound, a lost connection or the
// stop; batches keep publish order and their bounds; counts keep the latest value per name.
#include "pgconn/pubsub_requests.h"

#include <gtest/gtest.h>

#include <map>

namespace skydb::pg::pubsub {
namespace {

using std::chrono::milliseconds;

class RequestsTest : public ::testing::Test {
 protected:
  RequestsTest() : requests_(Limits()) { requests_.SetUp(true).Run(""); }

  static RequestLimits Limits() {
    RequestLimits limits;
    limits.max_messages = 5;
    limits.max_bytes = 100;
    limits.batch_messages = 2;
    limits.batch_bytes = 20;
    limits.wait = milliseconds(1000);
    return limits;
  }

  // Queues a message whose answer lands in answers_[name].
  bool Publish(const std::string& name, size_t bytes = 1) {
    bool first = false;
    PubSubCarrier::Published done = [this, name](uint64_t remote) {
      answers_[name].push_back(static_cast<int>(remote));
    };
    return requests_.Publish("c", std::string(bytes, 'm'), done, now_, &first);
  }
  std::vector<int> Answers(const std::string& name) { return answers_[name]; }

  SteadyTime now_ = SteadyTime() + std::chrono::hours(1);
  Requests requests_;
  std::map<std::string, std::vector<int>> answers_;
};

TEST_F(RequestsTest, BatchesKeepOrderAndBoundsAndEachAnswerComesOnce) {
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(Publish(name));
  auto batch = requests_.TakeBatch();
  ASSERT_EQ(batch.size(), 2u);  // batch_messages
  auto done = requests_.FinishBatch();
  ASSERT_EQ(done.size(), 2u);
  done[0](3);
  done[1](0);
  EXPECT_EQ(Answers("a"), std::vector<int>{3});
  EXPECT_EQ(Answers("b"), std::vector<int>{0});
  // A message alone over batch_bytes still travels, alone.
  ASSERT_TRUE(Publish("big", 30));
  EXPECT_EQ(requests_.TakeBatch().size(), 1u);  // "c" (the next would pass 20 bytes)
  requests_.FinishBatch()[0](1);
  EXPECT_EQ(requests_.TakeBatch().size(), 1u);
  requests_.FinishBatch()[0](2);
  EXPECT_EQ(Answers("c"), std::vector<int>{1});
  EXPECT_EQ(Answers("big"), std::vector<int>{2});
}

TEST_F(RequestsTest, AFullQueueOrALostConnectionRefusesAndAnswersWhatWaited) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Publish("q" + std::to_string(i)));
  EXPECT_FALSE(Publish("over"));  // max_messages
  Fallbacks lost = requests_.SetUp(false);
  EXPECT_EQ(lost.published.size(), 5u);
  lost.Run("down");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Answers("q" + std::to_string(i)), std::vector<int>{0});
  EXPECT_FALSE(Publish("while-down"));
  PubSubCarrier::Answer answer = [](Result<std::vector<SubscriptionCount>>) {};
  EXPECT_FALSE(requests_.Ask({}, answer, now_));
  requests_.SetUp(true).Run("");
  EXPECT_TRUE(Publish("back", 60));
  EXPECT_FALSE(Publish("bytes", 60));  // max_bytes, once the queue holds something
}

TEST_F(RequestsTest, TheWatchdogAnswersWhatWaitedLongerThanTheBoundEvenInFlight) {
  ASSERT_TRUE(Publish("in-flight"));
  ASSERT_EQ(requests_.TakeBatch().size(), 1u);
  now_ += milliseconds(400);
  ASSERT_TRUE(Publish("queued"));
  int recorded = 0;
  requests_.Announce(
      {false, "ch", 1}, [&recorded] { ++recorded; }, now_);
  SteadyTime next;
  EXPECT_TRUE(requests_.Expire(now_, &next).empty());
  EXPECT_EQ(next, now_ - milliseconds(400) + milliseconds(1000));
  now_ = next;
  Fallbacks late = requests_.Expire(now_, &next);
  EXPECT_EQ(late.published.size(), 1u);  // the one in flight, 1 s old
  EXPECT_EQ(late.expired_messages, 1u);
  late.Run("late");
  EXPECT_EQ(Answers("in-flight"), std::vector<int>{0});
  // Its statement finishing later answers nothing twice.
  auto done = requests_.FinishBatch();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0]);
  now_ += milliseconds(400);
  late = requests_.Expire(now_, &next);
  EXPECT_EQ(late.published.size(), 1u);
  EXPECT_EQ(late.recorded.size(), 1u);
  late.Run("late");
  EXPECT_EQ(Answers("queued"), std::vector<int>{0});
  EXPECT_EQ(recorded, 1);
  EXPECT_TRUE(requests_.TakeBatch().empty());  // an expired message is not carried later
}

TEST_F(RequestsTest, CountsKeepTheLatestPerNameAndWaitersAreAnsweredOnce) {
  int recorded = 0;
  auto count = [&recorded] { ++recorded; };
  EXPECT_TRUE(requests_.Announce({false, "a", 1}, count, now_));
  EXPECT_FALSE(requests_.Announce({false, "a", 2}, count, now_));
  requests_.Announce({true, "a", 1}, nullptr, now_);
  requests_.Announce({false, "b", 1}, count, now_);
  requests_.Announce({false, "b", 0}, count, now_);
  auto counts = requests_.TakeCounts();
  EXPECT_EQ(counts,
            (std::vector<SubscriptionCount>{{false, "a", 2}, {false, "b", 0}, {true, "a", 1}}));
  for (auto& done : requests_.FinishCounts()) done();
  EXPECT_EQ(recorded, 4);
  // Dropped while unregistered: answered at once, nothing left to record.
  requests_.Announce({false, "c", 1}, count, now_);
  for (auto& done : requests_.DropCounts()) done();
  EXPECT_EQ(recorded, 5);
  EXPECT_TRUE(requests_.TakeCounts().empty());
}

TEST_F(RequestsTest, StopAnswersEverythingAndRefusesWhatComesAfter) {
  ASSERT_TRUE(Publish("queued"));
  ASSERT_TRUE(Publish("flying"));
  int answers = 0;
  PubSubCarrier::Answer answer = [&answers](Result<std::vector<SubscriptionCount>> r) {
    answers += r.ok() ? 100 : 1;
  };
  ASSERT_TRUE(requests_.Ask({true, std::nullopt}, answer, now_));
  auto question = requests_.TakeQuestion();
  ASSERT_TRUE(question.has_value());
  EXPECT_TRUE(question->patterns);
  requests_.Stop().Run("stopping");
  EXPECT_EQ(Answers("queued"), std::vector<int>{0});
  EXPECT_EQ(Answers("flying"), std::vector<int>{0});
  EXPECT_EQ(answers, 1);
  EXPECT_FALSE(requests_.FinishQuestion());
  EXPECT_FALSE(Publish("after"));
  EXPECT_TRUE(requests_.SetUp(true).empty());
  EXPECT_FALSE(Publish("after"));
}

}  // namespace
}  // namespace skydb::pg::pubsub
