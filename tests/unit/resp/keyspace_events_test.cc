// Keyspace notifications and CONFIG: the classes as Redis reads and prints them, the events each
// command's reply shows (a table), and the executor publishing them through the hub, expired
// keys included, with Redis's CONFIG errors.
#include "resp/keyspace_events.h"

#include <gtest/gtest.h>

#include <future>
#include <initializer_list>
#include <thread>

#include "resp/command_table.h"
#include "resp/commands.h"
#include "skydb/store.h"
#include "support/fakes.h"

namespace skydb::resp {
namespace {

// Redis's own vectors (unit/pubsub.tcl, "test CONFIG GET/SET of event flags").
TEST(NotifyClasses, ReadAndPrintedAsRedisDoes) {
  struct Row {
    const char* set;
    const char* get;
  };
  for (const Row& row :
       {Row{"gKE", "gKE"}, Row{"$lshzxeKE", "$lshzxeKE"}, Row{"KA", "AK"}, Row{"EA", "AE"},
        Row{"Egx", "gxE"}, Row{"", ""}, Row{"KEA", "AKE"}, Row{"Exn", "xnE"}, Row{"Km", "Km"}}) {
    SCOPED_TRACE(row.set);
    auto bits = ParseNotifyClasses(row.set);
    ASSERT_TRUE(bits.has_value());
    EXPECT_EQ(NotifyClassesText(*bits), row.get);
  }
  EXPECT_FALSE(ParseNotifyClasses("Kq").has_value());
  EXPECT_FALSE(ParseNotifyClasses("k").has_value());
}

TEST(EventsOfReply, EachCommandAsRedisNamesIt) {
  struct Row {
    std::vector<std::string> args;
    std::string reply;
    std::vector<KeyEvent> events;
  };
  constexpr uint32_t g = kNotifyGeneric, str = kNotifyString, h = kNotifyHash, s = kNotifySet;
  const UnixMillis now = 1'700'000'000'000;
  auto ev = [](uint32_t klass, const char* name, const char* key) {
    return KeyEvent{klass, name, key};
  };
  const std::vector<Row> rows = {
      {{"set", "k", "v"}, "+OK\r\n", {ev(str, "set", "k")}},
      {{"set", "k", "v", "NX"}, "$-1\r\n", {}},
      {{"set", "k", "v", "EX", "10"}, "+OK\r\n", {ev(str, "set", "k"), ev(g, "expire", "k")}},
      {{"set", "k", "v", "NX", "GET"}, "$-1\r\n", {ev(str, "set", "k")}},
      {{"set", "k", "v", "NX", "GET"}, "$1\r\nx\r\n", {}},
      {{"set", "k", "v", "XX", "GET"}, "_\r\n", {}},
      {{"setex", "k", "10", "v"}, "+OK\r\n", {ev(str, "set", "k"), ev(g, "expire", "k")}},
      {{"setnx", "k", "v"}, ":0\r\n", {}},
      {{"mset", "a", "1", "b", "2"}, "+OK\r\n", {ev(str, "set", "a"), ev(str, "set", "b")}},
      {{"incr", "n"}, ":1\r\n", {ev(str, "incrby", "n")}},
      {{"decrby", "n", "2"}, ":-1\r\n", {ev(str, "incrby", "n")}},
      {{"incrbyfloat", "n", "1.5"}, "$3\r\n0.5\r\n", {ev(str, "incrbyfloat", "n")}},
      {{"incr", "n"}, "-ERR value is not an integer or out of range\r\n", {}},
      {{"del", "k"}, ":1\r\n", {ev(g, "del", "k")}},
      {{"del", "k"}, ":0\r\n", {}},
      {{"del", "a", "b"}, ":2\r\n", {}},  // announced by DeleteAnnounced, key by key
      {{"getdel", "k"}, "$1\r\nv\r\n", {ev(g, "del", "k")}},
      {{"getex", "k", "PX", "10"}, "$1\r\nv\r\n", {ev(g, "expire", "k")}},
      {{"getex", "k"}, "$1\r\nv\r\n", {}},
      {{"expire", "k", "10"}, ":1\r\n", {ev(g, "expire", "k")}},
      {{"expire", "k", "0"}, ":1\r\n", {ev(g, "del", "k")}},
      {{"expire", "k", "10", "NX"}, ":0\r\n", {}},
      {{"pexpireat", "k", "1"}, ":1\r\n", {ev(g, "del", "k")}},
      {{"expireat", "k", std::to_string(now / 1000 + 60)}, ":1\r\n", {ev(g, "expire", "k")}},
      {{"persist", "k"}, ":1\r\n", {ev(g, "persist", "k")}},
      {{"rename", "a", "b"}, "+OK\r\n", {ev(g, "rename_from", "a"), ev(g, "rename_to", "b")}},
      {{"renamenx", "a", "b"}, ":0\r\n", {}},
      {{"hset", "h", "f", "v"}, ":0\r\n", {ev(h, "hset", "h")}},
      {{"hmset", "h", "f", "v"}, "+OK\r\n", {ev(h, "hset", "h")}},
      {{"hsetnx", "h", "f", "v"}, ":0\r\n", {}},
      {{"hdel", "h", "f"}, ":1\r\n", {ev(h, "hdel", "h")}},
      {{"hdel", "h", "f"}, ":0\r\n", {}},
      {{"hincrby", "h", "f", "1"}, ":3\r\n", {ev(h, "hincrby", "h")}},
      {{"hincrbyfloat", "h", "f", "1"}, "$1\r\n3\r\n", {ev(h, "hincrbyfloat", "h")}},
      {{"hexpire", "h", "10", "FIELDS", "2", "a", "b"},
       "*2\r\n:1\r\n:-2\r\n",
       {ev(h, "hexpire", "h")}},
      {{"hpexpire", "h", "0", "FIELDS", "1", "a"}, "*1\r\n:2\r\n", {ev(h, "hdel", "h")}},
      {{"hpersist", "h", "FIELDS", "1", "a"}, "*1\r\n:1\r\n", {ev(h, "hpersist", "h")}},
      {{"hpersist", "h", "FIELDS", "1", "a"}, "*1\r\n:-1\r\n", {}},
      {{"sadd", "s", "a"}, ":1\r\n", {ev(s, "sadd", "s")}},
      {{"sadd", "s", "a"}, ":0\r\n", {}},
      {{"srem", "s", "x"}, ":0\r\n", {}},
      {{"spop", "s"}, "$1\r\na\r\n", {ev(s, "spop", "s")}},
      {{"spop", "s", "2"}, "*0\r\n", {}},
      {{"smove", "s", "t", "a"}, ":1\r\n", {ev(s, "srem", "s"), ev(s, "sadd", "t")}},
      {{"sunionstore", "d", "a", "b"}, ":2\r\n", {ev(s, "sunionstore", "d")}},
      {{"get", "k"}, "$1\r\nv\r\n", {}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.args[0] + " " + row.args[1] + " -> " + row.reply);
    EXPECT_EQ(EventsOfReply(row.args, row.reply, now), row.events);
  }
}

// The frames the hub delivers to one pattern subscriber.
class EventSubscriber final : public Subscriber {
 public:
  void Deliver(const SharedFrame& frame) override {
    MutexLock lock(mu_);
    frames_.push_back(*frame);
  }
  std::vector<std::string> frames() const {
    MutexLock lock(mu_);
    return frames_;
  }
  void Clear() {
    MutexLock lock(mu_);
    frames_.clear();
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> frames_ GUARDED_BY(mu_);
};

class NotifyTest : public ::testing::Test {
 protected:
  NotifyTest() {
    MemoryTierOptions memory;
    memory.default_ttl = std::chrono::milliseconds(0);
    memory.sweep_interval = std::chrono::milliseconds(5);
    store_ = NewMemoryStore(memory, clock_);
    executor_ = std::make_unique<CommandExecutor>(ExecutorConfig{}, *store_, clock_, counters_);
    listener_.subscriber = subscriber_;
    executor_->pubsub().PSubscribe(listener_, "*");
  }
  ~NotifyTest() override { executor_->pubsub().RemoveAll(listener_); }

