// skydb doctor's rules: service user, data dir, cluster version, /dev/shm, rendering.
#include "cli/doctor_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fakes.h"

namespace skydb::cli {
namespace {

using skydb::testing::FakeFileSystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uid_t kServiceUid = 999;

UserFacts Root(const std::string& run_as_user = "") {
  UserFacts facts;
  facts.euid = 0;
  facts.run_as_user = run_as_user;
  if (!run_as_user.empty()) facts.run_as = RunAs{run_as_user, kServiceUid, kServiceUid, "/"};
  return facts;
}

// --- service user ------------------------------------------------------------------------------

TEST(ServiceUserTest, RootWithoutServiceUserBlocks) {
  Finding f = CheckServiceUser(Root());
  EXPECT_EQ(f.severity, Severity::kBlocker);
  EXPECT_THAT(f.message, HasSubstr("run_as_user"));
  EXPECT_THAT(f.message, HasSubstr("--user"));
}

TEST(ServiceUserTest, RootWithExistingServiceUserIsFine) {
  Finding f = CheckServiceUser(Root("skydb"));
  EXPECT_EQ(f.severity, Severity::kOk);
  EXPECT_THAT(f.message, HasSubstr("'skydb' (uid 999)"));
}

TEST(ServiceUserTest, MissingServiceUserBlocksWithTheLookupReason) {
  UserFacts facts = Root();
  facts.run_as_user = "ghost";
  facts.lookup_error = "user 'ghost' does not exist; create it";
  Finding f = CheckServiceUser(facts);
  EXPECT_EQ(f.severity, Severity::kBlocker);
  EXPECT_EQ(f.message, "user 'ghost' does not exist; create it");
}

TEST(ServiceUserTest, ServiceUserThatIsRootBlocks) {
  UserFacts facts = Root("toor");
  facts.run_as->uid = 0;
  EXPECT_EQ(CheckServiceUser(facts).severity, Severity::kBlocker);
}

TEST(ServiceUserTest, NonRootCannotSwitchToAnotherUser) {
  UserFacts facts = Root("skydb");
  facts.euid = 1000;
  Finding f = CheckServiceUser(facts);
  EXPECT_EQ(f.severity, Severity::kBlocker);
  EXPECT_THAT(f.message, HasSubstr("only root can switch users"));
  facts.euid = kServiceUid;
  EXPECT_EQ(CheckServiceUser(facts).severity, Severity::kOk);
}

TEST(ServiceUserTest, NonRootWithoutServiceUserRunsAsItself) {
  UserFacts facts;
  facts.euid = 1000;
  EXPECT_EQ(CheckServiceUser(facts).severity, Severity::kOk);
  EXPECT_EQ(ExpectedDataDirOwner(facts), uid_t{1000});
}

TEST(ServiceUserTest, ExpectedOwner) {
  EXPECT_EQ(ExpectedDataDirOwner(Root("skydb")), kServiceUid);
  EXPECT_EQ(ExpectedDataDirOwner(Root()), std::nullopt);
  UserFacts missing = Root();
  missing.run_as_user = "ghost";
  EXPECT_EQ(ExpectedDataDirOwner(missing), std::nullopt);
}

// --- data dir ----------------------------------------------------------------------------------

class DataDirTest : public ::testing::Test {
 protected:
  void MakeDataDir(uint32_t mode, uid_t owner = kServiceUid) {
    fs_.AddDir("/var/lib/skydb", mode);
    fs_.SetOwner("/var/lib/skydb", owner, owner);
  }
  std::vector<Finding> Check() { return CheckDataDir(fs_, "/var/lib/skydb", kServiceUid); }
  FakeFileSystem fs_;
};

TEST_F(DataDirTest, AbsentIsInformational) {
  auto findings = Check();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
  EXPECT_THAT(findings[0].message, HasSubstr("does not exist yet"));
}

TEST_F(DataDirTest, PrivateAndOwnedIsFine) {
  MakeDataDir(0700);
  auto findings = Check();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kOk);
}

TEST_F(DataDirTest, GroupOrOtherWritableBlocks) {
  for (uint32_t mode : {0770u, 0702u, 0777u}) {
    MakeDataDir(mode);
    auto findings = Check();
    ASSERT_FALSE(findings.empty());
    EXPECT_EQ(findings[0].severity, Severity::kBlocker) << std::oct << mode;
    EXPECT_THAT(findings[0].message, HasSubstr("chmod 0700 /var/lib/skydb"));
  }
}

TEST_F(DataDirTest, WrongOwnerBlocks) {
  MakeDataDir(0700, 0);
  auto findings = Check();
  EXPECT_EQ(findings[0].severity, Severity::kBlocker);
  EXPECT_THAT(findings[0].message, HasSubstr("owned by uid 0"));
  EXPECT_THAT(findings[0].message, HasSubstr("chown -R 999 /var/lib/skydb"));
}

TEST_F(DataDirTest, UnknownOwnerIsNotChecked) {
  MakeDataDir(0700, 0);
  auto findings = CheckDataDir(fs_, "/var/lib/skydb", std::nullopt);
  EXPECT_EQ(findings[0].severity, Severity::kOk);
}

TEST_F(DataDirTest, WorldReadableWarns) {
  MakeDataDir(0755);
  EXPECT_EQ(Check()[0].severity, Severity::kWarning);
}

TEST_F(DataDirTest, NotADirectoryBlocks) {
  fs_.AddFile("/var/lib/skydb", "oops");
  EXPECT_EQ(Check()[0].severity, Severity::kBlocker);
}

TEST_F(DataDirTest, PgdataModesPostgresRefusesBlock) {
  MakeDataDir(0700);
  fs_.AddDir("/var/lib/skydb/pgdata", 0750);
  fs_.SetOwner("/var/lib/skydb/pgdata", kServiceUid, kServiceUid);
  auto findings = Check();
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[1].severity, Severity::kOk);

