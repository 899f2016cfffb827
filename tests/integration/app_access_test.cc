// The app's database and who reaches what (docs/embedding.md, docs/security.md), with three real
// OS users: the service user (SKYDB_TEST_USER), the app's user and a stranger. The app's user
// gets its own database through the PostgreSQL socket and the store through the store socket,
// and nothing else; the stranger reaches neither socket. Run as root.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli_support.h"
#include "skydb/env.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::seconds;

constexpr char kAppUser[] = "skydbapp";
constexpr char kStranger[] = "skydbstranger";
constexpr char kPsql[] = "/usr/lib/postgresql/15/bin/psql";

// A system user (and its group) for the test, created if missing and kept: ctest runs this
// binary's tests as parallel processes, and one removing the user would break the others.
class OsUser {
 public:
  explicit OsUser(std::string name) : name_(std::move(name)) {
    if (LookupUser(name_).ok()) return;
    std::string useradd = "useradd --system --no-create-home --user-group " + name_;
    if (std::system((useradd + " >/dev/null 2>&1").c_str()) != 0) return;  // SetUp skips
  }
  RunAs user() const { return LookupUser(name_).value(); }

 private:
  std::string name_;
};

struct FileFacts {
  uint32_t mode = 0;
  std::string group;
};

FileFacts FactsOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  auto group = LookupGroupByGid(st.st_gid);
  return {static_cast<uint32_t>(st.st_mode & 07777), group.ok() ? group->name : "?"};
}

class AppAccessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0 || !LookupUser(TestUser()).ok()) return;
    app_ = new OsUser(kAppUser);
    stranger_ = new OsUser(kStranger);
  }
  static void TearDownTestSuite() {
    delete app_;
    delete stranger_;
    app_ = stranger_ = nullptr;
  }

  void SetUp() override {
    if (::geteuid() != 0 || !LookupUser(TestUser()).ok()) {
      GTEST_SKIP() << "needs root and user " << TestUser();
    }
    if (!LookupUser(kAppUser).ok() || !LookupUser(kStranger).ok()) {
      GTEST_SKIP() << "could not create the users " << kAppUser << " and " << kStranger;
    }
    dir_ = root_.Dir("app");
  }

  std::unique_ptr<DaemonProcess> Serve(std::vector<std::string> sets = {}) {
    sets.push_back(std::string("app.user=") + kAppUser);
    auto d = StartEmbedded(dir_, sets);
    EXPECT_TRUE(WaitDaemonReady(*d, dir_, seconds(90))) << d->Log();
    EXPECT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30))) << d->Log();
    return d;
  }

  // psql as `user` with `url`, -Atc `sql`.
  CommandOutput PsqlAs(const RunAs& user, const std::string& url, const std::string& sql) {
    return RunAsUser(user, {kPsql, url, "-q", "-v", "ON_ERROR_STOP=1", "-Atc", sql});
  }

  std::string AppUrl() { return "postgresql:///app?host=" + dir_ + "/run&user=app"; }

  static OsUser* app_;
  static OsUser* stranger_;
  TestRoot root_;
  std::string dir_;
};

OsUser* AppAccessTest::app_ = nullptr;
OsUser* AppAccessTest::stranger_ = nullptr;

