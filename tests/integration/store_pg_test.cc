// The shared store suite over real PostgreSQL 15, plus what only a real server shows.
#include <libpq-fe.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <sstream>
#include <thread>

#include "skydb/durable.h"
#include "skydb/schema.h"
#include "support/store_suite.h"
#include "test_cluster.h"

namespace skydb::testing {
namespace {

TestCluster* g_cluster = nullptr;

void Exec(const std::string& sql) {
  PGconn* conn = PQconnectdb(g_cluster->ConnInfo().c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  PGresult* res = PQexec(conn, sql.c_str());
  EXPECT_TRUE(PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
      << PQresultErrorMessage(res);
  PQclear(res);
  PQfinish(conn);
}

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

// Fresh session-store tables per harness, created by the session store's own migrations.
void ResetSchema() {
  Exec("DROP TABLE IF EXISTS sky_fields, sky_sessions");
  for (const auto& m : AllMigrations()) {
    if (m.version >= kFirstSessionStoreMigration) Exec(m.sql);
  }
}

class PgHarness final : public StoreHarness {
 public:
  explicit PgHarness(Durability durability, bool shared = false, bool reset = true) {
    if (reset) ResetSchema();
    options_.durability = durability;
    options_.shared = shared;
    if (shared) options_.ttl_persist_slack = std::chrono::milliseconds(0);
    options_.flush_interval = std::chrono::milliseconds(2);
    Open();
  }
  ~PgHarness() override { Close(); }
  SessionStore& store() override { return *store_; }
  FakeClock& clock() override { return clock_; }
  bool durable() const override { return true; }
  bool exact_count() const override { return !options_.shared; }
  void Restart() override {
    Close();
    Open();
  }

 private:
  void Open() {
    auto made = NewTieredStore(options_, clock_,
                               NewPostgresDurable(g_cluster->ConnInfo(), "test postgres",
                                                  options_.writers, options_.readers));
    ASSERT_TRUE(made.ok()) << made.error().message;
    store_ = std::move(made).value();
  }
  void Close() {
    if (store_) (void)store_->Close(std::chrono::seconds(10));
    store_.reset();
  }
  FakeClock clock_;
  TieredOptions options_;
  std::unique_ptr<SessionStore> store_;
};

INSTANTIATE_TEST_SUITE_P(
    Postgres, StoreBehaviour,
    ::testing::Values(
        NamedFactory{"Sync", [] { return std::make_unique<PgHarness>(Durability::kSync); }},
        NamedFactory{"Async", [] { return std::make_unique<PgHarness>(Durability::kAsync); }},
        NamedFactory{"SharedSync",
                     [] { return std::make_unique<PgHarness>(Durability::kSync, true); }}),
    FactoryName);

// Two shared stores on one table, as two daemons on one database: each reads the other's
// acknowledged writes, deletes and deadlines; SCAN over PostgreSQL walks every key once.
TEST(PostgresShared, TwoStoresReadEachOthersAcknowledgedWrites) {
  PgHarness a(Durability::kSync, /*shared=*/true);
  PgHarness b(Durability::kSync, /*shared=*/true, /*reset=*/false);
  ASSERT_TRUE(a.Set("s", std::string("a\0'\\", 4), Expiry::None()).ok());
  EXPECT_EQ(**b.Get("s"), std::string("a\0'\\", 4));
  ASSERT_TRUE(b.Set("s", "from-b", Expiry::None()).ok());
  EXPECT_EQ(**a.Get("s"), "from-b");
  ASSERT_TRUE(*a.Expire("s", Expiry::At(a.NowMs() + 5000)));
  auto ttl = b.Ttl("s");
  ASSERT_EQ(ttl->state, TtlReply::State::kExpiring);
  EXPECT_LE(ttl->remaining_ms, 5000);
  ASSERT_EQ(*b.Del({"s"}), 1);
  EXPECT_FALSE(a.Get("s")->has_value());
  for (int i = 0; i < 120; ++i) {
    ASSERT_TRUE((i % 2 == 0 ? a : b).Set("k" + std::to_string(i), "v").ok());
  }
  auto keys = a.ScanAll("k*", 7);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys.size(), 120u);
  EXPECT_EQ(std::unique(keys.begin(), keys.end()), keys.end());
}

// A session of another writer (another daemon's commit in flight), on its own connection.
class OtherWriter {
 public:
  OtherWriter() : conn_(PQconnectdb(g_cluster->ConnInfo().c_str())) {
    EXPECT_EQ(PQstatus(conn_), CONNECTION_OK) << PQerrorMessage(conn_);
  }
  ~OtherWriter() { PQfinish(conn_); }
  void Run(const std::string& sql) {
    PGresult* res = PQexec(conn_, sql.c_str());
    EXPECT_TRUE(PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
        << PQresultErrorMessage(res);
    PQclear(res);
  }

 private:
  PGconn* conn_;
};

template <typename T>
struct Answer {
  std::shared_ptr<std::promise<Result<T>>> promise = std::make_shared<std::promise<Result<T>>>();
  std::future<Result<T>> future = promise->get_future();
  StoreCallback<T> cb() {
    return [p = promise](Result<T> r) { p->set_value(std::move(r)); };
  }
  bool answered(std::chrono::milliseconds wait) {
    return future.wait_for(wait) == std::future_status::ready;
  }
};

// The window EXEC's re-read of its watched rows leaves under shared coherence: another writer
// whose write commits after that read and before EXEC's own COMMIT. Here that writer holds the
// row (or, for an absent key, its insert) in an open transaction: EXEC's COMMIT must wait for
// it, see the change and apply nothing, and a read of the key meanwhile waits for the verdict.
TEST(PostgresShared, WatchRefusesAWriteCommittedBetweenExecsReadAndItsCommit) {
  PgHarness a(Durability::kSync, /*shared=*/true);
  ASSERT_TRUE(a.Set("k", "v", Expiry::None()).ok());
  for (std::string key : {"k", "absent"}) {
    SCOPED_TRACE(key);
    auto watch = std::make_shared<WatchList>();
    ASSERT_TRUE(Await<bool>([&](StoreCallback<bool> cb) {
                  a.store().Watch({key}, watch, std::move(cb));
                }).ok());
    OtherWriter other;
    other.Run("BEGIN");
    other.Run("INSERT INTO sky_sessions (id, data) VALUES (convert_to('" + key +
              "', 'UTF8'), convert_to('from b', 'UTF8')) ON CONFLICT (id) DO UPDATE SET data = "
              "excluded.data");
    std::vector<TxOp> ops;
    ops.emplace_back(tx::Set{SetRequest{key, "from a", Expiry::None()}, [](Result<SetReply>) {}});
    ops.emplace_back(
        tx::Set{SetRequest{"also", "from a", Expiry::None()}, [](Result<SetReply>) {}});
    Answer<bool> exec;
    a.store().Transact(std::move(ops), watch, exec.cb());
    EXPECT_FALSE(exec.answered(std::chrono::milliseconds(300)))
        << "EXEC committed without waiting for the other writer's row";
    Answer<std::optional<std::string>> read;
    a.store().Get(key, read.cb());
    EXPECT_FALSE(read.answered(std::chrono::milliseconds(50))) << "a read saw an undecided write";
    other.Run("COMMIT");
    ASSERT_TRUE(exec.answered(std::chrono::seconds(10)));
    auto applied = exec.future.get();
    ASSERT_TRUE(applied.ok()) << applied.error().message;
    EXPECT_FALSE(*applied) << "EXEC applied over a write it did not see";
    a.store().Unwatch(*watch);
    ASSERT_TRUE(read.answered(std::chrono::seconds(10)));
    EXPECT_EQ(**read.future.get(), "from b");
    EXPECT_FALSE(a.Get("also")->has_value()) << "a refused transaction applied part of itself";
  }
  // Unchanged rows: it applies, and leaves no placeholder for the absent key it watched.
  auto watch = std::make_shared<WatchList>();
  ASSERT_TRUE(Await<bool>([&](StoreCallback<bool> cb) {
                a.store().Watch({"k", "never"}, watch, std::move(cb));
              }).ok());
  std::vector<TxOp> ops;
  ops.emplace_back(tx::Set{SetRequest{"k", "from a", Expiry::None()}, [](Result<SetReply>) {}});
  auto applied = Await<bool>(
      [&](StoreCallback<bool> cb) { a.store().Transact(std::move(ops), watch, std::move(cb)); });
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  EXPECT_TRUE(*applied);
  a.store().Unwatch(*watch);
  EXPECT_EQ(**a.Get("k"), "from a");
  PGconn* conn = PQconnectdb(g_cluster->ConnInfo().c_str());
  PGresult* res = PQexec(conn, "SELECT count(*) FROM sky_sessions WHERE expires_at = 1");
  ASSERT_EQ(PQresultStatus(res), PGRES_TUPLES_OK) << PQresultErrorMessage(res);
  EXPECT_STREQ(PQgetvalue(res, 0, 0), "0") << "a placeholder row outlived its transaction";
  PQclear(res);
  PQfinish(conn);
}

UnixMillis NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `n` rows of 2 KB whose deadline passed an hour ago.
void InsertExpiredRows(int n) {
  std::string expired = std::to_string(NowMs() - 3600 * 1000);
  Exec(
      "INSERT INTO sky_sessions (id, expires_at, expiry_bucket, data) SELECT convert_to('old:' || "
      "g,"
      " 'UTF8'), " +
      expired + ", " + expired +
      " / 3600000, convert_to(repeat('v', 2048), 'UTF8')"
      " FROM generate_series(1, " +
      std::to_string(n) + ") g");
}

// The sweep deletes in statements of at most 500 rows; each is its own short transaction and
// skips rows a writer holds, so writers to live sessions keep committing while it runs. The
// longest statement (the longest any sweep lock is held) is measured and printed.
TEST(PostgresSweep, DeletesInBoundedStatementsWhileWritersCommit) {
  ResetSchema();
  constexpr int kExpired = 20000;
  InsertExpiredRows(kExpired);
  auto sweeper = NewPostgresDurable(g_cluster->ConnInfo(), "sweeper", 1, 1);
  auto writer = NewPostgresDurable(g_cluster->ConnInfo(), "writer", 1, 1);

  std::atomic<bool> sweeping{true};
  std::atomic<long> commits{0};
  std::chrono::steady_clock::duration longest_commit{};
  std::thread writes([&] {
    for (long i = 0; sweeping.load(); ++i) {
      auto w = DurableWrite::Of(DurableWrite::Kind::kUpsert, "live:" + std::to_string(i % 100),
                                std::string(2048, 'x'), NowMs() + 3600 * 1000);
      auto started = std::chrono::steady_clock::now();
      ASSERT_TRUE(writer->CommitBatch(0, {w}).ok());
      longest_commit = std::max(longest_commit, std::chrono::steady_clock::now() - started);
      ++commits;
    }
  });
  int64_t deleted = 0;
  int statements = 0;
  std::chrono::steady_clock::duration longest_statement{};
  for (;;) {
    auto started = std::chrono::steady_clock::now();
    auto n = sweeper->SweepExpired(NowMs(), 500);
    longest_statement = std::max(longest_statement, std::chrono::steady_clock::now() - started);
    ASSERT_TRUE(n.ok()) << n.error().message;
    ASSERT_LE(*n, 500);
    if (*n == 0) break;
    deleted += *n;
    ++statements;
  }
  sweeping = false;
  writes.join();
  EXPECT_EQ(deleted, kExpired);
  EXPECT_GT(commits.load(), 0);
  auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / 1000.0;
  };
  // Generous bound for a loaded CI machine under ASan; the measured figure goes in docs/store.md.
  EXPECT_LT(ms(longest_statement), 2000.0);
  std::cout << "[measured] swept " << deleted << " expired 2 KB rows in " << statements
            << " statements; longest statement (longest lock) " << ms(longest_statement) << " ms; "
            << commits.load() << " concurrent commits, longest " << ms(longest_commit) << " ms\n";
}

TEST(PostgresSweep, OneSweeperPerDatabase) {
  ResetSchema();
  InsertExpiredRows(1000);
  auto first = NewPostgresDurable(g_cluster->ConnInfo(), "first", 1, 1);
  auto second = NewPostgresDurable(g_cluster->ConnInfo(), "second", 1, 1);
  auto swept = first->SweepExpired(NowMs(), 10);
  ASSERT_TRUE(swept.ok()) << swept.error().message;
  EXPECT_EQ(*swept, 10);
  // The first holds the session advisory lock: the second skips while rows remain.
  auto skipped = second->SweepExpired(NowMs(), 10);
  ASSERT_TRUE(skipped.ok()) << skipped.error().message;
  EXPECT_EQ(*skipped, 0);
  first.reset();  // its session ends, the lock with it (once the backend has exited)
  int64_t taken_over = 0;
  for (int i = 0; i < 100 && taken_over == 0; ++i) {
    auto n = second->SweepExpired(NowMs(), 10);
    ASSERT_TRUE(n.ok()) << n.error().message;
    taken_over = *n;
    if (taken_over == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(taken_over, 10);
}

// Sends the process's log, debug lines included, to a string while it lives.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  int Count(const std::string& line) const {
    std::string all = text_.str();
    int n = 0;
    for (size_t at = all.find(line); at != std::string::npos; at = all.find(line, at + 1)) ++n;
    return n;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream text_;
};

// A batch is one statement prepared once per writer connection and then run by name: no
// parse and plan per commit.
TEST(PostgresDurable, CommitsRunPreparedStatements) {
  ResetSchema();
  CapturedLog log;
  auto durable = NewPostgresDurable(g_cluster->ConnInfo(), "prepared", 1, 1);
  for (int i = 0; i < 3; ++i) {
    auto w = DurableWrite::Of(DurableWrite::Kind::kUpsert, "k" + std::to_string(i), "v", 0);
    ASSERT_TRUE(durable->CommitBatch(0, {w}).ok());
  }
  for (int i = 0; i < 2; ++i) {
    auto w = DurableWrite::Of(DurableWrite::Kind::kDelete, "k" + std::to_string(i), "", 0);
    ASSERT_TRUE(durable->CommitBatch(0, {w}).ok());
  }
  auto left = durable->ReadMany(0, {"k0", "k1", "k2"}, NowMs());
  ASSERT_TRUE(left.ok()) << left.error().message;
  EXPECT_FALSE((*left)[0].has_value());
  EXPECT_FALSE((*left)[1].has_value());
  ASSERT_TRUE((*left)[2].has_value());
  EXPECT_EQ((*left)[2]->value, "v");
  EXPECT_EQ(log.Count("prepared statement skydb_upsert on the writer 0 connection"), 1);
  EXPECT_EQ(log.Count("prepared statement skydb_commit on the writer 0 connection"), 1);
  EXPECT_EQ(log.Count("prepared statement skydb_read_many on the reader 0 connection"), 1);
}

// The first row's first column of `sql`, as text.
std::string QueryText(const std::string& sql) {
  PGconn* conn = PQconnectdb(g_cluster->ConnInfo().c_str());
  PGresult* res = PQexec(conn, sql.c_str());
  std::string text = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1
                         ? PQgetvalue(res, 0, 0)
                         : "error: " + std::string(PQresultErrorMessage(res));
  PQclear(res);
  PQfinish(conn);
  return text;
}

// A commit held by a row lock holds small writes back until 64 of them wait, but not large
// ones: once 512 KiB of values wait (commit_overlap_bytes, docs/store.md) the second writer
// commits them beside it, and they are acknowledged while the held one is not. The 14th value
// of 37,000 B takes what waits past 512 KiB, so every write below is in that one second batch.
TEST(PostgresDurable, LargeWritesCommitBesideAHeldCommit) {
  PgHarness h(Durability::kSync);
  ASSERT_TRUE(h.Set("held", "v", Expiry::None()).ok());
  OtherWriter other;
  other.Run("BEGIN");
  other.Run("SELECT 1 FROM sky_sessions WHERE id = convert_to('held', 'UTF8') FOR UPDATE");
  Answer<SetReply> held;
  h.store().Set(SetRequest{"held", "new", Expiry::None()}, held.cb());
  // Its batch is fixed once its statement waits for the lock.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (QueryText("SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock'") !=
         "t") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "the held write never reached the lock";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<Answer<SetReply>> small(10), large(14);
  for (size_t i = 0; i < small.size(); ++i) {
    h.store().Set(SetRequest{"small" + std::to_string(i), std::string(2080, 's'), Expiry::None()},
                  small[i].cb());
  }
  EXPECT_FALSE(small.back().answered(std::chrono::milliseconds(300)))
      << "a second commit started with 10 writes of 2 KB waiting";
  for (size_t i = 0; i < large.size(); ++i) {
    h.store().Set(SetRequest{"large" + std::to_string(i),
                             std::string(37000, static_cast<char>('a' + i)), Expiry::None()},
                  large[i].cb());
  }
  for (auto& answer : large) {
    ASSERT_TRUE(answer.answered(std::chrono::seconds(10)))
        << "539 KB of values waited behind a held commit";
    EXPECT_TRUE(answer.future.get().ok());
  }
  for (auto& answer : small) {
    ASSERT_TRUE(answer.answered(std::chrono::seconds(1)));
    EXPECT_TRUE(answer.future.get().ok());
  }
  EXPECT_FALSE(held.answered(std::chrono::milliseconds(50))) << "a write acknowledged unapplied";
  other.Run("COMMIT");
  ASSERT_TRUE(held.answered(std::chrono::seconds(10)));
  EXPECT_TRUE(held.future.get().ok());
  EXPECT_EQ(QueryText("SELECT count(*) FROM sky_sessions WHERE octet_length(data) = 37000"), "14");
  EXPECT_EQ(**h.Get("held"), "new");
}

// A value past a page (a 37 KB session) goes to TOAST compressed, with lz4 where the server
// has it (migration 124), and reads back byte for byte.
TEST(PostgresDurable, LargeValuesAreCompressedWithLz4WhereTheServerHasIt) {
  ResetSchema();
  auto durable = NewPostgresDurable(g_cluster->ConnInfo(), "large", 1, 1);
  std::string value;
  for (int i = 0; value.size() < 40000; ++i) {
    value += "<li class=\"item\" id=\"item-" + std::to_string(i) + "\">row " +
             std::to_string(i * 7) + "</li>";
  }
  auto w = DurableWrite::Of(DurableWrite::Kind::kUpsert, "large", value, 0);
  ASSERT_TRUE(durable->CommitBatch(0, {w}).ok());
  auto read = durable->ReadMany(0, {"large"}, NowMs());
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_TRUE((*read)[0].has_value());
  EXPECT_EQ((*read)[0]->value, value);
  std::string has_lz4 = QueryText(
      "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'");
  EXPECT_EQ(QueryText("SELECT pg_column_compression(data) FROM sky_sessions"),
            has_lz4 == "t" ? "lz4" : "pglz");
  EXPECT_LT(std::stoi(QueryText("SELECT pg_column_size(data) FROM sky_sessions")), 20000);
}

// The old TOAST chunks every large write leaves dead are vacuumed unthrottled (migration 125)
// and the heap only per 100,000 changes (126), docs/storage.md: each option is on the relation
// autovacuum reads it from.
TEST(PostgresDurable, TheSessionsToastIsVacuumedUnthrottled) {
  ResetSchema();
  EXPECT_EQ(
      QueryText("SELECT array_to_string(t.reloptions, ',') FROM pg_class s"
                " JOIN pg_class t ON t.oid = s.reltoastrelid WHERE s.relname = 'sky_sessions'"),
      "autovacuum_vacuum_cost_delay=0");
  EXPECT_EQ(QueryText("SELECT array_to_string(reloptions, ',') FROM pg_class"
                      " WHERE relname = 'sky_sessions'"),
            "fillfactor=60,toast_tuple_target=8160,autovacuum_vacuum_threshold=100000,"
            "autovacuum_vacuum_insert_threshold=100000,autovacuum_analyze_threshold=100000");
}

}  // namespace
}  // namespace skydb::testing
