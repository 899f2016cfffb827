// `skydb upgrade` end to end (docs/upgrade.md): a PostgreSQL 15 cluster (Debian's binaries) with
// an app table, a role of the operator's, sessions and a backup repository holding a base
// backup and archived WAL is moved to 17 (relocatable binaries named with --to-bin-dir) and to
// 18 (a relocatable bundle found as serve finds it), by the dump path: neither build carries
// pg_upgrade. Afterwards the daemon serves the new major with every row, role and session, and
// archives the new cluster's WAL into the repository, whose old backups were moved aside and
// still list. A daemon running on the data dir refuses the upgrade; a failure injected halfway
// (the new cluster killed while it is restored into) leaves the 15 cluster as it was. Root; the
// cluster runs as SKYDB_TEST_USER.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/strings.h"
#include "cli_support.h"
#include "pg_fixtures.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

namespace fs = std::filesystem;

constexpr int kSessions = 1000;

// Names and sizes of every file under `dir` but those any start of PostgreSQL rewrites.
std::string Shape(const std::string& dir) {
  std::vector<std::string> lines;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string rel = fs::relative(e.path(), dir).string();
    if (StartsWith(rel, "pg_wal") || StartsWith(rel, "pg_stat") || StartsWith(rel, "global") ||
        StartsWith(rel, "pg_xact") || StartsWith(rel, "pg_subtrans") ||
        StartsWith(rel, "pg_logical") || StartsWith(rel, "pg_multixact") ||
        rel == "postmaster.opts" || rel.find("pg_internal.init") != std::string::npos) {
      continue;
    }
    lines.push_back(rel + (e.is_regular_file() ? " " + std::to_string(e.file_size()) : "/"));
  }
  std::sort(lines.begin(), lines.end());
  return Join(lines, "\n");
}

class UpgradeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the cluster runs as " << TestUser() << ")";
    dir_ = root_.Dir("d");
    repo_ = root_.Dir("repo");
    ASSERT_EQ(::mkdir(repo_.c_str(), 0700), 0);
    auto user = LookupUser(TestUser());
    ASSERT_TRUE(user.ok());
    ASSERT_EQ(::chown(repo_.c_str(), user->uid, user->gid), 0);
  }

  std::vector<std::string> Backup() const {
    return {"backup.repository=" + repo_, "backup.schedule=0"};
  }

  // A 15 cluster with `rows` app rows, an operator's role, kSessions sessions and one base
  // backup in the repository; stopped.
  void MakeCluster15(int rows) {
    auto sets = Backup();
    sets.push_back("postgres.version=15");
    auto d = StartEmbedded(dir_, sets);
    ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(120))) << d->Log();
    ASSERT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30)));
    std::string run = dir_ + "/run";
    ASSERT_EQ(PsqlAs(run, TestUser(), "app", "CREATE ROLE reporter LOGIN"), "");
    ASSERT_EQ(PsqlAs(run, "app", "app",
                     "CREATE TABLE items(id int PRIMARY KEY, body text); INSERT INTO items "
                     "SELECT i, md5(i::text) FROM generate_series(1, " +
                         std::to_string(rows) +
                         ") i; CREATE INDEX ON items(body); GRANT SELECT ON items TO reporter"),
              "");
    auto sessions = RunCommand({"/bin/sh", "-c",
                                "for i in $(seq 1 " + std::to_string(kSessions) +
                                    "); do echo SET s:$i v$i; done | /usr/bin/redis-cli -s " +
                                    StoreSocket(dir_) + " >/dev/null"});
    ASSERT_EQ(sessions.exit_code, 0) << sessions.err;
    ASSERT_EQ(RedisCli(StoreSocket(dir_), {"DBSIZE"}), std::to_string(kSessions));
    auto backup = RunSkydb({"backup", "--data-dir", dir_, "--set", "backup.repository=" + repo_});
    ASSERT_EQ(backup.exit_code, 0) << backup.out << backup.err;
    ASSERT_EQ(d->StopCleanly(seconds(30)), "");
  }

  // The daemon on the upgraded cluster has everything.
  void ExpectEverythingServed(const std::vector<std::string>& sets,
                              const std::map<std::string, std::optional<std::string>>& env,
                              const std::string& major, int rows) {
    auto all = Backup();
    all.insert(all.end(), sets.begin(), sets.end());
    auto d = StartEmbedded(dir_, all, env);
    ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(120))) << d->Log();
    ASSERT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30)));
    EXPECT_TRUE(d->WaitLogContains("skydb ready: PostgreSQL " + major + ".", seconds(10)))
        << d->Log();
    std::string run = dir_ + "/run";
    EXPECT_EQ(RedisCli(StoreSocket(dir_), {"DBSIZE"}), std::to_string(kSessions));
    EXPECT_EQ(RedisCli(StoreSocket(dir_), {"GET", "s:500"}), "v500");
    EXPECT_EQ(PsqlAs(run, "app", "app", "SELECT count(*) FROM items"), std::to_string(rows));
    EXPECT_EQ(PsqlAs(run, "app", "app", "SELECT body FROM items WHERE id = 7"),
              "8f14e45fceea167a5a36dedd4bea2543");
    EXPECT_EQ(PsqlAs(run, TestUser(), "app",
                     "SELECT tableowner || ' ' || has_table_privilege('reporter', 'items', "
                     "'SELECT') FROM pg_tables WHERE tablename = 'items'"),
              "app true");
    // The new cluster archives into the repository, which is its own now.
    EXPECT_TRUE(SwitchWalAndWaitArchived(run, repo_)) << d->Log();
    EXPECT_FALSE(fs::exists(dir_ + "/run/archive-failure.txt"))
        << ReadAll(dir_ + "/run/archive-failure.txt");
    EXPECT_EQ(d->StopCleanly(seconds(30)), "");
  }

  // The old cluster's backups, moved aside, still list (with the 15 binaries).
  void ExpectOldBackupsAside() {
    std::string aside;
    for (const auto& e : fs::directory_iterator(repo_)) {
      if (StartsWith(e.path().filename().string(), "pre-upgrade-15-")) aside = e.path();
    }
    ASSERT_FALSE(aside.empty()) << "no pre-upgrade-15-* in " << repo_;
    EXPECT_TRUE(fs::exists(aside + "/skydb-backup.json"));
    auto listed = RunSkydb({"backup", "list", "--repo", aside});
    EXPECT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_THAT(listed.out, HasSubstr("restores to any time in")) << listed.out;
  }

  TestRoot root_;
  std::string dir_, repo_;
};

