// pgconn against a real PostgreSQL 15: binary parameters round-trip, prepared statements are
// prepared once per connection and again after a reconnect, and a LazyConnection leaves a
// broken or read-only server at once and reconnects at its next use.
#include "pgconn/pgconn.h"

#include <gtest/gtest.h>

#include <string>

#include "test_cluster.h"

namespace skydb::testing {
namespace {

using pg::LazyConnection;
using pg::Statement;

class PgConnTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto cluster = TestCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.error().message;
    cluster_ = std::move(cluster).value().release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  // The backend serving `conn` (opening it if need be).
  static int BackendPid(LazyConnection& conn) {
    static const Statement kPid{nullptr, "SELECT pg_backend_pid()", {}};
    auto r = conn.Exec(kPid, {});
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->Int4(0, 0) : 0;
  }

  static TestCluster* cluster_;
};
TestCluster* PgConnTest::cluster_ = nullptr;

const Statement kAddOne{"t_add_one", "SELECT $1::int8 + 1", {pg::kInt8Oid}};
const Statement kPreparedHere{
    nullptr, "SELECT count(*) FROM pg_prepared_statements WHERE name = 't_add_one'", {}};

TEST_F(PgConnTest, PreparedOncePerConnectionAndAgainAfterAReconnect) {
  LazyConnection conn(cluster_->ConnInfo(), "test");
  for (int64_t i : {41, 99}) {
    auto r = conn.Exec(kAddOne, {pg::Int8Param(i)});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->Int8(0, 0), i + 1);
  }
  auto prepared = conn.Exec(kPreparedHere, {});
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  EXPECT_EQ(prepared->Int8(0, 0), 1);

  int pid = BackendPid(conn);
  ASSERT_TRUE(
      cluster_->Sql("SELECT pg_terminate_backend(" + std::to_string(pid) + ", 10000)").ok());
  auto broken = conn.Exec(kAddOne, {pg::Int8Param(1)});
  EXPECT_FALSE(broken.ok());
  EXPECT_FALSE(conn.open());  // closed at once, not reused

  // The next use reconnects, and the statement is prepared on the new connection.
  auto again = conn.Exec(kAddOne, {pg::Int8Param(6)});
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->Int8(0, 0), 7);
  EXPECT_TRUE(conn.open());
  EXPECT_NE(BackendPid(conn), pid);
}

// Behind a transaction pooler (store.pooler = "transaction") no name is prepared: the next
// transaction may run on a server connection that never saw it. ForEachRow too.
TEST_F(PgConnTest, WithoutNamedStatementsNothingIsPrepared) {
  LazyConnection conn(cluster_->ConnInfo(), "test", /*named_statements=*/false);
  for (int64_t i : {41, 99}) {
    auto r = conn.Exec(kAddOne, {pg::Int8Param(i)});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->Int8(0, 0), i + 1);
  }
  int64_t seen = 0;
  Status rows = conn.ForEachRow(kAddOne, {pg::Int8Param(1)},
                                [&seen](const pg::QueryResult& row) { seen = row.Int8(0, 0); });
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  EXPECT_EQ(seen, 2);
  auto prepared = conn.Exec(kPreparedHere, {});
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  EXPECT_EQ(prepared->Int8(0, 0), 0);
}

TEST_F(PgConnTest, BinaryArraysCarryEveryByteAndEveryInt8) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
  std::vector<std::string> values = {every_byte, "", "a'\\\"", std::string(1, '\0')};
  std::vector<int64_t> numbers = {0, -1, INT64_MIN, INT64_MAX, 3600000};
  pg::BinaryArray bytes(pg::kByteaOid), ints(pg::kInt8Oid);
  for (const auto& v : values) bytes.Add(v);
  for (int64_t n : numbers) ints.AddInt64(n);
  static const Statement kUnnest{
      "t_unnest",
      "SELECT b, i FROM unnest($1::bytea[], $2::int8[]) WITH ORDINALITY AS u(b, i, n) ORDER BY n",
      {pg::kByteaArrayOid, pg::kInt8ArrayOid}};
  LazyConnection conn(cluster_->ConnInfo(), "test");
  auto r = conn.Exec(kUnnest, {bytes.Encode(), ints.Encode()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->rows(), 5);
  for (int i = 0; i < 5; ++i) {
    if (i < 4) {
      EXPECT_EQ(r->Bytes(i, 0), values[i]) << "row " << i;
    }
    EXPECT_EQ(r->Int8(i, 1), numbers[i]) << "row " << i;
  }
  EXPECT_TRUE(r->IsNull(4, 0));  // unnest pads the shorter array
  auto empty = conn.Exec(
      kUnnest, {pg::BinaryArray(pg::kByteaOid).Encode(), pg::BinaryArray(pg::kInt8Oid).Encode()});
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_EQ(empty->rows(), 0);
}