  fs_.AddDir("/var/lib/skydb/pgdata", 0755);
  fs_.SetOwner("/var/lib/skydb/pgdata", kServiceUid, kServiceUid);
  findings = Check();
  EXPECT_EQ(findings[1].severity, Severity::kBlocker);
  EXPECT_THAT(findings[1].message, HasSubstr("it accepts 0700 or 0750"));
}

TEST(ClusterVersionTest, MatchingMajorIsFineAndMismatchBlocks) {
  FakeFileSystem fs;
  PgVersion v15{15, 20, "15.20"};
  EXPECT_FALSE(CheckClusterVersion(fs, "/d", v15));  // no cluster yet
  fs.AddFile("/d/pgdata/PG_VERSION", "15\n");
  EXPECT_EQ(CheckClusterVersion(fs, "/d", v15)->severity, Severity::kOk);
  fs.AddFile("/d/pgdata/PG_VERSION", "14\n");
  auto mismatch = CheckClusterVersion(fs, "/d", v15);
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(mismatch->severity, Severity::kBlocker);
  EXPECT_THAT(mismatch->message, HasSubstr("PostgreSQL 14 but the chosen binaries are 15.20"));
  EXPECT_THAT(mismatch->message, HasSubstr("pg_upgrade"));
  EXPECT_FALSE(CheckClusterVersion(fs, "/d", std::nullopt));
}

// --- /dev/shm ----------------------------------------------------------------------------------

TEST(PgMemoryTest, ParsesPostgresqlConfUnits) {
  EXPECT_EQ(ParsePgMemory("296MB"), 296ull << 20);
  EXPECT_EQ(ParsePgMemory("8kB"), 8ull << 10);
  EXPECT_EQ(ParsePgMemory("1GB"), 1ull << 30);
  EXPECT_EQ(ParsePgMemory("128"), 128ull * 8192);  // 8kB blocks
  EXPECT_EQ(ParsePgMemory(" 2TB "), 2ull << 40);
  EXPECT_EQ(ParsePgMemory("1mb"), std::nullopt);  // postgresql.conf units are case-sensitive
  EXPECT_EQ(ParsePgMemory("MB"), std::nullopt);
  EXPECT_EQ(ParsePgMemory(""), std::nullopt);
}

