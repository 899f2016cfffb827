// The pub/sub carrier (src/pgconn/pubsub_carrier.h) between carriers on one real PostgreSQL 15
// database, each standing for a daemon: messages of every size arrive whole, once and in order;
// large ones are read once by each reader and reclaimed; the registry counts live daemons only
// and forgets a silent one; an outage loses messages and the subscription set is announced
// again when the carrier is back (also after PostgreSQL lost its unlogged tables); no reply
// waits longer than the bound while PostgreSQL blocks the carrier; an unreachable database
// answers at once. Every wait is bounded. (Two real daemons: scaling_test.)
#include "pgconn/pubsub_carrier.h"

#include <fnmatch.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <thread>

#include "pubsub_payload.h"
#include "schema/migrate.h"
#include "skydb/mutex.h"
#include "skydb/schema.h"
#include "test_cluster.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

TestCluster* g_cluster = nullptr;

class ClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto cluster = TestCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.error().message;
    cluster_ = std::move(cluster).value();
    g_cluster = cluster_.get();
  }
  void TearDown() override {
    g_cluster = nullptr;
    cluster_.reset();
  }

 private:
  std::unique_ptr<TestCluster> cluster_;
};

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);

// A daemon's side of the carrier: what it was delivered, and its subscription set.
class Local final : public PubSubLocal {
 public:
  void DeliverRemote(std::string_view channel, std::string_view message) override {
    skydb::MutexLock lock(mu_);
    got_.emplace_back(channel, message);
    cv_.NotifyAll();
  }
  std::vector<SubscriptionCount> Subscriptions() const override {
    skydb::MutexLock lock(mu_);
    return set_;
  }
  void Set(std::vector<SubscriptionCount> set) {
    skydb::MutexLock lock(mu_);
    set_ = std::move(set);
  }
  // Waits (bounded) until `n` messages arrived; all of them.
  std::vector<std::pair<std::string, std::string>> WaitFor(size_t n,
                                                           milliseconds timeout = seconds(30)) {
    skydb::MutexLock lock(mu_);
    auto until = Clock::now() + timeout;
    while (got_.size() < n && Clock::now() < until) cv_.WaitUntil(mu_, until);
    return got_;
  }
  size_t count() const {
    skydb::MutexLock lock(mu_);
    return got_.size();
  }

 private:
  mutable Mutex mu_;
  CondVar cv_;
  std::vector<std::pair<std::string, std::string>> got_ GUARDED_BY(mu_);
  std::vector<SubscriptionCount> set_ GUARDED_BY(mu_);
};

class CarrierTest : public ::testing::Test {
 protected:
  std::unique_ptr<skydb::Clock> clock_ = NewRealClock();  // the Env's, for the carrier
  void SetUp() override {
    ASSERT_NE(g_cluster, nullptr);
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    db_ = "c_" + std::to_string(std::hash<std::string>{}(name) % 100000000);
    ASSERT_TRUE(g_cluster->Sql("DROP DATABASE IF EXISTS " + db_).ok());
    ASSERT_TRUE(g_cluster->Sql("CREATE DATABASE " + db_).ok());
    auto conn = pg::Connection::Open(g_cluster->ConnInfo(db_));
    ASSERT_TRUE(conn.ok()) << conn.error().message;
    auto applied = schema::ApplyMigrations(conn.value(), AllMigrations());
    ASSERT_TRUE(applied.ok()) << applied.error().message;
  }

  std::unique_ptr<PubSubCarrier> NewCarrier(Local& local, const std::string& name,
                                            milliseconds wait = seconds(10)) {
    pg::PubSubCarrierOptions o;
    o.conninfo = g_cluster->ConnInfo(db_) + " application_name=" + name;
    o.matches = [](std::string_view pattern, std::string_view channel) {
      return ::fnmatch(std::string(pattern).c_str(), std::string(channel).c_str(), 0) == 0;
    };
    o.peer_timeout = seconds(2);
    o.wait = wait;
    o.description = name;
    o.clock = clock_.get();
    auto carrier = pg::NewPubSubCarrier(std::move(o));
    carrier->Attach(&local);
    return carrier;
  }