// The server's report that it turned read-only (a demoted primary, or
// default_transaction_read_only) closes the connection with the very result that carries it.
TEST_F(PgConnTest, AServerReportingReadOnlyIsLeftAtOnce) {
  LazyConnection conn(cluster_->ConnInfo(), "test");
  int pid = BackendPid(conn);
  static const Statement kReadOnly{nullptr, "SET default_transaction_read_only = on", {}};
  auto r = conn.Exec(kReadOnly, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the server became read-only"), std::string::npos)
      << r.error().message;
  EXPECT_FALSE(conn.open());
  EXPECT_NE(BackendPid(conn), pid);
}

// SQLSTATE 25006 (a write refused as read-only) closes the connection; the error says why.
TEST_F(PgConnTest, AReadOnlyTransactionErrorClosesTheConnection) {
  LazyConnection conn(cluster_->ConnInfo(), "test");
  int pid = BackendPid(conn);
  static const Statement kBegin{nullptr, "BEGIN READ ONLY", {}};
  static const Statement kWrite{nullptr, "CREATE TABLE t_never (a int)", {}};
  ASSERT_TRUE(conn.Exec(kBegin, {}).ok());
  auto r = conn.Exec(kWrite, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("SQLSTATE 25006"), std::string::npos) << r.error().message;
  EXPECT_FALSE(conn.open());
  EXPECT_NE(BackendPid(conn), pid);  // a new session, not in the read-only transaction
}

TEST_F(PgConnTest, AnOrdinaryErrorKeepsTheConnection) {
  LazyConnection conn(cluster_->ConnInfo(), "test");
  int pid = BackendPid(conn);
  static const Statement kBad{nullptr, "SELECT 1/0", {}};
  auto r = conn.Exec(kBad, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("division by zero"), std::string::npos) << r.error().message;
  EXPECT_TRUE(conn.open());
  EXPECT_EQ(BackendPid(conn), pid);
}

// PostgreSQL's error for a statement comes with its LINE and a caret under it: one line, as
// every message skydb logs.
TEST_F(PgConnTest, AStatementErrorIsOneLine) {
  LazyConnection conn(cluster_->ConnInfo(), "test");
  static const Statement kMissing{nullptr, "SELECT *\n  FROM skydb_no_such_table", {}};
  auto r = conn.Exec(kMissing, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("does not exist; LINE 2:   FROM skydb_no_such_table"),
            std::string::npos)
      << r.error().message;
}

TEST_F(PgConnTest, AFailedConnectNamesTheConnectionAndIsRetriedAtTheNextUse) {
  std::string nowhere = cluster_->dir() + "/nothing-listens-here";
  LazyConnection conn("host=" + nowhere + " dbname=postgres", "writer 3");
  auto r = conn.Exec(kAddOne, {pg::Int8Param(1)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("cannot connect to PostgreSQL (writer 3): ", 0), 0u)
      << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  EXPECT_FALSE(conn.open());
  EXPECT_FALSE(conn.Exec(kAddOne, {pg::Int8Param(1)}).ok());  // tried again, not locked out
}

TEST_F(PgConnTest, ForEachRowHandsRowsOverOneAtATime) {
  LazyConnection conn(cluster_->ConnInfo(), "test");
  static const Statement kSeries{
      nullptr, "SELECT g FROM generate_series(1, $1::int8) g", {pg::kInt8Oid}};
  int64_t rows = 0, sum = 0;
  Status s = conn.ForEachRow(kSeries, {pg::Int8Param(1000)}, [&](const pg::QueryResult& row) {
    EXPECT_EQ(row.rows(), 1);
    ++rows;
    sum += row.Int8(0, 0);
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(rows, 1000);
  EXPECT_EQ(sum, 500500);
  static const Statement kFails{nullptr, "SELECT 1 / (g - 3) FROM generate_series(1, 5) g", {}};
  rows = 0;
  s = conn.ForEachRow(kFails, {}, [&](const pg::QueryResult&) { ++rows; });
  EXPECT_FALSE(s.ok());
  EXPECT_LE(rows, 2);
  EXPECT_GT(BackendPid(conn), 0);  // the connection was left idle and usable
}

}  // namespace
}  // namespace skydb::testing
