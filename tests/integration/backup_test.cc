// Backups (docs/backup.md) against real daemons over real PostgreSQL 15, run as root with the
// cluster owned by SKYDB_TEST_USER: a backup under write load restored to a new dir, a
// point-in-time restore past a DROP TABLE, an archive failure reported and caught up, and every
// refusal of skydb restore.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "base/strings.h"
#include "cli_support.h"
#include "resp_client.h"
#include "skydb/env.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

class BackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the cluster runs as " << TestUser() << ")";
    auto user = LookupUser(TestUser());
    if (!user.ok()) GTEST_SKIP() << "no user " << TestUser();
    uid_ = user->uid;
    gid_ = user->gid;
    dir_ = root_.Dir("d");
    repo_ = root_.Dir("repo");
    // What an operator does once: a repository directory the cluster user owns.
    ASSERT_EQ(::mkdir(repo_.c_str(), 0700), 0);
    ASSERT_EQ(::chown(repo_.c_str(), uid_, gid_), 0);
  }

  std::vector<std::string> Sets() const {
    return {"backup.repository=" + repo_, "backup.schedule=0", "backup.archive_timeout=10s"};
  }

  std::unique_ptr<DaemonProcess> Serve(const std::string& dir, std::vector<std::string> sets) {
    auto d = StartEmbedded(dir, sets);
    EXPECT_TRUE(WaitDaemonReady(*d, dir, seconds(90))) << d->Log();
    EXPECT_TRUE(WaitForPong(StoreSocket(dir), seconds(30))) << d->Log();
    return d;
  }

  // psql in the app's database, as the cluster's superuser.
  static std::string AppSql(const std::string& dir, const std::string& sql) {
    CliRun run = RunSkydb({"psql", "--data-dir", dir, "--", "-d", "app", "-Atc", sql});
    if (run.exit_code != 0) return "ERROR: " + run.err;
    return std::string(Trim(run.out));
  }

  CliRun Backup(const std::string& dir) {
    return RunSkydb({"--set", "backup.repository=" + repo_, "backup", "--data-dir", dir});
  }

  CliRun Restore(const std::string& to, const std::vector<std::string>& how) {
    std::vector<std::string> args = {"restore", "--from", repo_, "--to", to, "--user", TestUser()};
    args.insert(args.end(), how.begin(), how.end());
    return RunSkydb(args);
  }

  // Switches WAL and waits until the segment that was current is archived.
  void ArchiveAll(const std::string& dir) {
    // A commit record first: switching an empty segment would be a no-op.
    ASSERT_NE(Psql(dir, "SELECT txid_current()").rfind("ERROR", 0), 0u);
    std::string segment = Psql(dir, "SELECT pg_walfile_name(pg_current_wal_lsn())");
    ASSERT_EQ(Psql(dir, "SELECT pg_switch_wal() IS NOT NULL"), "t");
    auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      std::string last = Psql(dir, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver");
      if (last.size() == 24 && last.substr(8) >= segment.substr(8)) return;
      std::this_thread::sleep_for(milliseconds(200));
    }
    FAIL() << "segment " << segment << " was not archived within 60 s";
  }

  TestRoot root_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string dir_;
  std::string repo_;
};