Settings WithSharedBuffers(const std::string& value) {
  Settings settings;
  Setting sb;
  sb.name = "shared_buffers";
  sb.value = value;
  settings.items.push_back(sb);
  return settings;
}

TEST(SharedMemoryTest, NeedIsSharedBuffersPlusOverhead) {
  EXPECT_EQ(SharedMemoryNeed(WithSharedBuffers("296MB")),
            (296ull << 20) + kSharedMemoryOverheadBytes);
  EXPECT_EQ(SharedMemoryNeed(Settings{}), std::nullopt);
  Settings numeric = WithSharedBuffers("lots");
  numeric.items[0].numeric = 1024.0 * 1024 * 32;
  EXPECT_EQ(SharedMemoryNeed(numeric), (32ull << 20) + kSharedMemoryOverheadBytes);
}

TEST(SharedMemoryTest, SmallerThanTheNeedWarns) {
  uint64_t need = (296ull << 20) + kSharedMemoryOverheadBytes;
  Result<SpaceFacts> docker_default = SpaceFacts{64ull << 20, 64ull << 20};
  Finding f = CheckSharedMemory("/dev/shm", docker_default, need);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_THAT(f.message, HasSubstr("64 MiB free"));
  EXPECT_THAT(f.message, HasSubstr("--shm-size"));

  Result<SpaceFacts> roomy = SpaceFacts{8ull << 30, 8ull << 30};
  EXPECT_EQ(CheckSharedMemory("/dev/shm", roomy, need).severity, Severity::kOk);
  EXPECT_EQ(CheckSharedMemory("/dev/shm", roomy, std::nullopt).severity, Severity::kInfo);
}

TEST(SharedMemoryTest, MissingShmBlocks) {
  Result<SpaceFacts> missing = Error::NotFound("cannot statvfs /dev/shm: No such file");
  EXPECT_EQ(CheckSharedMemory("/dev/shm", missing, 1).severity, Severity::kBlocker);
  Result<SpaceFacts> odd = Error::Io("cannot statvfs /dev/shm: I/O error");
  EXPECT_EQ(CheckSharedMemory("/dev/shm", odd, 1).severity, Severity::kWarning);
}

TEST(SharedMemoryTest, StatsTheRealRoot) {
  auto root = StatFileSystemSpace("/");
  ASSERT_TRUE(root.ok()) << root.error().message;
  EXPECT_GT(root->total_bytes, 0u);
  EXPECT_EQ(StatFileSystemSpace("/nonexistent/skydb").error().code, ErrorCode::kNotFound);
}

// --- binaries, tuning, rendering ---------------------------------------------------------------

DiscoveryOutcome ChosenDebian15() {
  DiscoveryOutcome outcome;
  Candidate chosen{"/usr/lib/postgresql/15/bin", BinarySource::kPgConfig,
                   "/usr/bin/pg_config --bindir", PgVersion{15, 20, "15.20"}, ""};
  outcome.report.chosen = chosen;
  outcome.report.rejected.push_back({"/usr/local/pgsql/bin", BinarySource::kDistro,
                                     "source-build layout", std::nullopt,
                                     "directory does not exist"});
  outcome.report.skipped_sources = {"bin_dir: not set", "bundle: no bundle"};
  return outcome;
}

