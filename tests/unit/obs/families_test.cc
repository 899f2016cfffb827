// DaemonFamilies and StatusJson over hand-built states: names, labels, values, conventions.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "skydb/obs.h"

namespace skydb {
namespace {

const MetricFamily* Find(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

double Value(const std::vector<MetricFamily>& families, const std::string& name,
             const MetricLabels& labels = {}) {
  const MetricFamily* f = Find(families, name);
  if (f == nullptr) ADD_FAILURE() << "no family " << name;
  if (f == nullptr) return -1;
  for (const auto& s : f->samples) {
    if (s.labels == labels) return s.value;
  }
  ADD_FAILURE() << name << " has no sample with those labels";
  return -1;
}

ObservedState FullState() {
  ObservedState s;
  s.version = "1.2.3";
  s.mode = "embedded";
  s.readiness = {true, "ready"};
  SupervisorSnapshot c;
  c.state = SupervisorState::kReady;
  c.postgres_pid = 42;
  c.restarts = 2;
  s.cluster = c;
  s.postgres_answers = true;
  PostgresStats pg;
  pg.backends_by_state = {{"active", 1}, {"idle", 6}};
  pg.database_bytes = {{"postgres", 8000000}};
  pg.archiver.archive_mode = true;
  pg.archiver.archived_count = 40;
  pg.archiver.failed_count = 3;
  pg.archiver.last_archived_wal = "0000000100000000000000FE";
  pg.archiver.last_archived_time = 1000;
  pg.archiver.ready_segments = 2;
  pg.archiver.oldest_ready_seconds = 90;
  s.postgres = pg;
  BackupStatus backup;
  backup.repository = "/backups/app";
  backup.last_success_time = 900;
  backup.last_duration_seconds = 2.5;
  backup.last_size_bytes = 41000000;
  backup.archive_failure = "cannot archive 0000000100000000000000FF into /backups/app/wal: full";
  s.backup = backup;
  s.postgres_poll_failures = 3;
  StoreStats st;
  st.kind = "tiered";
  st.durability = "sync";
  st.sessions = 5;
  st.expiring = 4;
  st.writes = 9;
  st.commits = 7;
  st.evictions_idle = 1;
  st.evictions_memory = 2;
  st.pool_size = 5;
  st.pool_open = 3;
  st.pool_busy = 1;
  st.pool_waiters = 2;
  st.commit_batch_rows = {{1, 2}, {3, 1, 0}, 4, 5};
  st.commit_seconds = {{0.001}, {4, 0}, 4, 0.002};
  s.store = st;
  s.store_description = "tiered sync private cluster /d/run";
  RespServerStats r;
  r.connected_clients = 2;
  r.commands = {{"get", 3}, {"set", 4}, {"unknown", 1}};
  // GET: 2 replies within 100 µs, 1 within 250 µs; SET: 4 that waited for a 3-4 ms COMMIT.
  r.command_seconds = {{"get", {{0.0001, 0.00025, 0.005}, {2, 1, 0, 0}, 3, 0.0003}},
                       {"set", {{0.0001, 0.00025, 0.005}, {0, 0, 4, 0}, 4, 0.014}}};
  s.resp = r;
  Settings settings;
  Setting numeric{"shared_buffers", "128MB", "15% of RAM", false, true, 134217728.0, ""};
  Setting pinned{"work_mem", "8MB", "pinned in config", true, true, 8388608.0, "4MB"};
  Setting word{"huge_pages", "try", "default", false, true, std::nullopt, ""};
  settings.items = {numeric, pinned, word};
  s.settings = settings;
  s.memory = {1000, 2000, 7};
  ProcessFigures process;
  process.cpu_seconds = 1.5;
  process.start_time_seconds = 1764547200.25;
  process.resident_memory_bytes = 1000;
  process.virtual_memory_bytes = 5000;
  process.open_fds = 12;
  process.max_fds = 65536;
  s.process = process;
  return s;
}

TEST(DaemonFamiliesTest, FullStateFollowsTheConventions) {
  auto families = DaemonFamilies(FullState());
  Status valid = ValidateFamilies(families);
  EXPECT_TRUE(valid.ok()) << valid.error().message;
  for (const auto& f : families) {
    EXPECT_TRUE(f.name.rfind("skydb_", 0) == 0 || f.name.rfind("process_", 0) == 0 ||
                f.name == "sky_live_sessions_active")
        << f.name;
  }
}

// The standard process_* families, under the names Prometheus's client libraries use, so that
// stock dashboards and alerts work; absent when /proc could not be read.
TEST(DaemonFamiliesTest, ProcessFamiliesHaveTheStandardNames) {
  auto families = DaemonFamilies(FullState());
  EXPECT_EQ(Value(families, "process_cpu_seconds_total"), 1.5);
  EXPECT_EQ(Value(families, "process_start_time_seconds"), 1764547200.25);
  EXPECT_EQ(Value(families, "process_resident_memory_bytes"), 1000);
  EXPECT_EQ(Value(families, "process_virtual_memory_bytes"), 5000);
  EXPECT_EQ(Value(families, "process_open_fds"), 12);
  EXPECT_EQ(Value(families, "process_max_fds"), 65536);
  EXPECT_EQ(Find(families, "process_cpu_seconds_total")->type, MetricType::kCounter);
  ObservedState without = FullState();
  without.process.reset();
  EXPECT_EQ(Find(DaemonFamilies(without), "process_open_fds"), nullptr);
}

TEST(DaemonFamiliesTest, EveryFamilyDocsOperationsListsIsThere) {
  auto families = DaemonFamilies(FullState());
  for (const char* name : {"skydb_sessions_active",
                           "sky_live_sessions_active",
                           "skydb_store_info",
                           "skydb_store_writes_total",
                           "skydb_store_commits_total",
                           "skydb_store_commit_batch_rows",
                           "skydb_store_commit_duration_seconds",
                           "skydb_store_queue_depth",
                           "skydb_store_write_timeouts_total",
                           "skydb_store_cache_hits_total",
                           "skydb_store_cache_misses_total",
                           "skydb_store_evictions_total",
                           "skydb_store_expirations_total",
                           "skydb_store_pool_connections",
                           "skydb_store_pool_waiters",
                           "skydb_postgres_up",
                           "skydb_postgres_restarts_total",
                           "skydb_postgres_backends",
                           "skydb_postgres_database_size_bytes",
                           "skydb_resident_memory_bytes",
                           "skydb_postgres_pss_bytes",
                           "skydb_setting",
                           "skydb_setting_info",
                           "skydb_resp_connected_clients",
                           "skydb_resp_commands_total",
                           "skydb_resp_command_duration_seconds",
                           "skydb_resp_protocol_errors_total"}) {
    EXPECT_NE(Find(families, name), nullptr) << name;
  }
}

TEST(DaemonFamiliesTest, ValuesAndLabelsComeFromTheState) {
  auto f = DaemonFamilies(FullState());
  EXPECT_EQ(Value(f, "skydb_sessions_active", {{"store", "tiered"}}), 5);
  EXPECT_EQ(Value(f, "sky_live_sessions_active"), 5);
  EXPECT_EQ(Value(f, "skydb_store_commits_total"), 7);
  EXPECT_EQ(Value(f, "skydb_store_evictions_total", {{"reason", "memory"}}), 2);
  EXPECT_EQ(Value(f, "skydb_store_pool_connections", {{"state", "busy"}}), 1);
  EXPECT_EQ(Value(f, "skydb_store_pool_connections", {{"state", "idle"}}), 2);
  EXPECT_EQ(Value(f, "skydb_store_pool_connections", {{"state", "closed"}}), 2);
  EXPECT_EQ(Value(f, "skydb_postgres_restarts_total"), 2);
  EXPECT_EQ(Value(f, "skydb_postgres_supervisor_state", {{"state", "ready"}}), 1);
  EXPECT_EQ(Value(f, "skydb_postgres_supervisor_state", {{"state", "backoff"}}), 0);
  EXPECT_EQ(Value(f, "skydb_postgres_backends", {{"state", "idle"}}), 6);
  EXPECT_EQ(Value(f, "skydb_postgres_database_size_bytes", {{"database", "postgres"}}), 8000000);
  EXPECT_EQ(Value(f, "skydb_postgres_pss_bytes"), 2000);
  EXPECT_EQ(Value(f, "skydb_postgres_processes"), 7);
  EXPECT_EQ(Value(f, "skydb_resp_commands_total", {{"command", "set"}}), 4);
  EXPECT_EQ(Value(f, "skydb_setting", {{"name", "shared_buffers"}, {"pinned", "false"}}),
            134217728.0);
  EXPECT_EQ(Value(f, "skydb_setting", {{"name", "work_mem"}, {"pinned", "true"}}), 8388608.0);
  EXPECT_EQ(Value(f, "skydb_setting_info",
                  {{"name", "huge_pages"}, {"pinned", "false"}, {"value", "try"}}),
            1);
  EXPECT_EQ(Find(f, "skydb_store_commit_batch_rows")->samples[0].histogram.count, 4u);
}

// One histogram per command run, labelled by its name, rendered with cumulative buckets.
TEST(DaemonFamiliesTest, CommandLatencyIsAHistogramPerCommand) {
  auto families = DaemonFamilies(FullState());
  const MetricFamily* f = Find(families, "skydb_resp_command_duration_seconds");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->type, MetricType::kHistogram);
  ASSERT_EQ(f->samples.size(), 2u);
  EXPECT_EQ(f->samples[1].labels, (MetricLabels{{"command", "set"}}));
  EXPECT_EQ(f->samples[1].histogram.count, 4u);
  std::string text = RenderPrometheusText({*f});
  EXPECT_NE(text.find("skydb_resp_command_duration_seconds_bucket{command=\"get\",le=\"0.00025\"} "
                      "3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("skydb_resp_command_duration_seconds_bucket{command=\"set\",le=\"+Inf\"} "
                      "4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("skydb_resp_command_duration_seconds_sum{command=\"set\"} 0.014\n"),
            std::string::npos)
      << text;
}

TEST(DaemonFamiliesTest, BeforeTheStoreOpensSessionsAreZeroAndStoreFamiliesAbsent) {
  ObservedState s;
  s.mode = "embedded";
  SupervisorSnapshot c;
  c.state = SupervisorState::kStarting;
  s.cluster = c;
  auto f = DaemonFamilies(s);
  EXPECT_TRUE(ValidateFamilies(f).ok());
  EXPECT_EQ(Value(f, "skydb_sessions_active", {{"store", "none"}}), 0);
  EXPECT_EQ(Value(f, "skydb_ready"), 0);
  EXPECT_EQ(Value(f, "skydb_postgres_up"), 0);
  EXPECT_EQ(Find(f, "skydb_store_commits_total"), nullptr);
  EXPECT_EQ(Find(f, "skydb_postgres_pss_bytes"), nullptr) << "unknown PSS is absent, not 0";
  EXPECT_EQ(Find(f, "skydb_postgres_backends"), nullptr);
}

TEST(DaemonFamiliesTest, MemoryModeHasNoPostgresFamilies) {
  ObservedState s = FullState();
  s.cluster.reset();
  s.postgres.reset();
  s.memory.postgres_pss_bytes.reset();
  for (const auto& f : DaemonFamilies(s)) {
    EXPECT_EQ(f.name.find("skydb_postgres_"), std::string::npos) << f.name;
  }
}

TEST(StatusJsonTest, HoldsEveryPart) {
  auto j = nlohmann::json::parse(StatusJson(FullState()));
  EXPECT_EQ(j["ready"], true);
  EXPECT_EQ(j["sessions"], 5);
  EXPECT_EQ(j["cluster"]["state"], "ready");
  EXPECT_EQ(j["cluster"]["restarts"], 2);
  EXPECT_EQ(j["cluster"]["backends_by_state"]["idle"], 6);
  EXPECT_EQ(j["store"]["kind"], "tiered");
  EXPECT_EQ(j["pool"]["waiters"], 2);
  EXPECT_EQ(j["memory"]["postgres_pss_bytes"], 2000);
  EXPECT_EQ(j["resp"]["commands"]["get"], 3);
  ASSERT_EQ(j["settings"].size(), 3u);
  EXPECT_EQ(j["settings"][1]["pinned"], true);
}

TEST(StatusJsonTest, NamesWhatTheAppConnectsTo) {
  ObservedState s;
  s.store_socket = "/var/lib/shop/run/skydb.sock";
  s.app_database_url = "postgresql:///app?host=/var/lib/shop/run&user=app";
  auto j = nlohmann::json::parse(StatusJson(s));
  EXPECT_EQ(j["app"]["store_socket"], s.store_socket);
  EXPECT_EQ(j["app"]["database_url"], s.app_database_url);
}

TEST(StatusJsonTest, BackupNamesTheArchiveFailureAndTheBacklog) {
  auto j = nlohmann::json::parse(StatusJson(FullState()));
  EXPECT_EQ(j["backup"]["archive_failing"], true);
  EXPECT_EQ(j["backup"]["pending_wal_segments"], 2);
  EXPECT_EQ(j["backup"]["last_archived_wal"], "0000000100000000000000FE");
  EXPECT_NE(j["backup"]["archive_failure"].get<std::string>().find("full"), std::string::npos);
}

TEST(StatusJsonTest, AbsentPartsAreNull) {
  ObservedState s;
  s.mode = "memory";
  auto j = nlohmann::json::parse(StatusJson(s));
  EXPECT_TRUE(j["app"]["database_url"].is_null());
  EXPECT_TRUE(j["cluster"].is_null());
  EXPECT_TRUE(j["backup"].is_null());
  EXPECT_TRUE(j["store"].is_null());
  EXPECT_TRUE(j["sessions"].is_null());
  EXPECT_TRUE(j["memory"]["postgres_pss_bytes"].is_null());
  EXPECT_EQ(j["ready"], false);
}

// The store's description names its socket, under a data dir a user chose: bytes that are not
// UTF-8 are shown as U+FFFD instead of throwing out of the HTTP handler.
TEST(StatusJsonTest, TextThatIsNotUtf8IsReplacedNotThrown) {
  ObservedState s = FullState();
  s.store_description = "listening on /srv/d\xffx/run/skydb.sock";
  std::string text = StatusJson(s);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["store"]["description"], "listening on /srv/d\xef\xbf\xbdx/run/skydb.sock");
}

}  // namespace
}  // namespace skydb

namespace skydb {
namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(SKYDB_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Two complete segments wait for the archiver, the oldest for 90 s.
TEST(BackupFamiliesTest, ArchiveBacklogAndLag) {
  auto families = DaemonFamilies(FullState());
  auto value = [&](const std::string& name) {
    for (const auto& f : families) {
      if (f.name == name) return f.samples.at(0).value;
    }
    return -1.0;
  };
  EXPECT_EQ(value("skydb_wal_archive_pending_segments"), 2);
  EXPECT_EQ(value("skydb_wal_archive_lag_seconds"), 90);
  EXPECT_EQ(value("skydb_wal_archive_failing"), 1);
  EXPECT_EQ(value("skydb_wal_archived_total"), 40);
  EXPECT_EQ(value("skydb_backup_last_success_timestamp_seconds"), 900);
  ObservedState memory;
  memory.mode = "memory";
  for (const auto& f : DaemonFamilies(memory)) {
    EXPECT_NE(f.name.rfind("skydb_wal_", 0), 0u) << "no backup families without a repository";
  }
}

// docs/operations.md promises every metric is explained there.
TEST(OperationsDocTest, ExplainsEveryFamily) {
  std::string doc = ReadSource("docs/operations.md");
  ASSERT_FALSE(doc.empty());
  for (const auto& family : DaemonFamilies(FullState())) {
    EXPECT_NE(doc.find("`" + family.name), std::string::npos)
        << family.name << " is not explained in docs/operations.md";
  }
}

// Words of [a-z_:] that start with "sky" in a PromQL expression (std::regex trips GCC 12's
// -Wmaybe-uninitialized under ASan).
std::vector<std::string> MetricNamesIn(const std::string& expr) {
  std::vector<std::string> names;
  auto word_char = [](char c) { return (c >= 'a' && c <= 'z') || c == '_' || c == ':'; };
  for (size_t i = 0; i < expr.size();) {
    size_t end = i;
    while (end < expr.size() && word_char(expr[end])) ++end;
    if (end > i && expr.compare(i, 3, "sky") == 0) names.push_back(expr.substr(i, end - i));
    i = end > i ? end : i + 1;
  }
  return names;
}

// Every metric the Grafana dashboard queries is one skydb exports.
TEST(GrafanaDashboardTest, QueriesOnlyExportedFamilies) {
  auto dashboard = nlohmann::json::parse(ReadSource("packaging/grafana-dashboard.json"));
  std::set<std::string> exported;
  for (const auto& family : DaemonFamilies(FullState())) exported.insert(family.name);
  int queries = 0;
  for (const auto& panel : dashboard["panels"]) {
    for (const auto& target : panel["targets"]) {
      std::string expr = target["expr"];
      ++queries;
      for (std::string name : MetricNamesIn(expr)) {
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
          std::string s(suffix);
          if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
              exported.count(name.substr(0, name.size() - s.size())) > 0) {
            name = name.substr(0, name.size() - s.size());
          }
        }
        EXPECT_EQ(exported.count(name), 1u) << panel["title"] << ": " << name;
      }
    }
  }
  EXPECT_GT(queries, 10);
}

}  // namespace
}  // namespace skydb