  std::string Q(const std::string& sql) {
    auto r = g_cluster->Query(sql, db_);
    return r.ok() ? *r : "ERROR: " + r.error().message;
  }
  // Polls (up to 30 s) until `sql` answers `want`.
  bool Eventually(const std::string& sql, const std::string& want) {
    for (int i = 0; i < 300; ++i) {
      if (Q(sql) == want) return true;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return false;
  }
  bool Registered(size_t n) {
    return Eventually(
        "SELECT count(*) FROM skydb_pubsub_daemons WHERE heartbeat_at > now() - interval '2 s'",
        std::to_string(n));
  }

  static std::future<uint64_t> Publish(PubSubCarrier& c, std::string_view channel,
                                       std::string_view message) {
    auto promise = std::make_shared<std::promise<uint64_t>>();
    auto future = promise->get_future();
    c.Publish(channel, message, [promise](uint64_t remote) { promise->set_value(remote); });
    return future;
  }
  static bool Announce(PubSubCarrier& c, SubscriptionCount count,
                       milliseconds timeout = seconds(30)) {
    auto promise = std::make_shared<std::promise<void>>();
    auto future = promise->get_future();
    c.Announce(std::move(count), [promise] { promise->set_value(); });
    return future.wait_for(timeout) == std::future_status::ready;
  }
  static std::string Remote(PubSubCarrier& c, bool patterns,
                            std::optional<std::vector<std::string>> names = std::nullopt) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto future = promise->get_future();
    c.Remote(patterns, std::move(names), [promise](Result<std::vector<SubscriptionCount>> r) {
      if (!r.ok()) return promise->set_value("ERROR");
      std::sort(r->begin(), r->end(), [](auto& a, auto& b) { return a.name < b.name; });
      std::string out;
      for (const auto& one : *r) out += one.name + "=" + std::to_string(one.subscribers) + " ";
      promise->set_value(out);
    });
    if (future.wait_for(seconds(30)) != std::future_status::ready) return "TIMEOUT";
    return future.get();
  }
  static uint64_t Get(std::future<uint64_t>& f) {
    return f.wait_for(seconds(30)) == std::future_status::ready ? f.get() : 999;
  }

  std::string db_;
};

TEST_F(CarrierTest, MessagesOfEverySizeArriveWholeOnceAndInOrder) {
  Local la, lb;
  auto a = NewCarrier(la, "a");
  auto b = NewCarrier(lb, "b");
  ASSERT_TRUE(Registered(2));
  lb.Set({{false, "ch", 1}});
  ASSERT_TRUE(Announce(*b, {false, "ch", 1}));
  std::vector<size_t> sizes = {100, 5000, 6000, 16384, 37 * 1024, 256 * 1024, 1 << 20, 0, 1};
  std::vector<std::string> sent;
  std::vector<std::future<uint64_t>> replies;
  for (int round = 0; round < 3; ++round) {  // pipelined: batches of mixed sizes
    for (size_t i = 0; i < sizes.size(); ++i) {
      sent.push_back(PubSubPayload(sizes[i], round * 100 + static_cast<int>(i)));
      replies.push_back(Publish(*a, "ch", sent.back()));
      replies.push_back(Publish(*a, "nobody", "x"));  // no subscriber anywhere
    }
  }
  for (size_t i = 0; i < replies.size(); ++i) EXPECT_EQ(Get(replies[i]), i % 2 == 0 ? 1u : 0u) << i;
  auto got = lb.WaitFor(sent.size());
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(got[i].first, "ch");
    EXPECT_EQ(got[i].second.size(), sent[i].size()) << i;
    EXPECT_TRUE(got[i].second == sent[i]) << "message " << i << " differs";
  }
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(lb.count(), sent.size());  // nothing twice
  EXPECT_EQ(la.count(), 0u);           // a's own messages are not brought back to it
  EXPECT_EQ(Q("SELECT count(*) FROM skydb_pubsub_messages"), "0");  // read once, reclaimed
}

TEST_F(CarrierTest, ALargeMessageIsReadOnceByEachReaderThenReclaimed) {
  Local la, lb, lc;
  auto a = NewCarrier(la, "a");
  auto b = NewCarrier(lb, "b");
  auto c = NewCarrier(lc, "c");
  ASSERT_TRUE(Registered(3));
  ASSERT_TRUE(Announce(*b, {false, "sky:live:topic:t", 1}));
  ASSERT_TRUE(Announce(*c, {true, "sky:live:topic:*", 2}));
  std::string big = PubSubPayload(37 * 1024, 7);
  auto reply = Publish(*a, "sky:live:topic:t", big);
  EXPECT_EQ(Get(reply), 3u);  // b's subscriber and c's two pattern subscribers
  auto gb = lb.WaitFor(1), gc = lc.WaitFor(1);
  ASSERT_EQ(gb.size(), 1u);
  ASSERT_EQ(gc.size(), 1u);
  EXPECT_TRUE(gb[0].second == big && gc[0].second == big);
  EXPECT_TRUE(Eventually("SELECT count(*) FROM skydb_pubsub_messages", "0"));
}

