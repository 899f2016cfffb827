// The pub/sub hub, its frames and the pub/sub commands, without sockets: subscriptions,
// patterns, counts, Redis 7's reply shapes in RESP2 and RESP3, the subscribed-mode rule, and
// what the hub asks of a carrier (a fake one): every count change announced in order, replies
// that wait for the database, PUBLISH and PUBSUB counting the other daemons.
#include "resp/pubsub.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <initializer_list>

#include "resp/commands.h"
#include "skydb/store.h"
#include "support/fakes.h"

namespace skydb::resp {
namespace {

// Records the RESP2 frames the hub delivers.
class RecordingSubscriber final : public Subscriber {
 public:
  void Deliver(const SharedFrame& frame) override { frames.push_back(*frame); }
  std::vector<std::string> frames;
};

// Records what the hub asks; the test answers it.
class FakeCarrier final : public PubSubCarrier {
 public:
  void Attach(PubSubLocal* local) override { local_ = local; }
  void Publish(std::string_view channel, std::string_view message, Published done) override {
    sent.emplace_back(channel, message);
    published.push_back(std::move(done));
  }
  void Announce(SubscriptionCount now, Recorded recorded) override {
    announced.push_back(std::move(now));
    if (recorded) recording.push_back(std::move(recorded));
  }
  void Remote(bool patterns, std::optional<std::vector<std::string>> names, Answer done) override {
    if (down) return done(Error::Unavailable("down"));
    std::vector<SubscriptionCount> out;
    for (const auto& r : remote) {
      if (r.pattern != patterns) continue;
      if (names && std::find(names->begin(), names->end(), r.name) == names->end()) continue;
      out.push_back(r);
    }
    done(std::move(out));
  }
  void RecordAll() {
    auto waiting = std::move(recording);
    recording.clear();
    for (auto& r : waiting) r();
  }

