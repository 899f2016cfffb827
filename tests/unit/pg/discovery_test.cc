// Binary discovery on fake directory trees: rank order, pins, rejections, dedupe, PATH.
#include "skydb/discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/fakes.h"

namespace skydb {
namespace {

using skydb::testing::FakeFileSystem;
using skydb::testing::FakeProcessRunner;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr const char* kDebian15 = "/usr/lib/postgresql/15/bin";
constexpr const char* kPath = "/usr/local/sbin:/usr/local/bin:/usr/bin:/bin";

std::string VersionLine(const std::string& version) {
  return "postgres (PostgreSQL) " + version + "\n";
}

class DiscoveryTest : public ::testing::Test {
 protected:
  // A complete installation whose postgres reports `version`.
  void Install(const std::string& dir, const std::string& version) {
    for (const char* name : {"postgres", "initdb", "pg_ctl"}) fs_.AddExecutable(dir + "/" + name);
    runner_.Answer(dir + "/postgres --version", {0, 0, VersionLine(version), ""});
  }
  void InstallPgConfig(const std::string& path, const std::string& bindir) {
    fs_.AddExecutable(path);
    runner_.Answer(path + " --bindir", {0, 0, bindir + "\n", ""});
  }
  void SetUp() override { options_.path_env = kPath; }
  DiscoveryOutcome Examine() { return ExamineBinaries(options_, fs_, runner_); }
  bool Ran(const std::string& command) const {
    for (const auto& call : runner_.calls()) {
      if (call == command) return true;
    }
    return false;
  }
  const Candidate* Rejected(const DiscoveryOutcome& outcome, const std::string& dir) const {
    for (const auto& c : outcome.report.rejected) {
      if (c.bin_dir == dir) return &c;
    }
    return nullptr;
  }

