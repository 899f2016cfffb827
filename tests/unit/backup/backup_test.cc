// The backup room's pure parts and its archiver over a fake file system: WAL names and gaps,
// pg_waldump's commit lines, UTC times, the rendered settings, and archive-wal's outcomes.
#include "skydb/backup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backup/pg_tools.h"
#include "support/fakes.h"

namespace skydb {
namespace {

using ::testing::ElementsAre;
using testing::FakeFileSystem;
using testing::FakeProcessRunner;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(WalNamesTest, RoundTripAndRollOverTheLogBoundary) {
  auto s = ParseWalSegmentName("0000000200000001000000FF");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->timeline, 2u);
  EXPECT_EQ(s->number, 256u + 255u);
  EXPECT_EQ(WalSegmentName({2, s->number + 1}), "000000020000000200000000");
  for (const char* bad : {"", "00000001000000000000000", "000000010000000000000100",
                          "00000001000000000000000g", "00000001.history"}) {
    EXPECT_FALSE(ParseWalSegmentName(bad).has_value()) << bad;
  }
}

TEST(WalNamesTest, MissingSegmentsArePerTimelineAndIgnoreOtherFiles) {
  EXPECT_THAT(MissingWalSegments({"000000010000000000000001", "000000010000000000000002",
                                  "000000010000000000000003", "00000002.history",
                                  "000000010000000000000003.00000028.backup"}),
              ElementsAre());
  EXPECT_THAT(MissingWalSegments({"0000000100000000000000FE", "000000010000000100000001",
                                  "000000020000000100000005", "000000020000000100000006"}),
              ElementsAre("0000000100000000000000FF", "000000010000000100000000"));
  std::vector<std::string> wide = {"000000010000000000000001", "000000010000000000000050"};
  EXPECT_EQ(MissingWalSegments(wide, 5).size(), 5u);
}

TEST(UtcTimeTest, ParsesWhatOperatorsAndPostgresWrite) {
  auto t = ParseUtcTimeMicros("2026-12-02 06:15:01");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, 1796192101LL * 1000000);
  EXPECT_EQ(ParseUtcTimeMicros("2026-12-02T06:15:01Z"), t);
  EXPECT_EQ(ParseUtcTimeMicros("2026-12-02 06:15:01 UTC"), t);
  EXPECT_EQ(ParseUtcTimeMicros("2026-12-02 06:15:01.25"), *t + 250000);
  EXPECT_EQ(FormatUtcMicros(*t + 250000), "2026-12-02 06:15:01.250000 UTC");
  for (const char* bad : {"", "yesterday", "2026-13-02 06:15:01", "2026-12-02 06:15:01.x",
                          "2026-12-02 25:00:00", "2026-12-02 06:15:01.1234567"}) {
    EXPECT_FALSE(ParseUtcTimeMicros(bad).has_value()) << bad;
  }
}

TEST(WaldumpTest, TheNewestCommitWins) {
  std::string out =
      "rmgr: Transaction len (rec/tot):     34/    34, tx:        735, lsn: 0/03000060, prev "
      "0/03000028, desc: COMMIT 2026-12-02 06:15:01.500000 UTC\n"
      "rmgr: Transaction len (rec/tot):     34/    34, tx:        736, lsn: 0/03000088, prev "
      "0/03000060, desc: COMMIT 2026-12-02 06:15:03.000001 UTC; inval msgs: catcache 7\n"
      "rmgr: Transaction len (rec/tot):     34/    34, tx:        737, lsn: 0/030000B0, prev "
      "0/03000088, desc: ABORT 2026-12-02 06:16:00.000000 UTC\n";
  EXPECT_EQ(LastCommitMicros(out), *ParseUtcTimeMicros("2026-12-02 06:15:03.000001"));
  EXPECT_FALSE(LastCommitMicros("pg_waldump: error: could not find a valid record").has_value());
}

TEST(SettingsTest, ArchiveCommandIsQuotedForTheShellAndForPostgresqlConf) {
  std::string conf = ArchiveSettingsConf("/usr/bin/skydb", "/var/backups/it's", "/d/run/f",
                                         std::chrono::seconds(60));
  EXPECT_THAT(conf, HasSubstr("archive_mode = on\n"));
  EXPECT_THAT(conf, HasSubstr("archive_timeout = 60s\n"));
  // shell: '/var/backups/it'\''s'; postgresql.conf doubles each single quote.
  EXPECT_THAT(conf, HasSubstr("archive_command = '''/usr/bin/skydb'' archive-wal --repo "
                              "''/var/backups/it''\\''''s'' --status-file ''/d/run/f'' %p %f'"));
}