TEST_F(UpgradeTest, DumpPathMoves15To17NamedByToBinDir) {
  constexpr int kRows = 20000;
  ASSERT_NO_FATAL_FAILURE(MakeCluster15(kRows));
  std::string bin17 = RelocatableTree(17) + "/bin";
  auto run = RunSkydb({"upgrade", "--data-dir", dir_, "--user", TestUser(), "--to-bin-dir", bin17,
                       "--set", "backup.repository=" + repo_});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("-> PostgreSQL 17.10 (" + bin17 + ") by dump and restore"));
  EXPECT_THAT(run.err, HasSubstr("expected downtime about "));
  EXPECT_THAT(run.err, HasSubstr("restoring database app"));
  EXPECT_THAT(run.err, HasSubstr("checking the new cluster: row counts"));
  EXPECT_THAT(run.out, HasSubstr("upgraded " + dir_ + "/pgdata to PostgreSQL 17.10"));
  std::printf("%s", run.err.c_str());
  EXPECT_EQ(std::string(Trim(ReadAll(dir_ + "/pgdata/PG_VERSION"))), "17");
  EXPECT_EQ(std::string(Trim(ReadAll(dir_ + "/upgrade/old-15/PG_VERSION"))), "15");
  EXPECT_FALSE(fs::exists(repo_ + "/skydb-backup.json"));
  ExpectOldBackupsAside();
  ExpectEverythingServed({}, {{"SKY_POSTGRES_BIN", bin17}}, "17", kRows);
  // Upgrading again while the kept cluster is there is refused, naming it.
  auto again = RunSkydb({"upgrade", "--data-dir", dir_, "--user", TestUser(), "--from-bin-dir",
                         bin17, "--to-bin-dir", RelocatableTree(18) + "/bin"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr(dir_ + "/upgrade/old-15 holds the cluster kept by an earlier "
                                          "upgrade"));
}

TEST_F(UpgradeTest, DumpPathMoves15To18FoundAsServeFindsIt) {
  constexpr int kRows = 20000;
  ASSERT_NO_FATAL_FAILURE(MakeCluster15(kRows));
  std::string bundle = root_.Dir("pg18.skydb-bundle");
  ASSERT_EQ(StageBundle(RelocatableTree(18), bundle), "");
  std::vector<std::string> sets = {"postgres.bundle=" + bundle, "postgres.sources=bundle"};
  auto dry = RunSkydb({"upgrade", "--data-dir", dir_, "--user", TestUser(), "--dry-run", "--set",
                       sets[0], "--set", sets[1]});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.err, HasSubstr("--dry-run: nothing was changed"));
  EXPECT_EQ(std::string(Trim(ReadAll(dir_ + "/pgdata/PG_VERSION"))), "15");
  auto run = RunSkydb({"upgrade", "--data-dir", dir_, "--user", TestUser(), "--set", sets[0],
                       "--set", sets[1], "--set", "backup.repository=" + repo_});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::printf("%s", run.err.c_str());
  EXPECT_THAT(run.err, HasSubstr("PostgreSQL 15."));
  EXPECT_THAT(run.err, HasSubstr("-> PostgreSQL 18.4 (" + dir_ + "/runtime/18.4-"));
  EXPECT_EQ(std::string(Trim(ReadAll(dir_ + "/pgdata/PG_VERSION"))), "18");
  ExpectOldBackupsAside();
  ExpectEverythingServed(sets, {}, "18", kRows);
}