  FakeFileSystem fs_;
  FakeProcessRunner runner_;
  DiscoveryOptions options_;
};

// --- version parsing and pins -------------------------------------------------------------

struct ParseCase {
  std::string output;
  int major;
  int minor;
  std::string text;
};

TEST(ParsePostgresVersionTest, Table) {
  const ParseCase cases[] = {
      {"postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", 15, 18, "15.18"},
      {"postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)", 15, 20, "15.20"},
      {"postgres (PostgreSQL) 17beta1", 17, 0, "17beta1"},
      {"postgres (PostgreSQL) 9.6.24", 9, 6, "9.6.24"},
      {"postgres (PostgreSQL) 16.2 (Homebrew)\n", 16, 2, "16.2"},
      {"postgres (PostgreSQL) 18devel", 18, 0, "18devel"},
      {"postgres 14.1", 14, 1, "14.1"},
  };
  for (const auto& c : cases) {
    auto v = ParsePostgresVersion(c.output);
    ASSERT_TRUE(v.ok()) << c.output << ": " << v.error().message;
    EXPECT_EQ(v->major, c.major) << c.output;
    EXPECT_EQ(v->minor, c.minor) << c.output;
    EXPECT_EQ(v->text, c.text) << c.output;
  }
}

TEST(ParsePostgresVersionTest, RejectsOutputWithoutAVersion) {
  for (const char* bad : {"", "postgres (PostgreSQL)", "bash: postgres: command not found",
                          "postgres (PostgreSQL) 15."}) {
    EXPECT_FALSE(ParsePostgresVersion(bad).ok()) << bad;
  }
}

TEST(VersionPinTest, MatchesByMajorOrExactly) {
  PgVersion v15{15, 18, "15.18"};
  EXPECT_TRUE(VersionMatchesPin(v15, ""));
  EXPECT_TRUE(VersionMatchesPin(v15, "15"));
  EXPECT_TRUE(VersionMatchesPin(v15, "15.18"));
  EXPECT_FALSE(VersionMatchesPin(v15, "15.1"));
  EXPECT_FALSE(VersionMatchesPin(v15, "14"));
  EXPECT_FALSE(VersionMatchesPin(v15, "1"));
  PgVersion beta{17, 0, "17beta1"};
  EXPECT_TRUE(VersionMatchesPin(beta, "17"));
  EXPECT_FALSE(VersionMatchesPin(beta, "17.0"));
  PgVersion old{9, 6, "9.6.24"};
  EXPECT_TRUE(VersionMatchesPin(old, "9.6"));
  EXPECT_FALSE(VersionMatchesPin(old, "9.5"));
}

TEST(VersionPinTest, ValidatesPinSyntax) {
  for (const char* good : {"", "15", "15.18", "9.6"}) EXPECT_TRUE(ValidateVersionPin(good).ok());
  for (const char* bad : {"x", "15.", ".15", "15.1.2", "v15", "15 "}) {
    auto status = ValidateVersionPin(bad);
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_THAT(status.error().message, HasSubstr("postgres.version"));
  }
}

TEST(BinarySourceTest, NamesRoundTrip) {
  for (auto s : {BinarySource::kBinDir, BinarySource::kBundle, BinarySource::kPgConfig,
                 BinarySource::kDistro, BinarySource::kPath}) {
    auto parsed = ParseBinarySource(BinarySourceName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  auto bad = ParseBinarySource("homebrew");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("bin_dir, bundle, pg_config, distro or path"));
}

// --- rank order ------------------------------------------------------------------------------

TEST_F(DiscoveryTest, PgConfigRanksAboveDistroAndPath) {
  Install("/usr/lib/postgresql/16/bin", "16.4");
  Install("/opt/pg/bin", "15.18");
  InstallPgConfig("/usr/bin/pg_config", "/opt/pg/bin");
  Install("/usr/local/bin", "14.12");
  auto outcome = Examine();
  ASSERT_FALSE(outcome.error) << outcome.error->message;
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, "/opt/pg/bin");
  EXPECT_EQ(outcome.report.chosen->source, BinarySource::kPgConfig);
  EXPECT_EQ(outcome.report.chosen->origin, "/usr/bin/pg_config --bindir");
  EXPECT_EQ(outcome.report.chosen->version->text, "15.18");
  // Serve stops at the first acceptable candidate.
  EXPECT_FALSE(Ran("/usr/lib/postgresql/16/bin/postgres --version"));
  EXPECT_THAT(outcome.report.rejected, IsEmpty());
}

TEST_F(DiscoveryTest, ExamineAllReportsLowerRankedCandidatesAsPassedOver) {
  Install("/opt/pg/bin", "15.18");
  InstallPgConfig("/usr/bin/pg_config", "/opt/pg/bin");
  Install("/usr/lib/postgresql/16/bin", "16.4");
  options_.examine_all = true;
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, "/opt/pg/bin");
  const Candidate* lower = Rejected(outcome, "/usr/lib/postgresql/16/bin");
  ASSERT_NE(lower, nullptr);
  EXPECT_EQ(lower->rejection, "usable, but ranked below the chosen /opt/pg/bin (pg_config)");
  EXPECT_EQ(lower->version->text, "16.4");
}

TEST_F(DiscoveryTest, DistroHighestMajorFirstDebianBeforeRpmLayout) {
  Install("/usr/lib/postgresql/14/bin", "14.12");
  Install("/usr/lib/postgresql/16/bin", "16.4");
  Install("/usr/pgsql-16/bin", "16.3");
  Install("/usr/lib/postgresql/15/bin", "15.18");
  fs_.AddDir("/usr/lib/postgresql/README.d");  // not a version: ignored
  options_.examine_all = true;
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, "/usr/lib/postgresql/16/bin");
  std::vector<std::string> order;
  for (const auto& c : outcome.report.rejected) order.push_back(c.bin_dir);
  EXPECT_THAT(order, ElementsAre("/usr/pgsql-16/bin", "/usr/lib/postgresql/15/bin",
                                 "/usr/lib/postgresql/14/bin", "/usr/local/pgsql/bin"));
  EXPECT_EQ(Rejected(outcome, "/usr/local/pgsql/bin")->rejection, "directory does not exist");
}

TEST_F(DiscoveryTest, SourceBuildLayoutComesAfterVersionedLayouts) {
  Install("/usr/local/pgsql/bin", "17.0");
  Install("/usr/pgsql-14/bin", "14.16");
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, "/usr/pgsql-14/bin");
}