  std::string Send(std::initializer_list<std::string> args) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto future = promise->get_future();
    executor_->Execute(client_, std::vector<std::string>(args),
                       [promise](std::string reply) { promise->set_value(std::move(reply)); });
    if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return "timeout";
    return future.get();
  }
  static std::string Frame(const std::string& channel, const std::string& message) {
    return MessageFrame(Proto::kResp2, "*", channel, message);
  }
  // Waits (bounded) until `n` frames arrived.
  std::vector<std::string> FramesAfter(size_t n) {
    for (int i = 0; i < 400 && subscriber_->frames().size() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return subscriber_->frames();
  }

  testing::FakeClock clock_;
  std::unique_ptr<SessionStore> store_;
  ServerCounters counters_;
  std::unique_ptr<CommandExecutor> executor_;
  ClientState client_;
  std::shared_ptr<EventSubscriber> subscriber_ = std::make_shared<EventSubscriber>();
  PubSubState listener_;
};

TEST_F(NotifyTest, OffByDefaultThenBothChannelsAfterConfigSet) {
  EXPECT_EQ(Send({"SET", "foo", "bar"}), "+OK\r\n");
  EXPECT_TRUE(subscriber_->frames().empty());
  EXPECT_EQ(Send({"CONFIG", "SET", "notify-keyspace-events", "KEA"}), "+OK\r\n");
  EXPECT_EQ(Send({"CONFIG", "GET", "notify-keyspace-events"}),
            "*2\r\n$22\r\nnotify-keyspace-events\r\n$3\r\nAKE\r\n");
  EXPECT_EQ(Send({"SET", "foo", "bar"}), "+OK\r\n");
  EXPECT_EQ(FramesAfter(2), (std::vector<std::string>{Frame("__keyspace@0__:foo", "set"),
                                                      Frame("__keyevent@0__:set", "foo")}));
}

TEST_F(NotifyTest, MaskedClassesAndPartialDeletesAnnounceOnlyWhatHappened) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "Eg"});
  Send({"SET", "a", "1"});  // $ is off
  Send({"SET", "c", "1"});
  EXPECT_EQ(Send({"DEL", "a", "b", "c", "a"}), ":2\r\n");
  EXPECT_EQ(FramesAfter(2), (std::vector<std::string>{Frame("__keyevent@0__:del", "a"),
                                                      Frame("__keyevent@0__:del", "c")}));
}

