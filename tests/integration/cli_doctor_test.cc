// `skydb doctor` run as a user would, against the machine's real PostgreSQL installation.
//
// CI runs these as root with postgresql-15 installed and an unprivileged user (SKYDB_TEST_USER,
// default "skydbtest") created; checks that only hold for root skip themselves otherwise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "cli_support.h"

namespace skydb::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string TestUser() {
  const char* user = std::getenv("SKYDB_TEST_USER");
  return user != nullptr && *user != '\0' ? user : "skydbtest";
}

// The machine's own settings must not leak into what the tests expect.
std::map<std::string, std::optional<std::string>> CleanEnv() {
  return {{"SKY_POSTGRES_BIN", std::nullopt},
          {"SKYDB_RUN_AS_USER", std::nullopt},
          {"SKYDB_DATA_DIR", std::nullopt},
          {"SKYDB_POSTGRES_VERSION", std::nullopt},
          {"SKYDB_POSTGRES_SOURCES", std::nullopt}};
}

// The lines of the "passed over" block of the binaries section.
std::vector<std::string> PassedOver(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  passed over", 0) == 0) inside = true;
    if (line.rfind("  skipped", 0) == 0 || line.empty()) inside = false;
    if (inside) lines.push_back(line.substr(15));
  }
  return lines;
}

class CliDoctorTest : public ::testing::Test {
 protected:
  // A data dir that does not exist yet: doctor reports it as info, never as a problem.
  std::vector<std::string> Doctor(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"doctor", "--data-dir", tmp_.path() + "/data"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  TempDir tmp_;
};

TEST_F(CliDoctorTest, ChoosesDebianPostgres15AndSaysWhyOthersWerePassedOver) {
  CliRun run = RunSkydb(Doctor({"--user", TestUser()}), CleanEnv());
  EXPECT_THAT(run.out, HasSubstr("  chosen       /usr/lib/postgresql/15/bin ["));
  EXPECT_THAT(run.out, HasSubstr("PostgreSQL 15."));
  auto passed = PassedOver(run.out);
  ASSERT_FALSE(passed.empty()) << run.out;
  for (const auto& line : passed) {
    auto reason = line.find("]: ");
    ASSERT_NE(reason, std::string::npos) << line;
    EXPECT_GT(line.size(), reason + 3) << "no reason in: " << line;
  }
  EXPECT_THAT(run.out, HasSubstr("bundle: no bundle"));
  EXPECT_THAT(run.out, HasSubstr("shared_buffers"));  // the derived tuning
  EXPECT_THAT(run.out, HasSubstr("does not exist yet"));
  if (::geteuid() == 0) {
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_THAT(run.out, HasSubstr("result: nothing blocks a start"));
  }
}

TEST_F(CliDoctorTest, MissingSkyPostgresBinNamesTheVariableAndWhatIsMissing) {
  auto env = CleanEnv();
  env["SKY_POSTGRES_BIN"] = "/nonexistent";
  CliRun run = RunSkydb(Doctor({"--user", TestUser()}), env);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("SKY_POSTGRES_BIN=/nonexistent: directory does not exist"));
  EXPECT_THAT(run.err, HasSubstr("postgres, initdb and pg_ctl"));
  EXPECT_THAT(run.out, HasSubstr("  chosen       none"));
}

TEST_F(CliDoctorTest, SkyPostgresBinWithoutServerBinariesNamesThem) {
  auto env = CleanEnv();
  env["SKY_POSTGRES_BIN"] = tmp_.path();
  CliRun run = RunSkydb(Doctor({"--user", TestUser()}), env);
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err,
              HasSubstr("SKY_POSTGRES_BIN=" + tmp_.path() + ": missing postgres, initdb, pg_ctl"));
}

TEST_F(CliDoctorTest, VersionPinThatNothingMatchesFailsNamingThePin) {
  std::vector<std::string> args = {"--set", "postgres.version=14"};
  for (const auto& a : Doctor({"--user", TestUser()})) args.push_back(a);
  CliRun run = RunSkydb(args, CleanEnv());
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("does not match the pin postgres.version = \"14\""));
  EXPECT_THAT(run.err, HasSubstr("postgres.version"));
}