TEST_F(DiscoveryTest, PathIsTheLastResort) {
  Install("/opt/custom/bin", "15.18");
  options_.path_env = "/opt/custom/bin:/usr/bin";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, "/opt/custom/bin");
  EXPECT_EQ(outcome.report.chosen->source, BinarySource::kPath);
  EXPECT_EQ(outcome.report.chosen->origin, "/opt/custom/bin/postgres on PATH");
  EXPECT_EQ(Rejected(outcome, "/usr/local/pgsql/bin")->rejection, "directory does not exist");
}

// --- pins --------------------------------------------------------------------------------------

TEST_F(DiscoveryTest, PinByMajorPassesOverOtherMajors) {
  Install("/usr/lib/postgresql/16/bin", "16.4");
  Install(kDebian15, "15.18");
  options_.version_pin = "15";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, kDebian15);
  EXPECT_EQ(Rejected(outcome, "/usr/lib/postgresql/16/bin")->rejection,
            "PostgreSQL 16.4 does not match the pin postgres.version = \"15\"");
}

TEST_F(DiscoveryTest, ExactPinRejectsOtherMinors) {
  Install("/usr/lib/postgresql/15/bin", "15.20");
  Install("/usr/pgsql-15/bin", "15.18");
  options_.version_pin = "15.18";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, "/usr/pgsql-15/bin");
  EXPECT_THAT(Rejected(outcome, kDebian15)->rejection,
              HasSubstr("15.20 does not match the pin postgres.version = \"15.18\""));
}

TEST_F(DiscoveryTest, PinMatchingNothingFailsNamingThePin) {
  Install(kDebian15, "15.20");
  options_.version_pin = "14";
  auto outcome = Examine();
  EXPECT_FALSE(outcome.report.chosen);
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, ErrorCode::kVersionMismatch);
  EXPECT_THAT(outcome.error->message,
              HasSubstr("does not match the pin postgres.version = \"14\""));
  EXPECT_THAT(outcome.error->message, HasSubstr("install postgresql-14"));
  EXPECT_THAT(outcome.error->message, HasSubstr("change postgres.version (now \"14\")"));
}

TEST_F(DiscoveryTest, MalformedPinFailsBeforeLooking) {
  Install(kDebian15, "15.20");
  options_.version_pin = "fifteen";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(runner_.calls(), IsEmpty());
}

TEST_F(DiscoveryTest, MajorsOutsideFourteenToEighteenAreUnsupported) {
  Install("/usr/lib/postgresql/9.6/bin", "9.6.24");
  Install("/usr/lib/postgresql/13/bin", "13.22");
  Install("/usr/lib/postgresql/19/bin", "19beta1");
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(Rejected(outcome, "/usr/lib/postgresql/13/bin")->rejection,
            "PostgreSQL 13.22 is not supported (skydb supports 14 to 18)");
  EXPECT_EQ(Rejected(outcome, "/usr/lib/postgresql/19/bin")->rejection,
            "PostgreSQL 19beta1 is not supported (skydb supports 14 to 18)");
  EXPECT_THAT(Rejected(outcome, "/usr/lib/postgresql/9.6/bin")->rejection,
              HasSubstr("9.6.24 is not supported"));
}

TEST_F(DiscoveryTest, EveryMajorFromFourteenToEighteenIsSupported) {
  for (int major = 14; major <= 18; ++major) {
    auto version = ParsePostgresVersion("postgres (PostgreSQL) " + std::to_string(major) + ".1");
    ASSERT_TRUE(version.ok());
    EXPECT_EQ(UnsupportedMajorReason(*version), "") << major;
  }
}

TEST_F(DiscoveryTest, AnExplicitBinDirOfAnUnsupportedMajorSaysWhichAreSupported) {
  Install("/opt/pg19/bin", "19.0");
  options_.bin_dir = "/opt/pg19/bin";
  options_.bin_dir_origin = "SKY_POSTGRES_BIN";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->message,
            "SKY_POSTGRES_BIN=/opt/pg19/bin: PostgreSQL 19.0 is not supported (skydb supports 14 "
            "to 18); point it at PostgreSQL 14 to 18, or unset it");
}

// --- what a candidate must hold ----------------------------------------------------------------