TEST_F(NotifyTest, TransactionEventsComeWithItsCommands) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "Eh$"});
  Send({"MULTI"});
  Send({"HSET", "h", "f", "v"});
  Send({"SET", "k", "v"});
  EXPECT_EQ(Send({"EXEC"}), "*2\r\n:1\r\n+OK\r\n");
  EXPECT_EQ(FramesAfter(2), (std::vector<std::string>{Frame("__keyevent@0__:hset", "h"),
                                                      Frame("__keyevent@0__:set", "k")}));
}

// A script's writes are announced as the same commands sent alone would be, in order, once the
// script's one transaction has committed.
TEST_F(NotifyTest, AScriptsWritesAreAnnouncedAsItsCommands) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "Eh$g"});
  EXPECT_EQ(Send({"EVAL",
                  "redis.call('set', KEYS[1], '1'); redis.call('hset', KEYS[2], 'f', 'v');"
                  " redis.call('get', KEYS[1]); return redis.call('del', KEYS[1])",
                  "2", "k", "h"}),
            ":1\r\n");
  EXPECT_EQ(FramesAfter(3), (std::vector<std::string>{Frame("__keyevent@0__:set", "k"),
                                                      Frame("__keyevent@0__:hset", "h"),
                                                      Frame("__keyevent@0__:del", "k")}));
}

TEST_F(NotifyTest, ExpiredKeysAreAnnouncedOnceWhetherReadOrSwept) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "Ex"});
  Send({"PSETEX", "read", "100", "1"});
  Send({"PSETEX", "swept", "100", "1"});
  clock_.Advance(std::chrono::milliseconds(200));
  EXPECT_EQ(Send({"EXISTS", "read"}), ":0\r\n");
  auto frames = FramesAfter(2);
  std::sort(frames.begin(), frames.end());
  EXPECT_EQ(frames, (std::vector<std::string>{Frame("__keyevent@0__:expired", "read"),
                                              Frame("__keyevent@0__:expired", "swept")}));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(subscriber_->frames().size(), 2u);
}

// Redis 7.4's "hexpired": a hash whose field passed its own deadline, once; "del" (g) when it
// took the last field.
TEST_F(NotifyTest, HashesWithExpiredFieldsAreAnnounced) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "Ehg"});
  Send({"HSET", "h", "a", "1", "b", "2"});
  EXPECT_EQ(Send({"HPEXPIRE", "h", "100", "FIELDS", "1", "a"}), "*1\r\n:1\r\n");
  clock_.Advance(std::chrono::milliseconds(200));
  EXPECT_EQ(FramesAfter(3), (std::vector<std::string>{Frame("__keyevent@0__:hset", "h"),
                                                      Frame("__keyevent@0__:hexpire", "h"),
                                                      Frame("__keyevent@0__:hexpired", "h")}));
  Send({"HPEXPIRE", "h", "100", "FIELDS", "1", "b"});
  clock_.Advance(std::chrono::milliseconds(200));
  auto frames = FramesAfter(6);
  ASSERT_EQ(frames.size(), 6u);
  EXPECT_EQ(frames[4], Frame("__keyevent@0__:hexpired", "h"));
  EXPECT_EQ(frames[5], Frame("__keyevent@0__:del", "h"));
}