TEST_F(CarrierTest, TheRegistryCountsLiveDaemonsOnlyAndForgetsASilentOne) {
  Local la, lb;
  auto a = NewCarrier(la, "a");
  auto b = NewCarrier(lb, "b");
  ASSERT_TRUE(Registered(2));
  std::string long_name(5000, 'n');  // longer than a btree entry may be: keyed by digest
  ASSERT_TRUE(Announce(*a, {false, "ch", 2}));
  ASSERT_TRUE(Announce(*a, {false, long_name, 1}));
  ASSERT_TRUE(Announce(*a, {true, "p*", 1}));
  EXPECT_EQ(Remote(*b, false, std::vector<std::string>{"ch", "zz"}), "ch=2 ");
  EXPECT_EQ(Remote(*b, false), "ch=2 " + long_name + "=1 ");
  EXPECT_EQ(Remote(*b, true), "p*=1 ");
  EXPECT_EQ(Remote(*a, false), "");  // a's own are not "remote" to it
  // A daemon that stopped heartbeating long ago, and one heartbeating now.
  ASSERT_EQ(
      Q("INSERT INTO skydb_pubsub_daemons VALUES (11, now() - interval '1 hour', now(), 'dead')"
        " RETURNING 1"),
      "1");
  ASSERT_EQ(Q("INSERT INTO skydb_pubsub_daemons VALUES (12, now(), now(), 'alive') RETURNING 1"),
            "1");
  ASSERT_EQ(Q("INSERT INTO skydb_pubsub_subscriptions (daemon, pattern, name, subscribers) VALUES"
              " (11, false, 'ch', 5), (12, false, 'ch', 7) RETURNING 1"),
            "1");
  EXPECT_EQ(Remote(*b, false, std::vector<std::string>{"ch"}), "ch=9 ");  // 2 + 7
  auto reply = Publish(*b, "ch", "counted");
  EXPECT_EQ(Get(reply), 9u);
  // 12 goes silent: it stops counting once its heartbeat is older than the peer timeout (2 s).
  auto silent_at = Clock::now();
  std::string count;
  while (Clock::now() - silent_at < seconds(10)) {
    count = Remote(*b, false, std::vector<std::string>{"ch"});
    if (count == "ch=2 ") break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(count, "ch=2 ");
  EXPECT_LE(Clock::now() - silent_at, milliseconds(2500));
  // Silent for longer than 3 x the peer timeout: swept with its subscriptions.
  EXPECT_TRUE(Eventually("SELECT count(*) FROM skydb_pubsub_daemons WHERE id = 11", "0"));
  EXPECT_TRUE(Eventually("SELECT count(*) FROM skydb_pubsub_subscriptions WHERE daemon = 11", "0"));
  // A clean stop takes a daemon out at once.
  a.reset();
  EXPECT_EQ(Remote(*b, false), "");
  EXPECT_EQ(Remote(*b, true), "");
}

TEST_F(CarrierTest, AnOutageLosesMessagesAndTheSetIsAnnouncedAgainWhenBack) {
  Local la, lb;
  auto a = NewCarrier(la, "a");
  auto b = NewCarrier(lb, "b");
  ASSERT_TRUE(Registered(2));
  lb.Set({{false, "ch", 1}});
  ASSERT_TRUE(Announce(*b, {false, "ch", 1}));
  auto first = Publish(*a, "ch", "before");
  EXPECT_EQ(Get(first), 1u);
  ASSERT_EQ(lb.WaitFor(1).size(), 1u);
  // b's listener is cut: b leaves the registry (its sender removes it: a new row when it is
  // back) and comes back with its whole set; a publishes a numbered stream meanwhile.
  std::string registered_at = "SELECT started_at FROM skydb_pubsub_daemons WHERE description = 'b'";
  std::string old_start = Q(registered_at);
  EXPECT_EQ(Q("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
              "application_name = 'b' AND query LIKE 'LISTEN%'"),
            "1");
  bool back = false;
  char probe[32];
  for (int i = 0; i < 300 && !back; ++i) {
    // The new registration first, then the probe: a probe counted against the old row, just
    // before it went, is lost with the old listener.
    std::string start = Q(registered_at);
    bool registered_again = !start.empty() && start != old_start;
    std::snprintf(probe, sizeof probe, "probe %04d", i);
    auto reply = Publish(*a, "ch", probe);
    back = registered_again && Get(reply) == 1;
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(back) << "b did not register again after its listener was cut";
  auto after = Publish(*a, "ch", "probe 9999");
  EXPECT_EQ(Get(after), 1u);
  auto got = lb.WaitFor(3);
  ASSERT_GE(got.size(), 3u);
  got = lb.WaitFor(1000, milliseconds(500));
  EXPECT_EQ(got.back().second, "probe 9999");
  for (size_t i = 2; i < got.size(); ++i) {
    EXPECT_LT(got[i - 1].second, got[i].second);  // what the outage did not lose: in order, once
  }
  // PostgreSQL lost the unlogged tables (as after its crash): b's next heartbeat finds its row
  // gone and announces its set again.
  ASSERT_EQ(Q("WITH d AS (DELETE FROM skydb_pubsub_daemons RETURNING 1),"
              " s AS (DELETE FROM skydb_pubsub_subscriptions RETURNING 1) SELECT 1"),
            "1");
  EXPECT_TRUE(
      Eventually("SELECT string_agg(encode(name, 'escape'), ',') FROM "
                 "skydb_pubsub_subscriptions",
                 "ch"));
  EXPECT_TRUE(Registered(2));
  auto again = Publish(*a, "ch", "again");
  EXPECT_EQ(Get(again), 1u);
  EXPECT_EQ(lb.WaitFor(got.size() + 1).back().second, "again");
}

TEST_F(CarrierTest, NoReplyWaitsLongerThanTheBoundWhilePostgresBlocksTheCarrier) {
  Local la, lb;
  auto a = NewCarrier(la, "a", seconds(1));
  auto b = NewCarrier(lb, "b");
  ASSERT_TRUE(Registered(2));
  ASSERT_TRUE(Announce(*b, {false, "ch", 1}));
  // Another session holds the registry locked: a's statements wait for it.
  PGconn* locker = PQconnectdb(g_cluster->ConnInfo(db_).c_str());
  ASSERT_EQ(PQstatus(locker), CONNECTION_OK);
  PQclear(PQexec(locker, "BEGIN; LOCK TABLE skydb_pubsub_subscriptions IN ACCESS EXCLUSIVE MODE"));
  auto started = Clock::now();
  auto blocked = Publish(*a, "ch", "blocked");
  bool announced = Announce(*a, {false, "mine", 1}, seconds(5));
  std::string asked = Remote(*a, false);
  EXPECT_EQ(Get(blocked), 0u);  // answered with this daemon's part only
  EXPECT_TRUE(announced);
  EXPECT_EQ(asked, "ERROR");
  EXPECT_LT(Clock::now() - started, seconds(4));
  PQclear(PQexec(locker, "COMMIT"));
  PQfinish(locker);
  // The carrier goes on once PostgreSQL answers (the blocked message may or may not have
  // been carried after its reply: at most once).
  auto next = Publish(*a, "ch", "next");
  EXPECT_EQ(Get(next), 1u);
  auto got = lb.WaitFor(1);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(lb.WaitFor(got.size() == 1 && got[0].second == "blocked" ? 2 : 1).back().second,
            "next");
}

TEST_F(CarrierTest, AnUnreachableDatabaseIsAnsweredAtOnce) {
  Local local;
  pg::PubSubCarrierOptions o;
  o.conninfo = "host=/nonexistent/skydb-test dbname=x connect_timeout=1";
  o.matches = [](std::string_view, std::string_view) { return false; };
  o.clock = clock_.get();
  auto carrier = pg::NewPubSubCarrier(std::move(o));
  carrier->Attach(&local);
  auto started = Clock::now();
  auto reply = Publish(*carrier, "ch", "m");
  EXPECT_EQ(Get(reply), 0u);
  EXPECT_TRUE(Announce(*carrier, {false, "ch", 1}, seconds(5)));
  EXPECT_EQ(Remote(*carrier, false), "ERROR");
  EXPECT_LT(Clock::now() - started, seconds(5));
  carrier->Attach(nullptr);
}

}  // namespace
}  // namespace skydb::testing