TEST_F(BackupTest, ABackupUnderWriteLoadRestoresEveryAcknowledgedWrite) {
  auto d = Serve(dir_, Sets());
  ASSERT_EQ(AppSql(dir_, "CREATE TABLE orders (id int PRIMARY KEY)"), "CREATE TABLE");
  // Load: one committed row at a time in the app's database, and sessions over RESP.
  std::atomic<bool> stop{false};
  std::thread rows([&] {
    AppSql(dir_,
           "DO $$ BEGIN FOR i IN 1..3000 LOOP INSERT INTO orders VALUES (i); COMMIT; "
           "PERFORM pg_sleep(0.001); END LOOP; END $$");
  });
  std::vector<std::string> acked;
  std::thread sessions([&] {
    auto client = RespClient::Connect(StoreSocket(dir_), milliseconds(10000));
    if (!client.ok()) return;
    for (int i = 0; !stop.load() && i < 100000; ++i) {
      std::string key = "session:" + std::to_string(i);
      auto reply = client->Command({"SET", key, "value-" + std::to_string(i)});
      if (!reply.ok()) return;
      if (reply->IsOk()) acked.push_back(key);
    }
  });
  std::this_thread::sleep_for(milliseconds(500));
  CliRun backup = Backup(dir_);
  ASSERT_EQ(backup.exit_code, 0) << backup.err << d->Log();
  EXPECT_NE(backup.out.find("verified"), std::string::npos) << backup.out;
  stop = true;
  sessions.join();
  rows.join();
  std::string committed = AppSql(dir_, "SELECT count(*) || ' ' || max(id) FROM orders");
  ArchiveAll(dir_);
  ASSERT_GT(acked.size(), 100u) << "the load did not run";

  CliRun verify = RunSkydb({"backup", "verify", "--repo", repo_});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  CliRun list = RunSkydb({"backup", "list", "--repo", repo_});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("restores to any time in"), std::string::npos) << list.out;

  std::string restored = root_.Dir("restored");
  CliRun restore = Restore(restored, {"--latest"});
  ASSERT_EQ(restore.exit_code, 0) << restore.err;
  // The hint is a command that works as the user who ran restore (root: with --user).
  std::string hint =
      "  skydb serve --embed --data-dir " + restored + " --user " + TestUser() + "\n";
  ASSERT_TRUE(restore.out.size() > hint.size() &&
              restore.out.compare(restore.out.size() - hint.size(), hint.size(), hint) == 0)
      << restore.out;
  auto r = std::make_unique<DaemonProcess>(
      std::vector<std::string>{"serve", "--embed", "--data-dir", restored, "--user", TestUser()});
  ASSERT_TRUE(WaitDaemonReady(*r, restored, seconds(90))) << r->Log();
  ASSERT_TRUE(WaitForPong(StoreSocket(restored), seconds(30))) << r->Log();
  EXPECT_EQ(AppSql(restored, "SELECT count(*) || ' ' || max(id) FROM orders"), committed);
  auto client = RespClient::Connect(StoreSocket(restored), milliseconds(10000));
  ASSERT_TRUE(client.ok());
  size_t missing = 0;
  for (const auto& key : acked) {
    auto reply = client->Command({"EXISTS", key});
    if (!reply.ok() || reply->integer != 1) ++missing;
  }
  EXPECT_EQ(missing, 0u) << "of " << acked.size() << " acknowledged session writes";
}

// A manual backup while another backup holds the repository (the daemon's scheduled one; here
// the test holds REPO/backup.lock for 3 s) waits for it, saying so and naming the repository
// and the holder's pid, then takes its own. It used to be refused at once as "already running
// on this data directory".
TEST_F(BackupTest, AManualBackupWaitsForTheOneRunning) {
  auto d = Serve(dir_, Sets());
  ASSERT_EQ(Backup(dir_).exit_code, 0) << d->Log();  // the repository exists now
  std::string lock_file = repo_ + "/backup.lock";
  ASSERT_EQ(::chown(lock_file.c_str(), uid_, gid_), 0);  // as a backup run by the daemon left it
  auto held = NewRealHostOps()->LockExclusive(lock_file);
  ASSERT_TRUE(held.ok()) << held.error().message;
  std::thread release([&] {
    std::this_thread::sleep_for(seconds(3));
    held->reset();
  });
  auto started = std::chrono::steady_clock::now();
  CliRun waited = Backup(dir_);
  auto took = std::chrono::steady_clock::now() - started;
  release.join();
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_NE(waited.err.find("a backup into " + repo_ + " is already running (pid " +
                            std::to_string(::getpid()) + ": the daemon's scheduled backup"),
            std::string::npos)
      << waited.err;
  EXPECT_NE(waited.err.find("waiting for it to finish"), std::string::npos) << waited.err;
  EXPECT_GE(took, seconds(3)) << waited.out;
  EXPECT_EQ(RunSkydb({"backup", "list", "--repo", repo_}).exit_code, 0);
}