TEST_F(DiscoveryTest, MissingBinariesAreNamed) {
  fs_.AddExecutable("/usr/lib/postgresql/16/bin/postgres");
  fs_.AddExecutable("/usr/lib/postgresql/16/bin/pg_ctl");
  fs_.AddExecutable("/usr/pgsql-16/bin/pg_ctl");
  Install(kDebian15, "15.18");
  options_.examine_all = true;
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, kDebian15);
  EXPECT_EQ(Rejected(outcome, "/usr/lib/postgresql/16/bin")->rejection, "missing initdb");
  EXPECT_EQ(Rejected(outcome, "/usr/pgsql-16/bin")->rejection, "missing postgres, initdb");
}

TEST_F(DiscoveryTest, NonExecutableBinaryIsRejected) {
  Install("/usr/lib/postgresql/16/bin", "16.4");
  fs_.AddFile("/usr/lib/postgresql/16/bin/pg_ctl", "", 0644);
  Install(kDebian15, "15.18");
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, kDebian15);
  EXPECT_EQ(Rejected(outcome, "/usr/lib/postgresql/16/bin")->rejection, "pg_ctl not executable");
}

TEST_F(DiscoveryTest, PostgresThatWillNotRunIsRejected) {
  for (const char* name : {"postgres", "initdb", "pg_ctl"}) {
    fs_.AddExecutable(std::string("/usr/lib/postgresql/16/bin/") + name);
  }
  fs_.AddExecutable("/usr/pgsql-16/bin/postgres");
  fs_.AddExecutable("/usr/pgsql-16/bin/initdb");
  fs_.AddExecutable("/usr/pgsql-16/bin/pg_ctl");
  runner_.Answer("/usr/pgsql-16/bin/postgres --version", {127, 0, "", "libpq.so.5: not found"});
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_THAT(Rejected(outcome, "/usr/lib/postgresql/16/bin")->rejection,
              HasSubstr("cannot run /usr/lib/postgresql/16/bin/postgres"));
  EXPECT_EQ(Rejected(outcome, "/usr/pgsql-16/bin")->rejection,
            "/usr/pgsql-16/bin/postgres --version exited with status 127");
}

// --- explicit bin_dir --------------------------------------------------------------------------

TEST_F(DiscoveryTest, ExplicitBinDirWinsOverEverything) {
  Install(kDebian15, "15.18");
  Install("/opt/pg16/bin", "16.4");
  options_.bin_dir = "/opt/pg16/bin";
  options_.bin_dir_origin = "SKY_POSTGRES_BIN";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->source, BinarySource::kBinDir);
  EXPECT_EQ(outcome.report.chosen->origin, "SKY_POSTGRES_BIN");
  EXPECT_FALSE(Ran(std::string(kDebian15) + "/postgres --version"));
}

TEST_F(DiscoveryTest, MissingExplicitBinDirNamesTheVariable) {
  Install(kDebian15, "15.18");
  options_.bin_dir = "/nonexistent";
  options_.bin_dir_origin = "SKY_POSTGRES_BIN";
  auto result = DiscoverBinaries(options_, fs_, runner_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(result.error().message,
            "SKY_POSTGRES_BIN=/nonexistent: directory does not exist; set it to a directory "
            "holding postgres, initdb and pg_ctl, or unset it");
}

TEST_F(DiscoveryTest, InvalidExplicitBinDirNeverFallsThrough) {
  Install(kDebian15, "15.18");
  fs_.AddExecutable("/opt/pg/bin/postgres");
  fs_.AddExecutable("/opt/pg/bin/pg_ctl");
  options_.bin_dir = "/opt/pg/bin";
  auto outcome = Examine();
  EXPECT_FALSE(outcome.report.chosen);
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->message,
            "postgres.bin_dir=/opt/pg/bin: missing initdb; set it to a directory holding "
            "postgres, initdb and pg_ctl, or unset it");
  EXPECT_FALSE(Ran(std::string(kDebian15) + "/postgres --version"));
}