  PubSubLocal* local_ = nullptr;
  std::vector<std::pair<std::string, std::string>> sent;
  std::vector<Published> published;
  std::vector<SubscriptionCount> announced;
  std::vector<Recorded> recording;
  std::vector<SubscriptionCount> remote;  // the other daemons' subscriptions
  bool down = false;
};

PubSubState NewClient(std::shared_ptr<RecordingSubscriber>* out) {
  PubSubState state;
  *out = std::make_shared<RecordingSubscriber>();
  state.subscriber = *out;
  return state;
}

TEST(PubSubFrames, MatchRedisSevenInBothProtocols) {
  EXPECT_EQ(MessageFrame(Proto::kResp2, "", "ch", "hi"),
            "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
  EXPECT_EQ(MessageFrame(Proto::kResp3, "c*", "ch", ""),
            ">4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$0\r\n\r\n");
  std::string name = "a";
  EXPECT_EQ(SubscriptionFrame(Proto::kResp2, "subscribe", &name, 1),
            "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(SubscriptionFrame(Proto::kResp2, "unsubscribe", nullptr, 0),
            "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
  EXPECT_EQ(SubscriptionFrame(Proto::kResp3, "unsubscribe", nullptr, 0),
            ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n");
  // Binary payloads travel as they are.
  EXPECT_EQ(MessageFrame(Proto::kResp2, "", "c", std::string("\0\r\n", 3)),
            std::string("*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$3\r\n\0\r\n\r\n", 33));
}

TEST(PubSubHub, DeliversToChannelAndPatternSubscribersAndCountsThem) {
  PubSubHub hub;
  std::shared_ptr<RecordingSubscriber> a, b;
  PubSubState ca = NewClient(&a), cb = NewClient(&b);
  EXPECT_TRUE(hub.Subscribe(ca, "news"));
  EXPECT_FALSE(hub.Subscribe(ca, "news"));  // already there: counted once
  EXPECT_TRUE(hub.PSubscribe(ca, "n*"));
  EXPECT_TRUE(hub.PSubscribe(cb, "n?ws"));
  EXPECT_EQ(hub.Deliver("news", "x"), 3u);  // a twice (channel + pattern), b once
  ASSERT_EQ(a->frames.size(), 2u);
  EXPECT_EQ(b->frames, std::vector<std::string>{MessageFrame(Proto::kResp2, "n?ws", "news", "x")});
  EXPECT_EQ(hub.Deliver("other", "x"), 0u);
  EXPECT_EQ(hub.NumSub("news"), 1u);
  EXPECT_EQ(hub.NumPat(), 2u);
  EXPECT_EQ(hub.Channels(std::nullopt), std::vector<std::string>{"news"});
  EXPECT_TRUE(hub.Channels(std::string_view("x*")).empty());
  hub.RemoveAll(ca);
  EXPECT_EQ(ca.count(), 0u);
  EXPECT_EQ(hub.NumSub("news"), 0u);
  EXPECT_EQ(hub.NumPat(), 1u);
  EXPECT_EQ(hub.Deliver("news", "y"), 1u);
  EXPECT_FALSE(hub.Unsubscribe(cb, "news"));
  EXPECT_TRUE(hub.PUnsubscribe(cb, "n?ws"));
  EXPECT_EQ(hub.NumPat(), 0u);
}

TEST(PubSubHub, PublishCountsTheReceiversTheCarrierReachedWhateverTheSize) {
  PubSubHub hub;
  FakeCarrier carrier;
  hub.SetCarrier(&carrier);
  EXPECT_EQ(carrier.local_, &hub);
  std::shared_ptr<RecordingSubscriber> a;
  PubSubState ca = NewClient(&a);
  hub.Subscribe(ca, "ch");
  const std::string huge(1 << 20, 'x');  // no size limit but the protocol's
  std::vector<size_t> replies;
  hub.Publish("ch", huge, [&replies](size_t n) { replies.push_back(n); });
  EXPECT_EQ(a->frames.size(), 1u);  // delivered here at once
  EXPECT_TRUE(replies.empty());     // the reply waits for the carrier
  ASSERT_EQ(carrier.sent.size(), 1u);
  EXPECT_EQ(carrier.sent[0].second, huge);
  carrier.published[0](2);
  EXPECT_EQ(replies, std::vector<size_t>{3});  // 1 here + 2 on other daemons
  // What the carrier brings from another daemon reaches the subscribers here.
  carrier.local_->DeliverRemote("ch", "from afar");
  ASSERT_EQ(a->frames.size(), 2u);
  EXPECT_EQ(a->frames[1], MessageFrame(Proto::kResp2, "", "ch", "from afar"));
  hub.SetCarrier(nullptr);
  hub.Publish("ch", "alone", [&replies](size_t n) { replies.push_back(n); });
  EXPECT_EQ(replies.back(), 1u);  // no peers: answered at once
}

TEST(PubSubHub, EveryCountChangeIsAnnouncedInOrderAndTheSetCanBeReadWhole) {
  PubSubHub hub;
  FakeCarrier carrier;
  hub.SetCarrier(&carrier);
  std::shared_ptr<RecordingSubscriber> a, b;
  PubSubState ca = NewClient(&a), cb = NewClient(&b);
  hub.Subscribe(ca, "ch");
  hub.Subscribe(cb, "ch");
  hub.Subscribe(cb, "ch");  // already there: no change, nothing announced
  hub.PSubscribe(ca, "p*");
  EXPECT_EQ(hub.Subscriptions(),
            (std::vector<SubscriptionCount>{{false, "ch", 2}, {true, "p*", 1}}));
  hub.Unsubscribe(ca, "ch");
  hub.RemoveAll(ca);
  hub.RemoveAll(cb);
  EXPECT_EQ(carrier.announced, (std::vector<SubscriptionCount>{{false, "ch", 1},
                                                               {false, "ch", 2},
                                                               {true, "p*", 1},
                                                               {false, "ch", 1},
                                                               {true, "p*", 0},
                                                               {false, "ch", 0}}));
  EXPECT_TRUE(hub.Subscriptions().empty());
  EXPECT_TRUE(carrier.recording.empty());  // no command waited for these
}

class PubSubCommandsTest : public ::testing::Test {
 protected:
  PubSubCommandsTest() {
    store_ = NewMemoryStore(MemoryTierOptions{}, clock_);
    executor_ = std::make_unique<CommandExecutor>(ExecutorConfig{}, *store_, clock_, counters_);
    client_.id = 7;
    subscriber_ = std::make_shared<RecordingSubscriber>();
    client_.pubsub.subscriber = subscriber_;
  }

  std::future<std::string> Start(std::initializer_list<std::string> args) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto future = promise->get_future();
    executor_->Execute(client_, std::vector<std::string>(args),
                       [promise](std::string reply) { promise->set_value(std::move(reply)); });
    return future;
  }
  std::string Run(std::initializer_list<std::string> args) {
    auto future = Start(args);
    if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return "timeout";
    return future.get();
  }
  static bool Ready(const std::future<std::string>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  testing::FakeClock clock_;
  std::unique_ptr<SessionStore> store_;
  ServerCounters counters_;
  std::unique_ptr<CommandExecutor> executor_;
  ClientState client_;
  std::shared_ptr<RecordingSubscriber> subscriber_;
};

TEST_F(PubSubCommandsTest, SubscribeUnsubscribeRepliesAsRedisSeven) {
  EXPECT_EQ(Run({"SUBSCRIBE", "a", "b"}),
            "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n");
  EXPECT_EQ(Run({"PSUBSCRIBE", "p*"}), "*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:3\r\n");
  EXPECT_EQ(executor_->pubsub().Deliver("pq", "x"), 1u);
  EXPECT_EQ(subscriber_->frames,
            std::vector<std::string>{MessageFrame(Proto::kResp2, "p*", "pq", "x")});
  EXPECT_EQ(Run({"UNSUBSCRIBE"}),
            "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:2\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n"
            ":1\r\n");
  EXPECT_EQ(Run({"PUNSUBSCRIBE"}), "*3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:0\r\n");
  EXPECT_EQ(Run({"UNSUBSCRIBE"}), "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
  EXPECT_EQ(Run({"PUNSUBSCRIBE", "zz"}), "*3\r\n$12\r\npunsubscribe\r\n$2\r\nzz\r\n:0\r\n");
  EXPECT_EQ(Run({"SUBSCRIBE"}), "-ERR wrong number of arguments for 'subscribe' command\r\n");
  EXPECT_EQ(Run({"PUBLISH", "a"}), "-ERR wrong number of arguments for 'publish' command\r\n");
}

TEST_F(PubSubCommandsTest, RespTwoSubscribedModeAllowsOnlyRedisSubset) {
  Run({"SUBSCRIBE", "a"});
  EXPECT_EQ(Run({"GET", "x"}),
            "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
            "RESET are allowed in this context\r\n");
  EXPECT_EQ(Run({"client", "list"}).substr(0, 35), "-ERR Can't execute 'client|list': o");
  EXPECT_EQ(Run({"PING"}), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
  EXPECT_EQ(Run({"PING", "hi"}), "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");
  EXPECT_EQ(Run({"UNSUBSCRIBE", "a"}), "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n");
  EXPECT_EQ(Run({"GET", "x"}), "$-1\r\n");  // out of subscribed mode
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
}

TEST_F(PubSubCommandsTest, RespThreePushesConfirmationsAndAllowsEveryCommand) {
  client_.proto = Proto::kResp3;
  EXPECT_EQ(Run({"SUBSCRIBE", "a"}), ">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(Run({"GET", "x"}), "_\r\n");
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(Run({"PUBLISH", "a", "m"}), ":1\r\n");  // allowed in RESP3; this client receives it
  EXPECT_EQ(subscriber_->frames,
            std::vector<std::string>{MessageFrame(Proto::kResp2, "", "a", "m")});
  EXPECT_EQ(Run({"UNSUBSCRIBE"}), ">3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n");
}

TEST_F(PubSubCommandsTest, PubSubIntrospection) {
  PubSubState other;  // another client's subscriptions: this one stays out of subscribed mode
  other.subscriber = std::make_shared<RecordingSubscriber>();
  executor_->pubsub().Subscribe(other, "q");
  executor_->pubsub().PSubscribe(other, "x*");
  executor_->pubsub().PSubscribe(other, "y*");
  EXPECT_EQ(Run({"PUBSUB", "NUMSUB", "q", "a"}), "*4\r\n$1\r\nq\r\n:1\r\n$1\r\na\r\n:0\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NUMSUB"}), "*0\r\n");
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS"}), "*1\r\n$1\r\nq\r\n");
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS", "z*"}), "*0\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NUMPAT"}), ":2\r\n");
  EXPECT_EQ(Run({"PUBSUB", "FOO"}), "-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.\r\n");
  EXPECT_EQ(Run({"PUBSUB"}), "-ERR wrong number of arguments for 'pubsub' command\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NUMPAT", "x"}),
            "-ERR wrong number of arguments for 'pubsub|numpat' command\r\n");
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS", "a", "b"}),
            "-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB "
            "HELP.\r\n");
}

// With peers: a (un)subscription is confirmed once the database has it, so a client told of
// it on another daemon finds it counted there.
TEST_F(PubSubCommandsTest, ConfirmationsWaitUntilTheDatabaseRecordedTheChange) {
  FakeCarrier carrier;
  executor_->pubsub().SetCarrier(&carrier);
  auto subscribed = Start({"SUBSCRIBE", "a", "b"});
  EXPECT_FALSE(Ready(subscribed));
  ASSERT_EQ(carrier.recording.size(), 2u);
  carrier.recording[0]();
  EXPECT_FALSE(Ready(subscribed));
  carrier.recording[1]();
  ASSERT_TRUE(Ready(subscribed));
  EXPECT_EQ(subscribed.get(),
            "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n");
  carrier.recording.clear();
  auto again = Start({"SUBSCRIBE", "a"});  // nothing changes: nothing to wait for
  EXPECT_TRUE(Ready(again));
  auto unsubscribed = Start({"UNSUBSCRIBE"});
  EXPECT_FALSE(Ready(unsubscribed));
  carrier.RecordAll();
  EXPECT_EQ(unsubscribed.get(),
            "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n"
            ":0\r\n");
  auto published = Start({"PUBLISH", "a", "m"});
  EXPECT_FALSE(Ready(published));
  carrier.published.at(0)(4);
  EXPECT_EQ(published.get(), ":4\r\n");
  executor_->pubsub().SetCarrier(nullptr);
}

TEST_F(PubSubCommandsTest, IntrospectionCountsEveryDaemonOrThisOneWhenTheDatabaseIsAway) {
  FakeCarrier carrier;
  executor_->pubsub().SetCarrier(&carrier);
  PubSubState other;
  other.subscriber = std::make_shared<RecordingSubscriber>();
  executor_->pubsub().Subscribe(other, "q");
  executor_->pubsub().PSubscribe(other, "x*");
  carrier.remote = {{false, "q", 2}, {false, "r", 1}, {true, "x*", 1}, {true, "z*", 3}};
  EXPECT_EQ(Run({"PUBSUB", "NUMSUB", "q", "r", "s"}),
            "*6\r\n$1\r\nq\r\n:3\r\n$1\r\nr\r\n:1\r\n$1\r\ns\r\n:0\r\n");
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS"}), "*2\r\n$1\r\nq\r\n$1\r\nr\r\n");
  EXPECT_EQ(Run({"PUBSUB", "CHANNELS", "r*"}), "*1\r\n$1\r\nr\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NUMPAT"}), ":2\r\n");  // x* counted once
  carrier.down = true;
  EXPECT_EQ(Run({"PUBSUB", "NUMSUB", "q", "r"}), "*4\r\n$1\r\nq\r\n:1\r\n$1\r\nr\r\n:0\r\n");
  EXPECT_EQ(Run({"PUBSUB", "NUMPAT"}), ":1\r\n");
  executor_->pubsub().RemoveAll(other);
  executor_->pubsub().SetCarrier(nullptr);
}

}  // namespace
}  // namespace skydb::resp