TEST_F(CliDoctorTest, RootWithoutServiceUserIsABlocker) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root is refused without a service user";
  CliRun run = RunSkydb(Doctor(), CleanEnv());
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("run_as_user"));
  EXPECT_THAT(run.err, HasSubstr("--user"));
}

TEST_F(CliDoctorTest, UnknownServiceUserIsABlocker) {
  CliRun run = RunSkydb(Doctor({"--user", "skydb-no-such-user"}), CleanEnv());
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("'skydb-no-such-user' does not exist"));
}

TEST_F(CliDoctorTest, WorldWritableDataDirIsABlocker) {
  std::string data_dir = tmp_.path() + "/open";
  ASSERT_EQ(::mkdir(data_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(data_dir.c_str(), 0777), 0);
  CliRun run = RunSkydb({"doctor", "--data-dir", data_dir, "--user", TestUser()}, CleanEnv());
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr(data_dir + " is writable by group or others (mode 0777)"));
}

TEST_F(CliDoctorTest, MalformedPinIsAConfigError) {
  CliRun run = RunSkydb({"--set", "postgres.version=fifteen", "doctor"}, CleanEnv());
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("postgres.version"));
  EXPECT_THAT(run.out, Not(HasSubstr("PostgreSQL binaries")));
}

TEST_F(CliDoctorTest, WarnsWhenNoBackupRepositoryIsConfigured) {
  CliRun run = RunSkydb(Doctor({"--user", TestUser()}), CleanEnv());
  EXPECT_THAT(run.out, HasSubstr("warning  backups: no backup repository is configured"));
  CliRun configured = RunSkydb({"--set", "backup.repository=" + tmp_.path(), "doctor", "--data-dir",
                                tmp_.path() + "/data", "--user", TestUser()},
                               CleanEnv());
  EXPECT_THAT(configured.out, HasSubstr("backups: base backups and WAL go to " + tmp_.path()));
  EXPECT_THAT(configured.out, Not(HasSubstr("no backup repository")));
}

// A data dir whose sockets would pass the 107-byte limit of a unix socket path: doctor blocks
// the start naming each socket, its length and how short DIR must be; serve refuses at once
// (exit 2) instead of letting PostgreSQL crash-loop on "could not create any Unix-domain
// sockets". It used to say "nothing blocks a start".
TEST(CliSocketPathTest, OverTheLimitBlocksTheStartAndNamesTheFix) {
  TempDir tmp;
  std::string dir = tmp.path() + "/" + std::string(104 - tmp.path().size() - 1, 'd');
  ASSERT_EQ(dir.size(), 104u);
  auto env = CleanEnv();
  CliRun doctor = RunSkydb({"doctor", "--data-dir", dir}, env);
  EXPECT_EQ(doctor.exit_code, 1) << doctor.out << doctor.err;
  EXPECT_THAT(doctor.out, HasSubstr("BLOCKER  sockets: PostgreSQL's socket " + dir +
                                    "/run/.s.PGSQL.5432 is 122 bytes, over the 107 a unix "
                                    "socket path may have: choose a --data-dir (data_dir) of at "
                                    "most 89 bytes (it has 104)"));
  EXPECT_THAT(doctor.out, HasSubstr("the store socket " + dir + "/run/skydb.sock is 119 bytes"));
  CliRun serve = RunSkydb({"serve", "--store", "memory", "--data-dir", dir}, env);
  EXPECT_EQ(serve.exit_code, 2) << serve.err;
  EXPECT_THAT(serve.err, HasSubstr("the store socket " + dir + "/run/skydb.sock is 119 bytes"));
  struct stat st {};
  EXPECT_NE(::stat(dir.c_str(), &st), 0) << "a refused start creates nothing";

  std::string fits = tmp.path() + "/short";
  CliRun ok = RunSkydb({"doctor", "--data-dir", fits}, env);
  EXPECT_THAT(ok.out, HasSubstr("ok       sockets: every unix socket path fits"));
}

}  // namespace
}  // namespace skydb::testing
