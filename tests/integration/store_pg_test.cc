// The shared store suite over real PostgreSQL 15, plus what only a real server shows.
#include <libpq-fe.h>

#include <thread>

#include "skydb/durable.h"
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

// A fresh sky_sessions table per harness, created by the store's own schema steps.
void ResetSchema() {
  Exec("DROP TABLE IF EXISTS sky_sessions");
  for (const auto& step : SessionSchema()) Exec(step.sql);
}

class PgHarness final : public StoreHarness {
 public:
  explicit PgHarness(Durability durability) {
    ResetSchema();
    options_.durability = durability;
    options_.flush_interval = std::chrono::milliseconds(2);
    Open();
  }
  ~PgHarness() override { Close(); }
  SessionStore& store() override { return *store_; }
  FakeClock& clock() override { return clock_; }
  bool durable() const override { return true; }
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
        NamedFactory{"Async", [] { return std::make_unique<PgHarness>(Durability::kAsync); }}),
    FactoryName);

}  // namespace
}  // namespace skydb::testing