TEST_F(DiscoveryTest, DoctorSeesWhatAnInvalidBinDirHides) {
  Install(kDebian15, "15.18");
  options_.bin_dir = "/nonexistent";
  options_.bin_dir_origin = "SKY_POSTGRES_BIN";
  options_.examine_all = true;
  auto outcome = Examine();
  EXPECT_FALSE(outcome.report.chosen);
  ASSERT_TRUE(outcome.error);
  EXPECT_THAT(outcome.error->message, HasSubstr("SKY_POSTGRES_BIN=/nonexistent"));
  EXPECT_EQ(Rejected(outcome, "/nonexistent")->rejection, "directory does not exist");
  EXPECT_EQ(Rejected(outcome, kDebian15)->rejection,
            "usable, but not used: SKY_POSTGRES_BIN is set and ranks first");
}

TEST_F(DiscoveryTest, ExplicitBinDirFailingThePinSaysSo) {
  Install("/opt/pg/bin", "16.4");
  options_.bin_dir = "/opt/pg/bin";
  options_.bin_dir_origin = "SKY_POSTGRES_BIN";
  options_.version_pin = "15";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, ErrorCode::kVersionMismatch);
  EXPECT_THAT(outcome.error->message,
              HasSubstr("SKY_POSTGRES_BIN=/opt/pg/bin: PostgreSQL 16.4 does not match the pin"));
  EXPECT_THAT(outcome.error->message, HasSubstr("change postgres.version"));
}

// --- allowed sources, bundle, dedupe, PATH ------------------------------------------------------

TEST_F(DiscoveryTest, DisallowedSourcesAreSkippedWithTheirReason) {
  InstallPgConfig("/usr/bin/pg_config", kDebian15);
  Install(kDebian15, "15.18");
  Install("/usr/local/bin", "15.18");
  options_.allowed = {BinarySource::kPath};
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->source, BinarySource::kPath);
  EXPECT_THAT(outcome.report.skipped_sources,
              ElementsAre("bin_dir: not set (SKY_POSTGRES_BIN, postgres.bin_dir)",
                          "bundle: not allowed by postgres.sources",
                          "pg_config: not allowed by postgres.sources",
                          "distro: not allowed by postgres.sources"));
  EXPECT_FALSE(Ran("/usr/bin/pg_config --bindir"));
}

TEST_F(DiscoveryTest, BinDirSetButNotAllowedIsAnError) {
  Install(kDebian15, "15.18");
  options_.bin_dir = kDebian15;
  options_.bin_dir_origin = "SKY_POSTGRES_BIN";
  options_.allowed = {BinarySource::kDistro};
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_THAT(outcome.error->message, HasSubstr("postgres.sources does not allow bin_dir"));
  EXPECT_FALSE(outcome.report.chosen);
}

TEST_F(DiscoveryTest, NoBundleIsReported) {
  Install(kDebian15, "15.18");
  auto outcome = Examine();
  EXPECT_THAT(outcome.report.skipped_sources, ::testing::Contains("bundle: no bundle"));
}

class StubBundle final : public BundleSlot {
 public:
  explicit StubBundle(Result<std::optional<std::string>> answer) : answer_(std::move(answer)) {}
  Result<std::optional<std::string>> Provide() override { return answer_; }
  std::string Describe() const override { return "embedded 16.4-abc"; }

 private:
  Result<std::optional<std::string>> answer_;
};

TEST_F(DiscoveryTest, BundleRanksAbovePgConfig) {
  Install("/data/runtime/16.4-abc/bin", "16.4");
  Install(kDebian15, "15.18");
  InstallPgConfig("/usr/bin/pg_config", kDebian15);
  StubBundle bundle(std::optional<std::string>("/data/runtime/16.4-abc/bin"));
  options_.bundle = &bundle;
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->source, BinarySource::kBundle);
  EXPECT_EQ(outcome.report.chosen->origin, "embedded 16.4-abc");
}

TEST_F(DiscoveryTest, BundleThatFailsIsNeverSilentlyReplaced) {
  Install(kDebian15, "15.18");
  StubBundle bundle(Error::Io("sha256 mismatch for bin/postgres"));
  options_.bundle = &bundle;
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->message, "bundle embedded 16.4-abc: sha256 mismatch for bin/postgres");
  EXPECT_FALSE(outcome.report.chosen);
}