TEST_F(BackupTest, APointInTimeRestoreBringsBackADroppedTableAndNothingLater) {
  auto d = Serve(dir_, Sets());
  ASSERT_EQ(Backup(dir_).exit_code, 0) << d->Log();
  std::this_thread::sleep_for(milliseconds(2100));  // past the backup's end (whole seconds)
  ASSERT_EQ(AppSql(dir_, "CREATE TABLE keep AS SELECT generate_series(1, 500) AS id"),
            "SELECT 500");
  ASSERT_EQ(AppSql(dir_, "CREATE TABLE later (id int)"), "CREATE TABLE");
  ASSERT_EQ(RedisCli(StoreSocket(dir_), {"SET", "before", "1"}), "OK");
  std::this_thread::sleep_for(milliseconds(1100));
  std::string noted = UtcNow();
  std::this_thread::sleep_for(milliseconds(1100));
  ASSERT_EQ(AppSql(dir_, "DROP TABLE keep"), "DROP TABLE");
  ASSERT_EQ(AppSql(dir_, "INSERT INTO later SELECT generate_series(1, 10)"), "INSERT 0 10");
  ASSERT_EQ(RedisCli(StoreSocket(dir_), {"SET", "after", "1"}), "OK");
  ArchiveAll(dir_);

  std::string restored = root_.Dir("restored");
  CliRun restore = Restore(restored, {"--time", noted});
  ASSERT_EQ(restore.exit_code, 0) << restore.err;
  auto r = Serve(restored, {});
  EXPECT_EQ(AppSql(restored, "SELECT count(*) FROM keep"), "500");
  EXPECT_EQ(AppSql(restored, "SELECT count(*) FROM later"), "0");
  EXPECT_EQ(RedisCli(StoreSocket(restored), {"EXISTS", "before"}), "1");
  EXPECT_EQ(RedisCli(StoreSocket(restored), {"EXISTS", "after"}), "0");
}