TEST_F(AppAccessTest, AppUserGetsItsOwnDatabaseAndTheStoreAndNothingElse) {
  auto d = Serve();
  RunAs app = app_->user();
  RunAs stranger = stranger_->user();
  const std::string group = LookupGroupByGid(app.gid)->name;

  EXPECT_EQ(FactsOf(dir_).mode, 0710u);
  EXPECT_EQ(FactsOf(dir_).group, group);
  EXPECT_EQ(FactsOf(dir_ + "/run").mode, 0750u);
  EXPECT_EQ(FactsOf(dir_ + "/run").group, group);
  EXPECT_EQ(FactsOf(dir_ + "/run/.s.PGSQL.5432").mode, 0660u);
  EXPECT_EQ(FactsOf(dir_ + "/run/.s.PGSQL.5432").group, group);
  EXPECT_EQ(FactsOf(dir_ + "/run/skydb.sock").mode, 0660u);
  EXPECT_EQ(FactsOf(dir_ + "/run/skydb.sock").group, group);
  EXPECT_EQ(FactsOf(dir_ + "/pgdata").mode, 0700u);
  EXPECT_EQ(FactsOf(dir_ + "/runtime").mode, 0700u);

  // The contract the app reads, as the app's user.
  auto env = RunAsUser(app, {"/bin/cat", dir_ + "/run/app.env"});
  ASSERT_EQ(env.exit_code, 0) << Text(env);
  EXPECT_NE(env.out.find("DATABASE_URL=\"" + AppUrl() + "\""), std::string::npos) << env.out;
  EXPECT_EQ(FactsOf(dir_ + "/run/app.env").mode, 0640u);
  EXPECT_EQ(FactsOf(dir_ + "/run/app.env").group, group);

  // skydb status names the store socket and the app's URL, in text and JSON.
  CliRun status = RunSkydb({"status", "--data-dir", dir_});
  EXPECT_NE(status.out.find("store socket: " + StoreSocket(dir_) + "\n"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("app database: " + AppUrl() + "\n"), std::string::npos) << status.out;
  CliRun json = RunSkydb({"status", "--data-dir", dir_, "--json"});
  EXPECT_NE(json.out.find("\"app_database_url\": \"" + AppUrl() + "\""), std::string::npos)
      << json.out;

  // Its own database: create a table, write, read; its sky_sessions is its own.
  auto wrote = PsqlAs(app, AppUrl(),
                      "CREATE TABLE visits(n int); INSERT INTO visits VALUES (1), (2);"
                      "CREATE TABLE sky_sessions(id text); SELECT count(*) FROM visits");
  EXPECT_EQ(wrote.exit_code, 0) << Text(wrote);
  EXPECT_EQ(wrote.out, "2\n");
  auto attrs = PsqlAs(app, AppUrl(),
                      "SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, "
                      "rolconnlimit > 0 FROM pg_roles WHERE rolname = current_user");
  EXPECT_EQ(attrs.out, "f|f|f|f|t\n") << Text(attrs);

  // Nothing else: not skydb's role, not skydb's database, not another role.
  std::string as_superuser = "postgresql:///app?host=" + dir_ + "/run&user=" + TestUser();
  auto super = PsqlAs(app, as_superuser, "SELECT 1");
  EXPECT_NE(super.exit_code, 0) << Text(super);
  EXPECT_NE(Text(super).find("Peer authentication failed"), std::string::npos) << Text(super);
  std::string skydb_db = "postgresql:///postgres?host=" + dir_ + "/run&user=app";
  auto own = PsqlAs(app, skydb_db, "SELECT count(*) FROM sky_sessions");
  EXPECT_NE(own.exit_code, 0) << Text(own);
  EXPECT_NE(Text(own).find("no pg_hba.conf entry"), std::string::npos) << Text(own);
  auto postgres_role = PsqlAs(app, "postgresql:///app?host=" + dir_ + "/run&user=postgres", "");
  EXPECT_NE(postgres_role.exit_code, 0) << Text(postgres_role);

  // The store, over its socket, as the app's user.
  auto pong = RunAsUser(app, {"/usr/bin/redis-cli", "-s", StoreSocket(dir_), "PING"});
  EXPECT_EQ(pong.out, "PONG\n") << Text(pong);

  // A stranger reaches neither socket.
  auto denied_pg = PsqlAs(stranger, AppUrl(), "SELECT 1");
  EXPECT_NE(denied_pg.exit_code, 0);
  EXPECT_NE(Text(denied_pg).find("Permission denied"), std::string::npos) << Text(denied_pg);
  auto denied_store = RunAsUser(stranger, {"/usr/bin/redis-cli", "-s", StoreSocket(dir_), "PING"});
  EXPECT_EQ(denied_store.out.find("PONG"), std::string::npos) << Text(denied_store);
  EXPECT_NE(Text(denied_store).find("ermission denied"), std::string::npos) << Text(denied_store);
  auto denied_env = RunAsUser(stranger, {"/bin/cat", dir_ + "/run/app.env"});
  EXPECT_NE(denied_env.exit_code, 0);

  // skydb's own table is where it was, untouched by the app's table of the same name.
  EXPECT_EQ(RedisCli(StoreSocket(dir_), {"SET", "s:1", "v", "EX", "600"}), "OK");
  EXPECT_EQ(d->StopCleanly(seconds(60)), "");

  // A second start: idempotent, and the app's data is there.
  auto again = Serve();
  auto kept = PsqlAs(app, AppUrl(), "SELECT count(*) FROM visits");
  EXPECT_EQ(kept.out, "2\n") << Text(kept) << again->Log();
  EXPECT_EQ(RedisCli(StoreSocket(dir_), {"GET", "s:1"}), "v");
  EXPECT_EQ(again->StopCleanly(seconds(60)), "");
}

TEST_F(AppAccessTest, ServiceUserMayConnectAsTheAppRoleForChildMode) {
  auto d = Serve();
  auto out = PsqlAs(LookupUser(TestUser()).value(), AppUrl(), "SELECT current_user");
  EXPECT_EQ(out.out, "app\n") << Text(out);
}

TEST_F(AppAccessTest, PasswordFileMakesTheRoleLogInWithScram) {
  std::string file = root_.Dir("app-password");
  { std::ofstream(file) << "correct horse\n"; }
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  auto d = Serve({"app.password_file=" + file});
  RunAs app = app_->user();
  auto without = PsqlAs(app, AppUrl(), "SELECT 1");
  EXPECT_NE(without.exit_code, 0) << Text(without);
  auto wrong = RunAsUser(app, {kPsql, AppUrl(), "-Atc", "SELECT 1"}, {{"PGPASSWORD", "nope"}});
  EXPECT_NE(Text(wrong).find("password authentication failed"), std::string::npos) << Text(wrong);
  auto right =
      RunAsUser(app, {kPsql, AppUrl(), "-Atc", "SELECT 1"}, {{"PGPASSWORD", "correct horse"}});
  EXPECT_EQ(right.out, "1\n") << Text(right);
  auto stored = PsqlAs(LookupUser(TestUser()).value(),
                       "postgresql:///postgres?host=" + dir_ + "/run&user=" + TestUser(),
                       "SELECT left(rolpassword, 14) FROM pg_authid WHERE rolname = 'app'");
  EXPECT_EQ(stored.out, "SCRAM-SHA-256$\n") << Text(stored);
  EXPECT_FALSE(d->LogContains("correct horse"));
}

TEST_F(AppAccessTest, MistakesAreRefusedWithTheFixBeforeAnythingStarts) {
  struct Case {
    std::string set;
    std::string message;
    int exit_code;  // 2: a configuration skydb cannot use; 1: the host lacks what it names
  };
  for (const Case& c : std::vector<Case>{
           {"app.role=" + TestUser(), "is the cluster's superuser role", 2},
           {"app.database=postgres", "is one of PostgreSQL's own databases", 2},
           {"app.user=no-such-user-x", "app.user no-such-user-x does not exist", 1},
           {"app.group=no-such-group-x", "app.group no-such-group-x does not exist", 1}}) {
    SCOPED_TRACE(c.set);
    auto d = StartEmbedded(dir_, {c.set});
    auto status = d->WaitExit(seconds(60));
    ASSERT_TRUE(status.has_value()) << d->Log();
    EXPECT_EQ(status->exit_code, c.exit_code);
    EXPECT_TRUE(d->LogContains(c.message)) << d->Log();
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/pgdata/PG_VERSION"));
  }
}

}  // namespace
}  // namespace skydb::testing