TEST(BinariesTest, ChosenIsOkAndFailureBlocks) {
  EXPECT_EQ(CheckBinaries(ChosenDebian15()).severity, Severity::kOk);
  DiscoveryOutcome failed;
  failed.error = Error::NotFound("SKY_POSTGRES_BIN=/nonexistent: directory does not exist");
  Finding f = CheckBinaries(failed);
  EXPECT_EQ(f.severity, Severity::kBlocker);
  EXPECT_THAT(f.message, HasSubstr("SKY_POSTGRES_BIN=/nonexistent"));

  // The candidates are already listed in the report: the blocker gives only the fix.
  DiscoveryOutcome nothing;
  nothing.error = Error::NotFound("no usable PostgreSQL binaries found (a long list); fix");
  nothing.advice = "install postgresql-15";
  f = CheckBinaries(nothing);
  EXPECT_EQ(f.severity, Severity::kBlocker);
  EXPECT_THAT(f.message, HasSubstr("listed above"));
  EXPECT_THAT(f.message, HasSubstr("install postgresql-15"));
  EXPECT_THAT(f.message, Not(HasSubstr("a long list")));
}

TEST(RenderTest, DiscoveryNamesChosenPassedOverAndSkipped) {
  std::string text = RenderDiscovery(ChosenDebian15());
  EXPECT_THAT(text, HasSubstr("chosen       /usr/lib/postgresql/15/bin [pg_config, PostgreSQL "
                              "15.20] from /usr/bin/pg_config --bindir"));
  EXPECT_THAT(text, HasSubstr("passed over  /usr/local/pgsql/bin [distro]: directory does not "
                              "exist"));
  EXPECT_THAT(text, HasSubstr("skipped      bin_dir: not set\n               bundle: no bundle"));
}

TEST(RenderTest, FindingsShowSeverityAndTopic) {
  std::vector<Finding> findings{{Severity::kBlocker, "service user", "x"},
                                {Severity::kOk, "binaries", "y"}};
  EXPECT_TRUE(AnyBlocker(findings));
  EXPECT_EQ(RenderFindings(findings),
            "checks\n  BLOCKER  service user: x\n  ok       binaries: y\n");
  findings.erase(findings.begin());
  EXPECT_FALSE(AnyBlocker(findings));
}

TEST(RenderTest, TuningWarningsBecomeFindings) {
  Settings settings = WithSharedBuffers("296MB");
  settings.warnings = {"max_connections = 20 is below the pools' demand"};
  auto findings = TuningFindings(settings);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
}

TEST(BackupRepositoryTest, NoneWarnsAndAMissingDirectorySaysHowToMakeIt) {
  FakeFileSystem fs;
  Finding none = CheckBackupRepository(fs, "");
  EXPECT_EQ(none.severity, Severity::kWarning);
  EXPECT_THAT(none.message, HasSubstr("set backup.repository"));
  Finding missing = CheckBackupRepository(fs, "/backups/app");
  EXPECT_EQ(missing.severity, Severity::kWarning);
  EXPECT_THAT(missing.message, HasSubstr("create it owned by the service user"));
  fs.AddDir("/backups/app", 0700);
  EXPECT_EQ(CheckBackupRepository(fs, "/backups/app").severity, Severity::kOk);
}

TEST(BackupRepositoryTest, ACompressionWithoutItsProgramWarns) {
  FakeFileSystem fs;
  fs.AddDir("/backups/app", 0700);
  fs.AddExecutable("/usr/bin/tar");
  Finding zstd = CheckBackupRepository(fs, "/backups/app", BackupCompression::kZstd);
  EXPECT_EQ(zstd.severity, Severity::kWarning);
  EXPECT_THAT(zstd.message, HasSubstr("install the zstd package"));
  fs.AddExecutable("/bin/zstd");
  EXPECT_EQ(CheckBackupRepository(fs, "/backups/app", BackupCompression::kZstd).severity,
            Severity::kOk);
  EXPECT_EQ(CheckBackupRepository(fs, "/backups/app", BackupCompression::kNone).severity,
            Severity::kOk);
}

}  // namespace
}  // namespace skydb::cli