// Redis's own vector (unit/pubsub.tcl, "new key test"), then the other creating commands: a
// key's "new" comes just before the event that created it, and only when it was absent.
TEST_F(NotifyTest, NewKeysAreAnnouncedOnceBeforeTheirWrite) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "En"});
  Send({"SET", "foo", "bar"});
  Send({"SET", "foo", "baz"});
  Send({"SET", "bar", "bar"});
  EXPECT_EQ(FramesAfter(2), (std::vector<std::string>{Frame("__keyevent@0__:new", "foo"),
                                                      Frame("__keyevent@0__:new", "bar")}));
  subscriber_->Clear();
  Send({"CONFIG", "SET", "notify-keyspace-events", "En$hs"});
  EXPECT_EQ(Send({"MSET", "bar", "1", "m", "2"}), "+OK\r\n");
  EXPECT_EQ(Send({"SET", "x", "1", "XX"}), "$-1\r\n");  // nothing created
  EXPECT_EQ(Send({"HSET", "h", "f", "v"}), ":1\r\n");
  EXPECT_EQ(Send({"SADD", "s", "a"}), ":1\r\n");
  EXPECT_EQ(Send({"SADD", "s", "b"}), ":1\r\n");
  EXPECT_EQ(Send({"INCR", "n"}), ":1\r\n");
  EXPECT_EQ(Send({"HINCRBY", "h", "g", "1"}), ":1\r\n");
  EXPECT_EQ(FramesAfter(11),
            (std::vector<std::string>{
                Frame("__keyevent@0__:set", "bar"), Frame("__keyevent@0__:new", "m"),
                Frame("__keyevent@0__:set", "m"), Frame("__keyevent@0__:new", "h"),
                Frame("__keyevent@0__:hset", "h"), Frame("__keyevent@0__:new", "s"),
                Frame("__keyevent@0__:sadd", "s"), Frame("__keyevent@0__:sadd", "s"),
                Frame("__keyevent@0__:new", "n"), Frame("__keyevent@0__:incrby", "n"),
                Frame("__keyevent@0__:hincrby", "h")}));
}

// Inside EXEC each command sees the state the one before it left; RENAME's destination is
// "new" whether it was there (Redis deletes it and adds it again).
TEST_F(NotifyTest, NewKeysInsideTransactionsScriptsAndRenames) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "En"});
  Send({"MULTI"});
  Send({"SET", "t", "1"});
  Send({"SET", "t", "2"});
  Send({"SADD", "u", "x"});
  EXPECT_EQ(Send({"EXEC"}), "*3\r\n+OK\r\n+OK\r\n:1\r\n");
  EXPECT_EQ(Send({"EVAL", "redis.call('set', KEYS[1], '1'); return redis.call('set', KEYS[1], '2')",
                  "1", "v"}),
            "+OK\r\n");
  EXPECT_EQ(Send({"RENAME", "t", "v"}), "+OK\r\n");
  EXPECT_EQ(FramesAfter(4),
            (std::vector<std::string>{
                Frame("__keyevent@0__:new", "t"), Frame("__keyevent@0__:new", "u"),
                Frame("__keyevent@0__:new", "v"), Frame("__keyevent@0__:new", "v")}));
}

// A read that finds no key is a "keymiss" (class m, which A does not include); a read of an
// existing key, a missing field of an existing hash, a write, and an error are not.
TEST_F(NotifyTest, KeyMissesAreAnnouncedForReadsOnly) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "KEA"});
  EXPECT_EQ(Send({"GET", "nope"}), "$-1\r\n");
  EXPECT_TRUE(subscriber_->frames().empty());
  Send({"CONFIG", "SET", "notify-keyspace-events", "Em"});
  Send({"HSET", "h", "f", "v"});
  Send({"SET", "a", "1"});
  EXPECT_EQ(Send({"GET", "nope"}), "$-1\r\n");
  EXPECT_EQ(Send({"HGET", "h", "nofield"}), "$-1\r\n");
  EXPECT_EQ(Send({"HGET", "nohash", "f"}), "$-1\r\n");
  EXPECT_EQ(Send({"MGET", "a", "m1", "m2"}), "*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n");
  EXPECT_EQ(Send({"SISMEMBER", "noset", "x"}), ":0\r\n");
  EXPECT_EQ(Send({"TTL", "gone"}), ":-2\r\n");
  EXPECT_EQ(Send({"INCR", "counter"}), ":1\r\n");
  EXPECT_EQ(Send({"GETEX", "nope", "BADOPTION"}), "-ERR syntax error\r\n");
  Send({"MULTI"});
  Send({"GET", "intx"});
  EXPECT_EQ(Send({"EXEC"}), "*1\r\n$-1\r\n");
  EXPECT_EQ(FramesAfter(7),
            (std::vector<std::string>{
                Frame("__keyevent@0__:keymiss", "nope"), Frame("__keyevent@0__:keymiss", "nohash"),
                Frame("__keyevent@0__:keymiss", "m1"), Frame("__keyevent@0__:keymiss", "m2"),
                Frame("__keyevent@0__:keymiss", "noset"), Frame("__keyevent@0__:keymiss", "gone"),
                Frame("__keyevent@0__:keymiss", "intx")}));
}