TEST_F(BackupTest, RestoreRefusesWhatItMustNotDo) {
  CliRun none = RunSkydb({"restore", "--from", repo_, "--to", root_.Dir("x"), "--latest"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("is not a skydb backup repository"), std::string::npos) << none.err;

  auto d = Serve(dir_, Sets());
  ASSERT_EQ(Backup(dir_).exit_code, 0) << d->Log();
  ArchiveAll(dir_);

  // A running data dir, and a non-empty one.
  CliRun live = Restore(dir_, {"--latest"});
  EXPECT_NE(live.exit_code, 0);
  EXPECT_NE(live.err.find("is running on " + dir_), std::string::npos) << live.err;
  std::string full = root_.Dir("full");
  ASSERT_EQ(::mkdir(full.c_str(), 0700), 0);
  std::ofstream(full + "/notes.txt") << "mine\n";
  CliRun nonempty = Restore(full, {"--latest"});
  EXPECT_NE(nonempty.exit_code, 0);
  EXPECT_NE(nonempty.err.find("is not empty (it holds notes.txt)"), std::string::npos)
      << nonempty.err;

  // Times outside the range.
  for (const char* t : {"2001-01-01 00:00:00", "2999-01-01 00:00:00"}) {
    CliRun outside = Restore(root_.Dir("t"), {"--time", t});
    EXPECT_NE(outside.exit_code, 0) << t;
    EXPECT_NE(outside.err.find("is outside what"), std::string::npos) << outside.err;
    EXPECT_NE(outside.err.find("or --latest"), std::string::npos) << outside.err;
  }
  CliRun both = Restore(root_.Dir("t"), {"--latest", "--time", "2001-01-01 00:00:00"});
  EXPECT_EQ(both.exit_code, 2) << both.err;

  // A repository whose identity is another cluster's.
  std::string identity_file = repo_ + "/skydb-backup.json";
  std::ifstream in(identity_file);
  std::string identity((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto at = identity.find("\"system_identifier\": \"") + 22;
  identity.replace(at, 3, "999");
  std::ofstream(identity_file, std::ios::trunc) << identity;
  CliRun other = Restore(root_.Dir("o"), {"--latest"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("is of another cluster"), std::string::npos) << other.err;
  CliRun again = Backup(dir_);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("holds backups of another cluster"), std::string::npos) << again.err;
  for (const char* target : {"t", "o"}) {
    EXPECT_FALSE(std::filesystem::exists(root_.Dir(target))) << "a refused restore made " << target;
  }
}

// What a shell command prints on its standard output ("" when it cannot start).
std::string CommandOutputOf(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    ::pclose(pipe);
  }
  return out;
}

// GET http://127.0.0.1:PORT/PATH with curl, bounded; the body, or "" on failure.
std::string HttpGet(int port, const std::string& path) {
  return CommandOutputOf("curl -sS --max-time 5 http://127.0.0.1:" + std::to_string(port) + path);
}

// /metrics polled until it holds `text` or `timeout` passes; the last body read.
std::string WaitForMetrics(int port, const std::string& text, std::chrono::seconds timeout) {
  std::string metrics;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    metrics = HttpGet(port, "/metrics");
    if (metrics.find(text) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return metrics;
}

TEST_F(BackupTest, AnUnwritableRepositoryIsReportedThenCaughtUpWithoutAGap) {
  int port = FreePort();
  std::vector<std::string> sets = Sets();
  sets.push_back("http.port=" + std::to_string(port));
  auto d = Serve(dir_, sets);
  ASSERT_EQ(Backup(dir_).exit_code, 0) << d->Log();
  ArchiveAll(dir_);
  std::string wal = repo_ + "/wal";
  ASSERT_EQ(AppSql(dir_, "CREATE TABLE t (x int)"), "CREATE TABLE");
  ASSERT_EQ(::chmod(wal.c_str(), 0500), 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(AppSql(dir_, "INSERT INTO t SELECT 1"), "INSERT 0 1")
        << "the cluster must keep accepting writes";
    ASSERT_EQ(Psql(dir_, "SELECT pg_switch_wal() IS NOT NULL"), "t");
  }
  auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline &&
         !d->LogContains("WAL archiving into " + repo_ + " is failing")) {
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_TRUE(d->LogContains("WAL archiving into " + repo_ + " is failing: cannot archive"))
      << d->Log();
  EXPECT_NE(Psql(dir_, "SELECT failed_count FROM pg_stat_archiver"), "0");
  std::string status = HttpGet(port, "/status");
  EXPECT_NE(status.find("\"archive_failing\": true"), std::string::npos) << status;
  EXPECT_NE(status.find("Permission denied"), std::string::npos) << status;
  std::this_thread::sleep_for(milliseconds(5500));  // the poller's interval: pending segments
  std::string metrics = HttpGet(port, "/metrics");
  EXPECT_NE(metrics.find("skydb_wal_archive_failing 1"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("skydb_wal_archive_pending_segments 0"), std::string::npos) << metrics;
  ASSERT_EQ(::chmod(wal.c_str(), 0700), 0);
  ArchiveAll(dir_);
  deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline && !d->LogContains("works again")) {
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_TRUE(d->LogContains("WAL archiving into " + repo_ + " works again")) << d->Log();
  CliRun verify = RunSkydb({"backup", "verify", "--repo", repo_});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("no gap"), std::string::npos) << verify.out;
  EXPECT_NE(HttpGet(port, "/status").find("\"archive_failing\": false"), std::string::npos);
}

// A repository on a 20 MiB tmpfs: the second WAL segment and any base backup do not fit.
TEST_F(BackupTest, AFullRepositoryIsAClearErrorAndTheClusterRunsOn) {
  std::string mount = "mount -t tmpfs -o size=20m,mode=0700,uid=" + std::to_string(uid_) +
                      ",gid=" + std::to_string(gid_) + " tmpfs " + repo_ + " 2>&1";
  if (std::system(mount.c_str()) != 0) GTEST_SKIP() << "cannot mount a tmpfs here";
  struct Unmount {
    std::string path;
    ~Unmount() { (void)std::system(("umount " + path).c_str()); }
  } unmount{repo_};
  int port = FreePort();
  std::vector<std::string> sets = Sets();
  sets.push_back("http.port=" + std::to_string(port));
  auto d = Serve(dir_, sets);
  CliRun backup = Backup(dir_);
  EXPECT_NE(backup.exit_code, 0);
  EXPECT_NE(backup.err.find("No space left on device"), std::string::npos) << backup.err;
  EXPECT_NE(backup.err.find("the cluster keeps running"), std::string::npos) << backup.err;
  ASSERT_EQ(AppSql(dir_, "CREATE TABLE still (x int)"), "CREATE TABLE");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(AppSql(dir_, "INSERT INTO still SELECT generate_series(1, 1000)"), "INSERT 0 1000");
    ASSERT_EQ(Psql(dir_, "SELECT pg_switch_wal() IS NOT NULL"), "t");
  }
  std::string status;
  auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    status = HttpGet(port, "/status");
    if (status.find("No space left on device") != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(250));
  }
  EXPECT_NE(status.find("No space left on device"), std::string::npos) << status << d->Log();
  EXPECT_TRUE(d->LogContains("is failing: cannot archive")) << d->Log();
  EXPECT_EQ(AppSql(dir_, "SELECT count(*) FROM still"), "3000");
  d.reset();
}

// The daemon takes the first scheduled backup at once into an empty repository, reports it, and
// retention keeps retain_count backups after the next one.
TEST_F(BackupTest, TheDaemonTakesScheduledBackupsAndRetentionPrunes) {
  int port = FreePort();
  auto d = Serve(dir_, {"backup.repository=" + repo_, "backup.schedule=1h", "backup.retain_count=1",
                        "http.port=" + std::to_string(port)});
  std::string metrics = WaitForMetrics(port, "skydb_backup_successes_total 1", seconds(60));
  ASSERT_NE(metrics.find("skydb_backup_successes_total 1"), std::string::npos)
      << metrics << d->Log();
  EXPECT_EQ(metrics.find("skydb_backup_last_success_timestamp_seconds 0\n"), std::string::npos);
  EXPECT_TRUE(d->LogContains("taken and verified")) << d->Log();
  std::this_thread::sleep_for(milliseconds(1100));  // a new label (whole seconds)
  CliRun second = RunSkydb({"--set", "backup.repository=" + repo_, "--set", "backup.retain_count=1",
                            "backup", "--data-dir", dir_});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  int complete = 0;
  for (const auto& entry : std::filesystem::directory_iterator(repo_ + "/base")) {
    complete += entry.path().extension() == ".json" ? 1 : 0;
  }
  EXPECT_EQ(complete, 1) << "retain_count = 1 keeps one backup";
}

// `command` run under a pseudo-terminal (util-linux script), as an operator at a terminal runs
// it; its output, which is what that terminal showed.
std::string OnATerminal(const std::string& command) {
  return CommandOutputOf("script -qefc '" + command + "' /dev/null 2>&1");
}

// Compressed backups: gzip (pg_wal.tar.gz too), zstd (pg_wal.tar plain) and lz4 are stored as
// tar files, verified through an extraction, listed with their compression, and restored to a
// time (from the gzip one) and to the end (from the zstd one).
TEST_F(BackupTest, CompressedBackupsVerifyListAndRestoreToATimeAndToTheEnd) {
  auto d = Serve(dir_, Sets());
  auto backup = [&](const char* compression) {
    return RunSkydb({"--set", "backup.repository=" + repo_, "--set",
                     std::string("backup.compression=") + compression, "backup", "--data-dir",
                     dir_});
  };
  ASSERT_EQ(AppSql(dir_, "CREATE TABLE orders AS SELECT generate_series(1, 1000) AS id"),
            "SELECT 1000");
  CliRun gzip = backup("gzip");
  ASSERT_EQ(gzip.exit_code, 0) << gzip.err << d->Log();
  EXPECT_NE(gzip.out.find("(gzip, "), std::string::npos) << gzip.out;
  std::this_thread::sleep_for(milliseconds(2100));  // past its end (whole seconds)
  ASSERT_EQ(AppSql(dir_, "INSERT INTO orders SELECT generate_series(1001, 1500)"), "INSERT 0 500");
  std::this_thread::sleep_for(milliseconds(1100));
  std::string noted = UtcNow();
  std::this_thread::sleep_for(milliseconds(1100));
  ASSERT_EQ(backup("lz4").exit_code, 0);
  std::this_thread::sleep_for(milliseconds(1100));  // a new label
  ASSERT_EQ(backup("zstd").exit_code, 0);
  ASSERT_EQ(AppSql(dir_, "INSERT INTO orders SELECT generate_series(1501, 1600)"), "INSERT 0 100");
  ArchiveAll(dir_);

  std::set<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(repo_ + "/base")) {
    files.insert(entry.path().filename().string());
  }
  for (const char* name : {"base.tar.gz", "pg_wal.tar.gz", "base.tar.lz4", "base.tar.zst",
                           "pg_wal.tar", "backup_manifest"}) {
    EXPECT_EQ(files.count(name), 1u) << name << " is not in " << repo_ << "/base";
  }
  for (const auto& name : files) {
    EXPECT_EQ(name.find(".verifying"), std::string::npos) << "left behind: " << name;
  }
  CliRun list = RunSkydb({"backup", "list", "--repo", repo_});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const char* c : {" gzip ", " lz4 ", " zstd "}) {
    EXPECT_NE(list.out.find(c), std::string::npos) << list.out;
  }
  CliRun verify = RunSkydb({"backup", "verify", "--repo", repo_});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("3 backups verified"), std::string::npos) << verify.out;

  std::string at_time = root_.Dir("at-time");
  CliRun restore = Restore(at_time, {"--time", noted});
  ASSERT_EQ(restore.exit_code, 0) << restore.err;
  std::string latest = root_.Dir("latest");
  restore = Restore(latest, {"--latest"});
  ASSERT_EQ(restore.exit_code, 0) << restore.err;
  d.reset();
  {
    auto r = Serve(at_time, {});
    EXPECT_EQ(AppSql(at_time, "SELECT count(*) FROM orders"), "1500");
  }
  auto r = Serve(latest, {});
  EXPECT_EQ(AppSql(latest, "SELECT count(*) FROM orders"), "1600");
}