TEST(SettingsTest, RecoverySettingsNameTheTargetOnlyForATime) {
  std::string latest = RecoverySettingsConf("/r", std::nullopt);
  EXPECT_THAT(latest, HasSubstr("restore_command = 'cp \"/r/wal/%f\" \"%p\"'\n"));
  EXPECT_THAT(latest, HasSubstr("recovery_target_action = 'promote'\n"));
  EXPECT_THAT(latest, Not(HasSubstr("recovery_target_time =")));
  std::string at = RecoverySettingsConf("/r", *ParseUtcTimeMicros("2026-12-02 06:15:01"));
  EXPECT_THAT(at, HasSubstr("recovery_target_time = '2026-12-02 06:15:01.000000 UTC'\n"));
}

TEST(ArchiveWalTest, CopiesOnceAcceptsAnIdenticalRetryAndRefusesOtherBytes) {
  FakeFileSystem fs;
  fs.AddDir("/repo", 0700);
  fs.AddFile("/pg/pg_wal/000000010000000000000001", "segment-one");
  ASSERT_TRUE(ArchiveWal(fs, "/repo", "/pg/pg_wal/000000010000000000000001",
                         "000000010000000000000001", "/d/run/archive-failure.txt")
                  .ok());
  EXPECT_EQ(*fs.ReadFile("/repo/wal/000000010000000000000001"), "segment-one");
  // PostgreSQL retries a segment whose success it did not record: the same bytes are success.
  EXPECT_TRUE(
      ArchiveWal(fs, "/repo", "/pg/pg_wal/000000010000000000000001", "000000010000000000000001", "")
          .ok());
  fs.AddFile("/other/000000010000000000000001", "another cluster");
  auto refused = ArchiveWal(fs, "/repo", "/other/000000010000000000000001",
                            "000000010000000000000001", "/d/run/archive-failure.txt");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("already exists with other contents"));
  EXPECT_THAT(ReadArchiveFailure(fs, "/d/run/archive-failure.txt"),
              HasSubstr("cannot archive 000000010000000000000001"));
  EXPECT_EQ(*fs.ReadFile("/repo/wal/000000010000000000000001"), "segment-one");
}

TEST(ArchiveWalTest, AMissingSourceIsAFailureThatSaysWhatPostgresDoes) {
  FakeFileSystem fs;
  fs.AddDir("/repo", 0700);
  auto failed = ArchiveWal(fs, "/repo", "/pg/pg_wal/x", "000000010000000000000002", "");
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.error().message, HasSubstr("PostgreSQL keeps it in pg_wal and retries"));
  auto bad = ArchiveWal(fs, "/repo", "/pg/pg_wal/x", "../escape", "");
  EXPECT_THAT(bad.error().message, HasSubstr("not a WAL file name"));
}

TEST(RepositoryTest, ListsOnlyCompleteBackupsAndReadsTheIdentity) {
  FakeFileSystem fs;
  EXPECT_THAT(ReadRepositoryIdentity(fs, "/repo").error().message,
              HasSubstr("/repo is not a skydb backup repository"));
  fs.AddFile("/repo/skydb-backup.json",
             RenderRepositoryIdentity({"7312", 15, "/usr/lib/postgresql/15/bin"}));
  BackupInfo info;
  info.label = "20261202T061500Z";
  info.end_time = 1796192101;
  info.bytes = 42;
  info.verified = true;
  fs.AddDir("/repo/base/20261202T061500Z");
  fs.AddFile("/repo/base/20261202T061500Z.json", RenderBackupInfo(info));
  fs.AddDir("/repo/base/20261202T070000Z.partial");
  fs.AddDir("/repo/base/20261202T080000Z");  // no description: not complete
  auto identity = ReadRepositoryIdentity(fs, "/repo");
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ(identity->system_identifier, "7312");
  EXPECT_EQ(identity->pg_major, 15);
  auto backups = ListBackups(fs, "/repo");
  ASSERT_TRUE(backups.ok());
  ASSERT_EQ(backups->size(), 1u);
  EXPECT_EQ((*backups)[0].path, "/repo/base/20261202T061500Z");
  EXPECT_EQ((*backups)[0].bytes, 42u);
  EXPECT_TRUE((*backups)[0].verified);
}