// Redis's keyspace tests silence their subscriber's replies (CLIENT REPLY OFF / SKIP).
TEST_F(NotifyTest, ClientReplyOffAndSkipSilenceRepliesNotEvents) {
  Send({"CONFIG", "SET", "notify-keyspace-events", "E$"});
  EXPECT_EQ(Send({"CLIENT", "REPLY", "OFF"}), "");
  EXPECT_EQ(Send({"SET", "a", "1"}), "");
  EXPECT_EQ(Send({"CLIENT", "REPLY", "ON"}), "+OK\r\n");
  EXPECT_EQ(Send({"CLIENT", "REPLY", "SKIP"}), "");
  EXPECT_EQ(Send({"GET", "a"}), "");
  EXPECT_EQ(Send({"GET", "a"}), "$1\r\n1\r\n");
  EXPECT_EQ(Send({"CLIENT", "REPLY", "MAYBE"}), "-ERR syntax error\r\n");
  EXPECT_EQ(FramesAfter(1), (std::vector<std::string>{Frame("__keyevent@0__:set", "a")}));
}

TEST_F(NotifyTest, ConfigAnswersRedisErrors) {
  EXPECT_EQ(Send({"CONFIG", "SET", "notify-keyspace-events", "Kq"}),
            "-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
            "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.\r\n");
  EXPECT_EQ(Send({"CONFIG", "SET", "no-such-thing", "1"}),
            "-ERR Unknown option or number of arguments for CONFIG SET - 'no-such-thing'\r\n");
  EXPECT_EQ(Send({"CONFIG", "SET", "maxclients", "5"}),
            "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - can't set "
            "immutable config\r\n");
  EXPECT_EQ(Send({"CONFIG", "SET", "timeout", "x"}),
            "-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't "
            "be parsed into an integer\r\n");
  EXPECT_EQ(Send({"CONFIG", "SET", "timeout"}),
            "-ERR wrong number of arguments for 'config|set' command\r\n");
  EXPECT_EQ(Send({"CONFIG", "SET", "timeout", "1", "loglevel"}), "-ERR syntax error\r\n");
  // A bad value anywhere applies nothing.
  EXPECT_EQ(Send({"CONFIG", "SET", "timeout", "30", "loglevel", "loud"}).substr(0, 60),
            "-ERR CONFIG SET failed (possibly related to argument 'loglev");
  EXPECT_EQ(Send({"CONFIG", "GET", "timeout"}), "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n");
  EXPECT_EQ(Send({"CONFIG", "SET", "timeout", "30", "notify-keyspace-events", "Egx"}), "+OK\r\n");
  EXPECT_EQ(executor_->settings().idle_timeout(), std::chrono::seconds(30));
  EXPECT_EQ(Send({"CONFIG", "GET", "time*", "notify*"}),
            "*4\r\n$22\r\nnotify-keyspace-events\r\n$3\r\ngxE\r\n$7\r\ntimeout\r\n$2\r\n30\r\n");
  EXPECT_EQ(Send({"CONFIG", "NOPE"}), "-ERR unknown subcommand 'NOPE'. Try CONFIG HELP.\r\n");
  EXPECT_EQ(Send({"CONFIG", "HELP"}).substr(0, 4), "*9\r\n");
}

TEST_F(NotifyTest, ResetStatStartsTheCommandFiguresAgain) {
  Send({"SET", "k", "v"});
  Send({"NOSUCH"});
  EXPECT_EQ(Send({"CONFIG", "RESETSTAT"}), "+OK\r\n");
  EXPECT_EQ(counters_.commands->errors_total.load(), 0u);
  EXPECT_EQ(counters_.commands->calls(static_cast<size_t>(FindCommand("set") - &AllCommands()[0])),
            0u);
  EXPECT_TRUE(counters_.commands->errors.Snapshot().empty());
}

}  // namespace
}  // namespace skydb::resp