// A damaged compressed backup fails verification by name.
TEST_F(BackupTest, ADamagedCompressedBackupFailsVerification) {
  auto d = Serve(dir_, Sets());
  CliRun run = RunSkydb({"--set", "backup.repository=" + repo_, "--set", "backup.compression=gzip",
                         "backup", "--data-dir", dir_});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string tar;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(repo_ + "/base")) {
    if (entry.path().filename() == "base.tar.gz") tar = entry.path().string();
  }
  ASSERT_FALSE(tar.empty());
  ASSERT_EQ(::truncate(tar.c_str(), static_cast<off_t>(std::filesystem::file_size(tar) / 2)), 0);
  CliRun verify = RunSkydb({"backup", "verify", "--repo", repo_});
  EXPECT_EQ(verify.exit_code, 1) << verify.out;
  EXPECT_NE(verify.err.find("cannot be extracted"), std::string::npos) << verify.err;
}

// At a terminal, backup and restore show how many bytes they have copied.
TEST_F(BackupTest, AtATerminalBackupAndRestoreShowBytesCopied) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
  auto d = Serve(dir_, Sets());
  std::string shown = OnATerminal(std::string(SKYDB_BINARY) + " --set backup.repository=" + repo_ +
                                  " backup --data-dir " + dir_);
  EXPECT_NE(shown.find("skydb: copying the cluster: "), std::string::npos) << shown;
  EXPECT_NE(shown.find(" MiB of ~"), std::string::npos) << shown;
  ArchiveAll(dir_);
  std::string to = root_.Dir("restored");
  shown = OnATerminal(std::string(SKYDB_BINARY) + " restore --from " + repo_ + " --to " + to +
                      " --user " + TestUser() + " --latest");
  EXPECT_NE(shown.find("skydb: copying: "), std::string::npos) << shown;
  EXPECT_NE(shown.find("(100%)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("restored backup"), std::string::npos) << shown;
}

// Two real clusters: a repository holds one cluster's backups and WAL, and every way of mixing
// in the other's is refused, changing nothing.
TEST_F(BackupTest, ARepositoryOfAnotherClusterIsRefusedEverywhere) {
  std::string other_dir = root_.Dir("other");
  std::string other_repo = root_.Dir("other-repo");
  ASSERT_EQ(::mkdir(other_repo.c_str(), 0700), 0);
  ASSERT_EQ(::chown(other_repo.c_str(), uid_, gid_), 0);
  auto a = Serve(dir_, Sets());
  auto b = Serve(other_dir, {"backup.repository=" + other_repo, "backup.schedule=0",
                             "backup.archive_timeout=10s"});
  ASSERT_EQ(Backup(dir_).exit_code, 0) << a->Log();
  ArchiveAll(dir_);
  std::this_thread::sleep_for(milliseconds(1100));  // the other's label sorts later
  CliRun other_backup =
      RunSkydb({"--set", "backup.repository=" + other_repo, "backup", "--data-dir", other_dir});
  ASSERT_EQ(other_backup.exit_code, 0) << other_backup.err << b->Log();
  ArchiveAll(other_dir);

  // The other cluster's base backup into this repository.
  CliRun into = Backup(other_dir);
  EXPECT_NE(into.exit_code, 0);
  EXPECT_NE(into.err.find("holds backups of another cluster"), std::string::npos) << into.err;

  // The other's WAL segment under a name this repository already has.
  std::string name;
  for (const auto& entry : std::filesystem::directory_iterator(other_repo + "/wal")) {
    std::string n = entry.path().filename().string();
    if (n.size() == 24 && std::filesystem::exists(repo_ + "/wal/" + n)) name = n;
  }
  ASSERT_FALSE(name.empty()) << "no segment name in both archives";
  std::ifstream before_in(repo_ + "/wal/" + name, std::ios::binary);
  std::string before((std::istreambuf_iterator<char>(before_in)), {});
  CliRun archive = RunSkydb({"archive-wal", "--repo", repo_, other_repo + "/wal/" + name, name});
  EXPECT_NE(archive.exit_code, 0);
  EXPECT_NE(archive.err.find("holds another cluster's WAL"), std::string::npos) << archive.err;
  std::ifstream after_in(repo_ + "/wal/" + name, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(after_in)), {});
  EXPECT_TRUE(before == after) << "archive-wal overwrote " << name;

  // The other's base backup copied into this repository's base/ by hand: restore refuses it.
  std::string copy = "cp -a " + other_repo + "/base/. " + repo_ + "/base/";
  ASSERT_EQ(std::system(copy.c_str()), 0);
  std::string to = root_.Dir("mixed");
  CliRun restore = Restore(to, {"--latest"});
  EXPECT_NE(restore.exit_code, 0);
  EXPECT_NE(restore.err.find("is of another cluster"), std::string::npos) << restore.err;
  EXPECT_NE(restore.err.find("restore it from its own repository"), std::string::npos)
      << restore.err;
  EXPECT_FALSE(std::filesystem::exists(to)) << "a refused restore made " << to;
  CliRun verify = RunSkydb({"backup", "verify", "--repo", repo_});
  EXPECT_NE(verify.exit_code, 0);
  EXPECT_NE(verify.err.find("is a backup of another cluster"), std::string::npos) << verify.err;
}