TEST_F(UpgradeTest, RefusedWhileADaemonRunsOnTheDataDir) {
  auto d = StartEmbedded(dir_, {"postgres.version=15"});
  ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(120))) << d->Log();
  ASSERT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30)));
  auto run = RunSkydb({"upgrade", "--data-dir", dir_, "--user", TestUser(), "--to-bin-dir",
                       RelocatableTree(17) + "/bin"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err,
              HasSubstr("skydb upgrade: refused, nothing was changed: another skydb (pid " +
                        std::to_string(d->pid()) + ") is already running"));
  EXPECT_FALSE(fs::exists(dir_ + "/upgrade"));
  EXPECT_EQ(std::string(Trim(ReadAll(dir_ + "/pgdata/PG_VERSION"))), "15");
  EXPECT_EQ(RedisCli(StoreSocket(dir_), {"PING"}), "PONG");
  EXPECT_EQ(d->StopCleanly(seconds(30)), "");
}

// The new cluster is killed while the app's database is restored into it: the upgrade fails
// saying the old cluster is as it was, and it is.
TEST_F(UpgradeTest, FailureHalfwayLeavesTheOldClusterAsItWas) {
  constexpr int kRows = 400000;
  ASSERT_NO_FATAL_FAILURE(MakeCluster15(kRows));
  std::map<std::string, std::string> config_files;
  for (const char* f : {"PG_VERSION", "postgresql.conf", "skydb.conf", "pg_hba.conf",
                        "pg_ident.conf", "postgresql.auto.conf"}) {
    config_files[f] = ReadAll(dir_ + "/pgdata/" + f);
  }
  std::string shape = Shape(dir_ + "/pgdata");
  DaemonProcess upgrade({"upgrade", "--data-dir", dir_, "--user", TestUser(), "--to-bin-dir",
                         RelocatableTree(17) + "/bin", "--set", "backup.repository=" + repo_});
  ASSERT_TRUE(upgrade.WaitLogContains("restoring database app", seconds(180))) << upgrade.Log();
  std::vector<pid_t> killed;
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (killed.empty() && std::chrono::steady_clock::now() < deadline) {
    for (pid_t pid : PostgresProcessesOf(dir_ + "/upgrade/new")) {
      if (::kill(pid, SIGKILL) == 0) killed.push_back(pid);
    }
    if (killed.empty()) std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_FALSE(killed.empty()) << "no server of the new cluster to kill\n" << upgrade.Log();
  auto exit = upgrade.WaitExit(seconds(120));
  ASSERT_TRUE(exit.has_value()) << upgrade.Log();
  EXPECT_EQ(exit->exit_code, 1) << upgrade.Log();
  EXPECT_THAT(upgrade.Log(), HasSubstr("nothing was changed: the PostgreSQL 15 cluster in " + dir_ +
                                       "/pgdata is as it was"));
  std::printf("%s", upgrade.Log().c_str());
  EXPECT_FALSE(fs::exists(dir_ + "/upgrade"));
  for (const auto& [name, contents] : config_files) {
    EXPECT_EQ(ReadAll(dir_ + "/pgdata/" + name), contents) << name;
  }
  EXPECT_EQ(Shape(dir_ + "/pgdata"), shape);
  EXPECT_TRUE(fs::exists(repo_ + "/skydb-backup.json"));
  auto d = StartEmbedded(dir_, {"postgres.version=15"});
  ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(120))) << d->Log();
  ASSERT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30)));
  EXPECT_FALSE(d->LogContains("database system was interrupted")) << d->Log();
  EXPECT_EQ(RedisCli(StoreSocket(dir_), {"DBSIZE"}), std::to_string(kSessions));
  EXPECT_EQ(PsqlAs(dir_ + "/run", "app", "app", "SELECT count(*) FROM items"),
            std::to_string(kRows));
  EXPECT_EQ(d->StopCleanly(seconds(30)), "");
}

}  // namespace
}  // namespace skydb::testing