TEST(RepositoryTest, ADescriptionKeepsItsCompressionAndOlderOnesReadAsPlain) {
  BackupInfo info;
  info.label = "20261202T061500Z";
  info.bytes = 10;
  info.data_bytes = 40;
  info.compression = "zstd";
  auto back = ParseBackupInfo(RenderBackupInfo(info));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->compression, "zstd");
  EXPECT_EQ(back->data_bytes, 40u);
  // Written before compression existed: plain, and its data is its size.
  auto old = ParseBackupInfo(R"({"label": "20261201T000000Z", "bytes": 7})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->compression, "none");
  EXPECT_EQ(old->data_bytes, 7u);
  for (auto c : {BackupCompression::kNone, BackupCompression::kGzip, BackupCompression::kLz4,
                 BackupCompression::kZstd}) {
    EXPECT_EQ(ParseCompressionName(CompressionName(c)), c);
  }
  EXPECT_FALSE(ParseCompressionName("bzip2").has_value());
}

// A fake file system and process runner behind an Env.
struct FakeEnv {
  FakeFileSystem fs;
  FakeProcessRunner runner;
  Env env;
  FakeEnv() {
    env.fs = &fs;
    env.runner = &runner;
  }
};

// The extraction of a tar-format backup: base.tar first (it makes pg_wal), each file through
// the program its suffix names, the manifest beside them.
TEST(ExtractTarBackupTest, EachFileGoesThroughItsOwnProgramBaseFirst) {
  FakeEnv f;
  auto& fs = f.fs;
  auto& runner = f.runner;
  auto& env = f.env;
  fs.AddExecutable("/usr/bin/tar");
  fs.AddExecutable("/usr/bin/zstd");
  fs.AddFile("/b/pg_wal.tar", "w");
  fs.AddFile("/b/base.tar.zst", "b");
  fs.AddFile("/b/backup_manifest", "{manifest}");
  fs.AddDir("/x");
  runner.Answer("/usr/bin/tar -I /usr/bin/zstd -x -p -f /b/base.tar.zst -C /x", {0, 0, "", ""});
  runner.Answer("/usr/bin/tar -x -p -f /b/pg_wal.tar -C /x/pg_wal", {0, 0, "", ""});
  ASSERT_TRUE(backup_internal::ExtractTarBackup(env, "/b", "/x", 0, "extracting", nullptr).ok());
  EXPECT_THAT(runner.calls(),
              ElementsAre("/usr/bin/tar -I /usr/bin/zstd -x -p -f /b/base.tar.zst -C /x",
                          "/usr/bin/tar -x -p -f /b/pg_wal.tar -C /x/pg_wal"));
  EXPECT_EQ(*fs.ReadFile("/x/backup_manifest"), "{manifest}");
  EXPECT_TRUE(fs.IsDirectory("/x/pg_wal"));
}

TEST(ExtractTarBackupTest, AMissingProgramOrAStrangeFileSaysWhatToDo) {
  FakeEnv f;
  auto& fs = f.fs;
  auto& env = f.env;
  fs.AddExecutable("/bin/tar");
  fs.AddFile("/b/base.tar.lz4", "b");
  fs.AddDir("/x");
  auto missing = backup_internal::ExtractTarBackup(env, "/b", "/x", 0, "extracting", nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("install the lz4 package"));
  fs.AddExecutable("/usr/bin/lz4");
  fs.AddFile("/b/16384.tar.lz4", "t");
  auto strange = backup_internal::ExtractTarBackup(env, "/b", "/x", 0, "extracting", nullptr);
  ASSERT_FALSE(strange.ok());
  EXPECT_THAT(strange.error().message, HasSubstr("16384.tar.lz4"));
  FakeFileSystem empty;
  env.fs = &empty;
  empty.AddExecutable("/bin/tar");
  empty.AddDir("/b");
  empty.AddDir("/x");
  auto none = backup_internal::ExtractTarBackup(env, "/b", "/x", 0, "extracting", nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.error().message, HasSubstr("no base.tar"));
}

// With a reporter the copy runs on its own thread and the end is always reported, finished.
TEST(RunWatchedTest, ReportsTheBytesUnderTheWatchedDirectoryWhenItEnds) {
  FakeEnv f;
  auto& fs = f.fs;
  auto& runner = f.runner;
  auto& env = f.env;
  fs.AddFile("/dest/a", std::string(300, 'a'));
  fs.AddFile("/dest/sub/b", std::string(200, 'b'));
  runner.Answer("/bin/cp x y", {0, 0, "", ""});
  CommandSpec spec;
  spec.argv = {"/bin/cp", "x", "y"};
  std::vector<CopyProgress> seen;
  auto out = backup_internal::RunWatched(env, spec, "/dest", {"copying", 0, 1000, false, false},
                                         [&](const CopyProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->exit_code, 0);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(seen.back().finished);
  EXPECT_EQ(seen.back().done, 500u);
  EXPECT_EQ(seen.back().total, 1000u);
  EXPECT_EQ(seen.back().step, "copying");
}

}  // namespace
}  // namespace skydb