// A bundle knows its version from its manifest; the pin rejects it before anything is
// extracted, and discovery moves on to the next source.
class VersionedBundle final : public BundleSlot {
 public:
  Result<std::optional<std::string>> Provide() override {
    ++provided;
    return std::optional<std::string>("/data/runtime/16.4-abc/bin");
  }
  std::string Describe() const override { return "embedded bundle (PostgreSQL 16.4)"; }
  std::optional<PgVersion> Version() override { return PgVersion{16, 4, "16.4"}; }
  int provided = 0;
};

TEST_F(DiscoveryTest, PinRejectsABundleWithoutExtractingIt) {
  Install(kDebian15, "15.18");
  VersionedBundle bundle;
  options_.bundle = &bundle;
  options_.version_pin = "15";
  auto outcome = Examine();
  EXPECT_EQ(bundle.provided, 0);
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, kDebian15);
  const Candidate* rejected = Rejected(outcome, "(not extracted)");
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->source, BinarySource::kBundle);
  EXPECT_EQ(rejected->rejection,
            "PostgreSQL 16.4 does not match the pin postgres.version = \"15\"");
}

TEST_F(DiscoveryTest, PinRejectingTheOnlyBundleIsAVersionMismatch) {
  VersionedBundle bundle;
  options_.bundle = &bundle;
  options_.version_pin = "15";
  options_.allowed = {BinarySource::kBundle};
  auto outcome = Examine();
  EXPECT_EQ(bundle.provided, 0);
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.error->code, ErrorCode::kVersionMismatch);
  EXPECT_THAT(outcome.error->message, HasSubstr("does not match the pin"));
}

TEST_F(DiscoveryTest, DuplicatesAreReportedOnce) {
  Install(kDebian15, "15.20");
  InstallPgConfig("/usr/bin/pg_config", kDebian15);
  // A PATH directory of symlinks into the Debian directory is the same installation.
  for (const char* name : {"postgres", "initdb", "pg_ctl"}) {
    fs_.AddSymlink(std::string("/usr/local/bin/") + name, std::string(kDebian15) + "/" + name);
  }
  options_.examine_all = true;
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->source, BinarySource::kPgConfig);
  std::string same = std::string("same as ") + kDebian15 + " (already examined)";
  ASSERT_EQ(outcome.report.rejected.size(), 3u);
  EXPECT_EQ(outcome.report.rejected[0].bin_dir, kDebian15);
  EXPECT_EQ(outcome.report.rejected[0].source, BinarySource::kDistro);
  EXPECT_EQ(outcome.report.rejected[0].rejection, same);
  EXPECT_EQ(outcome.report.rejected[1].bin_dir, "/usr/local/pgsql/bin");
  EXPECT_EQ(outcome.report.rejected[2].bin_dir, "/usr/local/bin");
  EXPECT_EQ(outcome.report.rejected[2].rejection, same);
  // Each installation's postgres ran once.
  int version_runs = 0;
  for (const auto& call : runner_.calls())
    version_runs += call.find("--version") != std::string::npos;
  EXPECT_EQ(version_runs, 1);
}

TEST_F(DiscoveryTest, SymlinkedDirectoryIsADuplicate) {
  Install("/usr/lib/postgresql/16/bin", "16.4");
  fs_.AddSymlink("/usr/local/pgsql", "/usr/lib/postgresql/16");
  options_.examine_all = true;
  auto outcome = Examine();
  EXPECT_EQ(Rejected(outcome, "/usr/local/pgsql/bin")->rejection,
            "same as /usr/lib/postgresql/16/bin (already examined)");
}

TEST_F(DiscoveryTest, PathSearchIgnoresRelativeEntriesAndNonExecutables) {
  Install("/opt/b/bin", "15.18");
  Install("/opt/c/bin", "16.4");
  Install("rel/bin", "16.4");
  fs_.AddFile("/opt/a/bin/postgres", "", 0644);
  options_.path_env = ":rel/bin:/opt/a/bin:/opt/b/bin:/opt/c/bin";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.report.chosen);
  EXPECT_EQ(outcome.report.chosen->bin_dir, "/opt/b/bin");
}