TEST_F(BackupTest, BackupWithoutARepositorySaysHowToConfigureOne) {
  CliRun run = RunSkydb({"backup", "--data-dir", dir_});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("backup.repository is not set"), std::string::npos) << run.err;
}

// SIGHUP applies backup.schedule (0 → 1min: the daemon takes a backup) and archive_timeout to
// the running daemon; a new backup.repository waits for a restart, and the log says why.
TEST_F(BackupTest, SighupAppliesTheScheduleAndArchiveTimeoutNotTheRepository) {
  int port = FreePort();
  std::string conf = root_.Dir("skydb.toml");
  std::string other = root_.Dir("other-repo");
  auto write = [&](const std::string& repo, const char* schedule, const char* timeout) {
    std::ofstream(conf, std::ios::trunc)
        << "[backup]\nrepository = \"" << repo << "\"\nschedule = \"" << schedule
        << "\"\narchive_timeout = \"" << timeout << "\"\n";
  };
  write(repo_, "0s", "10s");
  auto d = StartEmbedded(dir_, {"http.port=" + std::to_string(port)}, {{"SKYDB_CONFIG", conf}});
  ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(90))) << d->Log();
  ASSERT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30))) << d->Log();
  EXPECT_EQ(Psql(dir_, "SHOW archive_timeout"), "10s");
  std::this_thread::sleep_for(milliseconds(1500));  // a tick or more: schedule 0 takes none
  EXPECT_NE(HttpGet(port, "/status").find("\"schedule_seconds\": 0"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(repo_ + "/base")) << d->Log();

  write(other, "1min", "30s");
  ASSERT_TRUE(d->Signal(SIGHUP).ok());
  std::string metrics = WaitForMetrics(port, "skydb_backup_successes_total 1", seconds(90));
  EXPECT_NE(metrics.find("skydb_backup_successes_total 1"), std::string::npos)
      << metrics << d->Log();
  EXPECT_NE(HttpGet(port, "/status").find("\"schedule_seconds\": 60"), std::string::npos);
  EXPECT_TRUE(d->WaitLogContains("backup: schedule = 1min", seconds(5))) << d->Log();
  EXPECT_TRUE(d->LogContains("backup.repository changed but is not reloadable (archive_mode"))
      << d->Log();
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (Psql(dir_, "SHOW archive_timeout") != "30s" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(Psql(dir_, "SHOW archive_timeout"), "30s") << d->Log();
  // Still the repository PostgreSQL started with.
  EXPECT_NE(Psql(dir_, "SHOW archive_command").find(repo_), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(repo_ + "/base"));
  EXPECT_FALSE(std::filesystem::exists(other)) << "a reload must not start a new repository";
}

}  // namespace
}  // namespace skydb::testing