TEST_F(DiscoveryTest, PgConfigProblemsAreSkippedSources) {
  Install(kDebian15, "15.18");
  auto outcome = Examine();
  EXPECT_THAT(outcome.report.skipped_sources,
              ::testing::Contains("pg_config: no pg_config on PATH"));

  fs_.AddExecutable("/usr/bin/pg_config");
  runner_.Answer("/usr/bin/pg_config --bindir", {1, 0, "", "no server package installed\n"});
  outcome = Examine();
  EXPECT_THAT(outcome.report.skipped_sources,
              ::testing::Contains("pg_config: /usr/bin/pg_config --bindir exited with status 1: "
                                  "no server package installed"));
}

TEST_F(DiscoveryTest, LibpqDevPgConfigWithoutServerIsRejected) {
  // libpq-dev alone: pg_config reports a bindir with client programs only.
  fs_.AddExecutable("/usr/lib/postgresql/15/bin/pg_config");
  InstallPgConfig("/usr/bin/pg_config", kDebian15);
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  ASSERT_FALSE(outcome.report.rejected.empty());
  EXPECT_EQ(outcome.report.rejected[0].source, BinarySource::kPgConfig);
  EXPECT_EQ(outcome.report.rejected[0].rejection, "missing postgres, initdb, pg_ctl");
}

TEST_F(DiscoveryTest, NothingUsableListsEveryCandidateAndTheFix) {
  fs_.AddExecutable("/usr/lib/postgresql/15/bin/pg_ctl");
  auto result = DiscoverBinaries(options_, fs_, runner_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  const std::string& m = result.error().message;
  EXPECT_THAT(m, HasSubstr("/usr/lib/postgresql/15/bin (distro): missing postgres, initdb"));
  EXPECT_THAT(m, HasSubstr("/usr/local/pgsql/bin (distro): directory does not exist"));
  EXPECT_THAT(m, HasSubstr("skipped bundle: no bundle"));
  EXPECT_THAT(m, HasSubstr("skipped path: no postgres on PATH"));
  EXPECT_THAT(m, HasSubstr("install postgresql-15"));
  EXPECT_THAT(m, HasSubstr("set SKY_POSTGRES_BIN"));
  EXPECT_THAT(m, Not(HasSubstr("postgres.version")));

  auto outcome = Examine();
  EXPECT_EQ(outcome.advice,
            "install postgresql-15 (apt-get install postgresql-15), set SKY_POSTGRES_BIN to a "
            "directory holding postgres, initdb and pg_ctl");
}

TEST_F(DiscoveryTest, AdviceIsOnlyForNothingUsable) {
  Install(kDebian15, "15.18");
  EXPECT_EQ(Examine().advice, "");
  options_.bin_dir = "/nonexistent";
  auto outcome = Examine();
  ASSERT_TRUE(outcome.error);
  EXPECT_EQ(outcome.advice, "");
}

// --- options from config ---------------------------------------------------------------------

TEST(DiscoveryOptionsFromConfigTest, OriginFollowsWhereBinDirCameFrom) {
  PostgresConfig config;
  config.bin_dir = "/opt/pg/bin";
  auto from_env = DiscoveryOptionsFromConfig(config, "/opt/pg/bin", "/usr/bin");
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->bin_dir_origin, "SKY_POSTGRES_BIN");
  EXPECT_EQ(from_env->path_env, "/usr/bin");
  auto from_file = DiscoveryOptionsFromConfig(config, "", "/usr/bin");
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(from_file->bin_dir_origin, "postgres.bin_dir");
  EXPECT_EQ(from_file->allowed.size(), 5u);
}

TEST(DiscoveryOptionsFromConfigTest, RejectsUnknownSourcesAndBadPins) {
  PostgresConfig config;
  config.sources = {"distro", "brew"};
  auto bad_source = DiscoveryOptionsFromConfig(config, "", "");
  ASSERT_FALSE(bad_source.ok());
  EXPECT_THAT(bad_source.error().message, HasSubstr("postgres.sources: 'brew'"));
  config.sources = {"distro"};
  config.version = "15.x";
  EXPECT_FALSE(DiscoveryOptionsFromConfig(config, "", "").ok());
  config.version = "15";
  auto ok = DiscoveryOptionsFromConfig(config, "", "");
  ASSERT_TRUE(ok.ok());
  EXPECT_THAT(ok->allowed, ElementsAre(BinarySource::kDistro));
  EXPECT_EQ(ok->version_pin, "15");
}

}  // namespace
}  // namespace skydb
