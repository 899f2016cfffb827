// Several apps on one daemon (docs/apps.md, docs/security.md): `skydb app add|list|remove|
// rotate-password` against real `skydb serve --embed` daemons over real PostgreSQL 15, with the
// apps' clients run as a real OS user (psql and pg_dump). Each app's role reaches its own
// database and no other: another app's database answers SQLSTATE 42501 (no CONNECT privilege),
// another app's password 28P01. Run as root; the cluster runs as SKYDB_TEST_USER.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.h"
#include "pgconn/pgconn.h"
#include "resp_client.h"
#include "skydb/env.h"
#include "supervisor/access_sync.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::seconds;

constexpr char kAppUser[] = "skydbapp";
constexpr char kPgBin[] = "/usr/lib/postgresql/15/bin/";
// What PostgreSQL says for SQLSTATE 42501 on connecting to a database without CONNECT, and for
// 28P01 (psql prints the message, not the code).
constexpr char k42501[] = "User does not have CONNECT privilege";
constexpr char k28P01[] = "password authentication failed for user";

// `argv` as `user`, with no password but the one in the URL and no client certificates
// (libpq reads ~/.postgresql/, and HOME is root's).
CommandOutput RunClient(const RunAs& user, std::vector<std::string> argv) {
  return RunAsUser(user, std::move(argv), {{"PGPASSWORD", std::nullopt}, {"HOME", "/nonexistent"}});
}

// The value of NAME="..." in `skydb app add`'s output ("" when absent).
std::string Var(const std::string& out, const std::string& name) {
  auto at = out.find(name + "=\"");
  if (at == std::string::npos) return "";
  at += name.size() + 2;
  return out.substr(at, out.find("\"\n", at) - at);
}

// `url` with its database (the path after '@/') replaced by `database`.
std::string WithDatabase(const std::string& url, const std::string& database) {
  auto from = url.find("@/") + 2;
  return url.substr(0, from) + database + url.substr(url.find('?', from));
}

// `url`'s password (URI userinfo) replaced by the one in `other`.
std::string WithPasswordOf(const std::string& url, const std::string& other) {
  auto password = [](const std::string& u) {
    auto colon = u.find(':', u.find("://") + 3);
    return std::make_pair(colon + 1, u.find('@') - colon - 1);
  };
  auto [at, size] = password(url);
  auto [other_at, other_size] = password(other);
  return url.substr(0, at) + other.substr(other_at, other_size) + url.substr(at + size);
}

class AppsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0 || !LookupUser(TestUser()).ok()) {
      GTEST_SKIP() << "needs root and user " << TestUser();
    }
    if (!LookupUser(kAppUser).ok()) {
      std::string useradd = std::string("useradd --system --no-create-home --user-group ") +
                            kAppUser + " >/dev/null 2>&1";
      (void)std::system(useradd.c_str());  // kept: parallel test processes share it
    }
    if (!LookupUser(kAppUser).ok()) GTEST_SKIP() << "could not create user " << kAppUser;
    dir_ = root_.Dir("apps");
  }

  std::unique_ptr<DaemonProcess> Serve() {
    // Room for the apps' connection limits (a 2-core host derives max_connections = 36).
    auto d = StartEmbedded(
        dir_, {std::string("app.user=") + kAppUser, "postgres.settings.max_connections=100"});
    EXPECT_TRUE(WaitDaemonReady(*d, dir_, seconds(90))) << d->Log();
    return d;
  }

  CliRun App(std::vector<std::string> args) {
    std::vector<std::string> argv = {"app"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--data-dir");
    argv.push_back(dir_);
    return RunSkydb(argv);
  }

  // `skydb app add NAME`; its DATABASE_URL (with the password).
  std::string Add(const std::string& name, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"add", name});
    CliRun run = App(extra);
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    return Var(run.out, "DATABASE_URL");
  }

  CommandOutput Psql(const std::string& url, const std::string& sql) {
    return RunClient(LookupUser(kAppUser).value(), {std::string(kPgBin) + "psql", url, "-q", "-v",
                                                    "ON_ERROR_STOP=1", "-Atc", sql});
  }

  std::string Superuser(const std::string& sql) { return PsqlAsTestUser(dir_, sql); }

  TestRoot root_;
  std::string dir_;
};

TEST_F(AppsTest, TwoAppsOnOneDaemonCannotReachEachOther) {
  auto d = Serve();
  CliRun added = App({"add", "alpha"});
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  std::string alpha = Var(added.out, "DATABASE_URL");
  EXPECT_NE(Var(added.out, "REDIS_URL"), "") << added.out;
  std::string beta = Add("beta");
  ASSERT_NE(alpha, "");
  ASSERT_NE(beta, "");
  EXPECT_EQ(Psql(alpha, "SELECT current_user || ' ' || current_database()").out, "alpha alpha\n");
  EXPECT_EQ(Psql(beta,
                 "CREATE TABLE secrets(s text); INSERT INTO secrets VALUES ('b');"
                 "SELECT count(*) FROM secrets")
                .out,
            "1\n");

  // The role skydb gave it: no power beyond its own database.
  EXPECT_EQ(Superuser("SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,"
                      " rolconnlimit, (SELECT count(*) FROM pg_auth_members m WHERE m.member ="
                      " r.oid OR m.roleid = r.oid) FROM pg_roles r WHERE rolname = 'alpha'"),
            "f|f|f|f|f|8|0");
  EXPECT_EQ(Superuser("SELECT count(*) FROM pg_database WHERE datallowconn AND"
                      " has_database_privilege('public', oid, 'CONNECT')"),
            "0");

  // Another app's database: 42501, by psql and by pg_dump; another's password: 28P01.
  auto cross = Psql(WithDatabase(alpha, "beta"), "SELECT count(*) FROM secrets");
  EXPECT_NE(cross.exit_code, 0);
  EXPECT_NE(Text(cross).find(k42501), std::string::npos) << Text(cross);
  auto dump = RunClient(LookupUser(kAppUser).value(),
                        {std::string(kPgBin) + "pg_dump", WithDatabase(alpha, "beta")});
  EXPECT_NE(dump.exit_code, 0);
  EXPECT_NE(dump.err.find(k42501), std::string::npos) << Text(dump);
  EXPECT_EQ(dump.out.find("secrets"), std::string::npos);
  auto wrong = Psql(WithPasswordOf(alpha, beta), "SELECT 1");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(Text(wrong).find(k28P01), std::string::npos) << Text(wrong);
  auto dump_wrong = RunClient(LookupUser(kAppUser).value(),
                              {std::string(kPgBin) + "pg_dump", WithPasswordOf(alpha, beta)});
  EXPECT_NE(dump_wrong.err.find(k28P01), std::string::npos) << Text(dump_wrong);
  // skydb's own database (the sessions) is in no app's pg_hba.conf line.
  auto own = Psql(WithDatabase(alpha, "postgres"), "SELECT 1");
  EXPECT_NE(Text(own).find("no pg_hba.conf entry"), std::string::npos) << Text(own);

  // The list names them, and the configured app; JSON too.
  CliRun list = App({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("alpha "), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("(configured: [app])"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("connections: max_connections"), std::string::npos) << list.out;
  CliRun json = App({"list", "--json"});
  EXPECT_NE(json.out.find("\"name\":\"beta\""), std::string::npos) << json.out;

  // A rotated password stops the old one at once.
  CliRun rotated = App({"rotate-password", "alpha"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  std::string alpha2 = Var(rotated.out, "DATABASE_URL");
  EXPECT_NE(alpha2, alpha);
  EXPECT_NE(Text(Psql(alpha, "SELECT 1")).find(k28P01), std::string::npos);
  EXPECT_EQ(Psql(alpha2, "SELECT 1").out, "1\n");

  // No password reaches the daemon's log or PostgreSQL's.
  auto password_of = [](const std::string& url) {
    auto colon = url.find(':', url.find("://") + 3);
    return url.substr(colon + 1, url.find('@') - colon - 1);
  };
  EXPECT_FALSE(d->LogContains(password_of(alpha)));
  EXPECT_FALSE(d->LogContains(password_of(alpha2)));

  // A restart keeps them: pg_hba.conf is rendered from the registry again.
  EXPECT_EQ(d->StopCleanly(seconds(60)), "");
  auto again = Serve();
  EXPECT_EQ(Psql(alpha2, "SELECT 1").out, "1\n") << again->Log();
  EXPECT_EQ(Psql(beta, "SELECT count(*) FROM secrets").out, "1\n");

  // Removed keeping the data: the role may not log in, the data stays; then dropped.
  CliRun keep = App({"remove", "beta", "--keep-data"});
  EXPECT_EQ(keep.exit_code, 0) << keep.err;
  auto refused = Psql(beta, "SELECT 1");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_EQ(Superuser("SELECT count(*) FROM pg_database WHERE datname = 'beta'"), "1");
  CliRun readd = App({"add", "beta"});
  EXPECT_NE(readd.exit_code, 0);
  EXPECT_NE(readd.err.find("--drop-data deletes it"), std::string::npos) << readd.err;
  CliRun drop = App({"remove", "beta", "--drop-data"});
  EXPECT_EQ(drop.exit_code, 0) << drop.err;
  EXPECT_EQ(Superuser("SELECT count(*) FROM pg_database WHERE datname = 'beta'"), "0");
  EXPECT_EQ(Superuser("SELECT count(*) FROM pg_roles WHERE rolname = 'beta'"), "0");
  EXPECT_EQ(again->StopCleanly(seconds(60)), "");
}

// REDIS_URL's user and password ("unix://NAME:PASSWORD@/socket"), and the socket.
struct StoreLogin {
  std::string user, password, socket;
};
StoreLogin StoreLoginOf(const std::string& redis_url) {
  size_t start = redis_url.find("://") + 3, colon = redis_url.find(':', start),
         at = redis_url.find('@', start);
  if (colon == std::string::npos || at == std::string::npos) return {};
  return {redis_url.substr(start, colon - start), redis_url.substr(colon + 1, at - colon - 1),
          redis_url.substr(at + 1)};
}

// The reply to `args` on a fresh connection after AUTH as `login` ("WRONGPASS..." when that
// fails).
std::string AsApp(const StoreLogin& login, const std::vector<std::string>& args) {
  auto client = RespClient::Connect(login.socket, std::chrono::seconds(10));
  if (!client.ok()) return "connect: " + client.error().message;
  auto auth = client->Command({"AUTH", login.user, login.password});
  if (!auth.ok()) return "AUTH: " + auth.error().message;
  if (!auth->IsOk()) return auth->text;
  auto reply = client->Command(args);
  if (!reply.ok()) return "command: " + reply.error().message;
  return reply->type == RespReply::Type::kError ? reply->text : "allowed";
}

// Waits (the daemon reads users every 250 ms) until `login` logs in, or no longer does.
bool LoginBecomes(const StoreLogin& login, bool works) {
  for (int i = 0; i < 40; ++i) {
    bool worked = AsApp(login, {"PING"}) == "allowed";
    if (worked == works) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// `skydb app add` gives each app a store user of its name: REDIS_URL carries it, its keys and
// channels are those under "NAME:", another app's are NOPERM; rotate-password stops the old
// store password; the users survive a restart; remove deletes them.
TEST_F(AppsTest, EachAppsStoreUserReachesOnlyItsOwnKeys) {
  auto d = Serve();
  CliRun a = App({"add", "alpha"});
  CliRun b = App({"add", "beta"});
  ASSERT_EQ(a.exit_code + b.exit_code, 0) << a.err << b.err;
  StoreLogin alpha = StoreLoginOf(Var(a.out, "REDIS_URL"));
  StoreLogin beta = StoreLoginOf(Var(b.out, "REDIS_URL"));
  ASSERT_EQ(alpha.user, "alpha") << a.out;
  ASSERT_EQ(alpha.password.size(), 48U);
  EXPECT_NE(alpha.password, beta.password);
  EXPECT_EQ(Var(a.out, "DATABASE_URL").find(alpha.password), std::string::npos)
      << "the store password is not the database's";
  ASSERT_TRUE(LoginBecomes(alpha, true)) << d->Log();
  ASSERT_TRUE(LoginBecomes(beta, true));
  const std::string session(37 * 1024, 's');
  EXPECT_EQ(AsApp(alpha, {"SET", "alpha:sess:1", session, "EX", "1800"}), "allowed");
  const std::string key_denied =
      "NOPERM this user has no permissions to access one of the keys used as arguments";
  EXPECT_EQ(AsApp(beta, {"GET", "alpha:sess:1"}), key_denied);
  EXPECT_EQ(AsApp(beta, {"SET", "alpha:sess:1", "forged"}), key_denied);
  EXPECT_EQ(AsApp(beta, {"SCAN", "0"}), key_denied);
  EXPECT_EQ(AsApp(beta, {"SCAN", "0", "MATCH", "alpha:*"}), key_denied);
  EXPECT_EQ(AsApp(beta, {"KEYS", "*"}),
            "NOPERM this user has no permissions to run the 'keys' command");
  EXPECT_EQ(AsApp(beta, {"PUBLISH", "alpha:live:topic:1", "x"}),
            "NOPERM this user has no permissions to access one of the channels used as arguments");
  EXPECT_EQ(AsApp(beta, {"SUBSCRIBE", "alpha:live:topic:1"}),
            "NOPERM this user has no permissions to access one of the channels used as arguments");
  EXPECT_EQ(AsApp(beta, {"PUBLISH", "beta:live:topic:1", "x"}), "allowed");
  {
    // Pipelined, as node-redis sends: AUTH and the commands behind it in one write, each
    // judged as its own user at its turn; the refused write changes nothing.
    auto client = RespClient::Connect(beta.socket, std::chrono::seconds(10));
    ASSERT_TRUE(client.ok());
    auto replies = client->Pipeline({{"AUTH", beta.user, beta.password},
                                     {"SET", "beta:sess:2", session},
                                     {"SET", "alpha:sess:1", "forged"},
                                     {"GET", "beta:sess:2"}});
    ASSERT_TRUE(replies.ok());
    ASSERT_EQ(replies->size(), 4U);
    EXPECT_TRUE((*replies)[0].IsOk());
    EXPECT_TRUE((*replies)[1].IsOk());
    EXPECT_EQ((*replies)[2].text, key_denied);
    EXPECT_EQ((*replies)[3].text, session);
    auto owner = RespClient::Connect(alpha.socket, std::chrono::seconds(10));
    ASSERT_TRUE(owner.ok());
    auto got = owner->Pipeline({{"AUTH", alpha.user, alpha.password}, {"GET", "alpha:sess:1"}});
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE((*got)[1].text == session) << "alpha's session was changed";
  }
  EXPECT_EQ(AsApp(beta, {"SET", "beta:sess:1", "b"}), "allowed");

  CliRun rotated = App({"rotate-password", "alpha"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  StoreLogin alpha2 = StoreLoginOf(Var(rotated.out, "REDIS_URL"));
  EXPECT_NE(alpha2.password, alpha.password);
  EXPECT_TRUE(LoginBecomes(alpha, false)) << "the old store password still logs in";
  EXPECT_TRUE(LoginBecomes(alpha2, true));
  EXPECT_FALSE(d->LogContains(alpha.password));
  EXPECT_FALSE(d->LogContains(alpha2.password));

  EXPECT_EQ(d->StopCleanly(seconds(60)), "");
  auto again = Serve();
  EXPECT_TRUE(LoginBecomes(alpha2, true)) << again->Log();  // once the store listens
  EXPECT_EQ(AsApp(alpha2, {"GET", "alpha:sess:1"}), "allowed");
  EXPECT_EQ(AsApp(beta, {"GET", "alpha:sess:1"}), key_denied);
  CliRun removed = App({"remove", "beta", "--drop-data"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_TRUE(LoginBecomes(beta, false)) << "a removed app's store user still logs in";
  EXPECT_EQ(again->StopCleanly(seconds(60)), "");
}

TEST_F(AppsTest, APeerMappedAppLogsInAsItsOsUserWithoutAPassword) {
  auto d = Serve();
  std::string url = Add("gamma", {"--os-user", kAppUser});
  ASSERT_NE(url, "");
  EXPECT_EQ(url.find('@'), std::string::npos) << "no password: " << url;
  EXPECT_EQ(Psql(url, "SELECT current_user").out, "gamma\n");
  auto other = RunClient(LookupUser(TestUser()).value(),
                         {std::string(kPgBin) + "psql", url, "-Atc", "SELECT 1"});
  EXPECT_NE(Text(other).find("Peer authentication failed"), std::string::npos) << Text(other);
  CliRun rotate = App({"rotate-password", "gamma"});
  EXPECT_NE(rotate.exit_code, 0);
  EXPECT_NE(rotate.err.find("peer authentication"), std::string::npos) << rotate.err;
}

TEST_F(AppsTest, AnAppAddedToAStoppedDataDirLogsInOnceTheDaemonRuns) {
  auto d = Serve();
  EXPECT_EQ(d->StopCleanly(seconds(60)), "");
  CliRun added = App({"add", "delta"});
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  EXPECT_NE(added.err.find("no daemon runs on"), std::string::npos) << added.err;
  std::string url = Var(added.out, "DATABASE_URL");
  EXPECT_TRUE(PostgresProcessesOf(dir_ + "/pgdata").empty()) << "the cluster stopped again";
  auto again = Serve();
  EXPECT_EQ(Psql(url, "SELECT current_user").out, "delta\n") << again->Log();
  StoreLogin store = StoreLoginOf(Var(added.out, "REDIS_URL"));
  EXPECT_TRUE(LoginBecomes(store, true)) << added.out;
  EXPECT_EQ(AsApp(store, {"SET", "delta:sess:1", "v"}), "allowed");
}

TEST_F(AppsTest, RefusesRolesItDidNotCreateAndSaysWhatToDo) {
  auto d = Serve();
  ASSERT_EQ(Superuser("CREATE ROLE stranger LOGIN"), "CREATE ROLE");
  ASSERT_EQ(Superuser("CREATE DATABASE foreign_db"), "CREATE DATABASE");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"add", "stranger"}, 1, "skydb will not take over role stranger"},
           {{"add", "foreign_db"}, 1, "skydb will not take over database foreign_db"},
           {{"add", TestUser()}, 1, "skydb will not take over role " + TestUser()},
           {{"add", "Shop"}, 1, "app name Shop may hold only a-z, 0-9 and _"},
           {{"add", "all"}, 1, "is a word pg_hba.conf or PostgreSQL reserves"},
           {{"add", "app"}, 1, "app app exists already"},
           {{"add", "huge", "--connections", "10000"},
            1,
            "give fewer with --connections, or pin [postgres.settings] max_connections = "},
           {{"remove", "nosuch", "--drop-data"}, 1, "no app nosuch in skydb's registry"},
           {{"remove", "alpha"}, 2, "--keep-data or --drop-data"},
           {{"remove", "app", "--drop-data"}, 1, "is the configured app"},
           {{"rotate-password", "app"}, 1, "is the configured app"},
           {{"rotate-password", "nosuch"}, 1, "no app nosuch"}}) {
    CliRun run = App(c.args);
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    EXPECT_EQ(run.exit_code, c.exit_code) << run.out << run.err;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << run.err;
  }
  EXPECT_EQ(Superuser("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'stranger'"), "t");
  CliRun none = RunSkydb({"app", "list", "--data-dir", root_.Dir("nothing")});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("no cluster under"), std::string::npos) << none.err;
}

// A pg_hba.conf PostgreSQL rejects is detected before any reload, named with its line, and the
// previous files are put back; the running rules stay.
TEST_F(AppsTest, AnAccessFileThePostgresRejectsIsDetectedAndUndone) {
  auto d = Serve();
  std::string url = Add("epsilon");
  auto record = ReadStatus(dir_);
  ASSERT_TRUE(record.has_value());
  RunAs owner = LookupUser(TestUser()).value();
  auto conn = pg::Connection::Open(pg::UnixSocketConnInfo(
      record->socket_dir, record->port, record->superuser, record->database, "apps_test"));
  ASSERT_TRUE(conn.ok()) << conn.error().message;
  AccessTarget target;
  target.pgdata = dir_ + "/pgdata";
  target.superuser = record->superuser;
  auto fs = NewRealFileSystem();
  target.read = [&](const std::string& path) { return fs->ReadFile(path); };
  target.write = [&](const std::string& path, const std::string& contents) -> Status {
    SKYDB_RETURN_IF_ERROR(fs->WriteFileAtomic(path, contents, 0600));
    if (::chown(path.c_str(), owner.uid, owner.gid) != 0) return ErrnoError("chown", errno);
    return Ok();
  };
  auto before = fs->ReadFile(target.pgdata + "/pg_hba.conf");
  ASSERT_TRUE(before.ok());
  supervisor::AccessFiles broken{"local all all bogus-method\n", "skydb root x\n"};
  Status applied = supervisor::ApplyAccessFiles(*conn, target, broken);
  ASSERT_FALSE(applied.ok());
  EXPECT_NE(applied.error().message.find("pg_hba.conf line 1"), std::string::npos)
      << applied.error().message;
  EXPECT_NE(applied.error().message.find("the previous files are back"), std::string::npos);
  EXPECT_EQ(*fs->ReadFile(target.pgdata + "/pg_hba.conf"), *before);
  EXPECT_EQ(Psql(url, "SELECT 1").out, "1\n");

  // A good change is reloaded and verified: pg_conf_load_time() advances.
  std::string loaded = Superuser("SELECT pg_conf_load_time()");
  EXPECT_EQ(App({"add", "zeta"}).exit_code, 0);
  EXPECT_NE(Superuser("SELECT pg_conf_load_time()"), loaded);
}

// postgres.tcp_bind: PostgreSQL on TCP for tools, TLS and scram-sha-256 only, apps with a
// password only. A loopback address of its own (127.0.0.0/8) keeps port 5432 free of other tests.
TEST_F(AppsTest, PostgresOnTcpIsTlsWithScramForAppsOnly) {
  std::string pki = root_.Dir("pki");
  std::filesystem::create_directories(pki);
  std::string make =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -keyout " + pki +
      "/server.key -out " + pki + "/server.crt >/dev/null 2>&1";
  ASSERT_EQ(std::system(make.c_str()), 0);
  RunAs owner = LookupUser(TestUser()).value();
  for (const char* file : {"/server.key", "/server.crt"}) {
    ASSERT_EQ(::chown((pki + file).c_str(), owner.uid, owner.gid), 0);
  }
  std::string host = "127.0.0." + std::to_string(2 + ::getpid() % 250);
  auto d = StartEmbedded(
      dir_, {std::string("app.user=") + kAppUser, "postgres.tcp_bind=" + host,
             "tls.cert_file=" + pki + "/server.crt", "tls.key_file=" + pki + "/server.key"});
  ASSERT_TRUE(WaitDaemonReady(*d, dir_, seconds(90))) << d->Log();
  std::string url = Add("tcpapp");
  auto colon = url.find(':', url.find("://") + 3);
  std::string password = url.substr(colon + 1, url.find('@') - colon - 1);
  std::string tcp = "postgresql://tcpapp:" + password + "@" + host + ":5432/tcpapp";
  auto over_tls =
      Psql(tcp + "?sslmode=require", "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
  EXPECT_EQ(over_tls.out, "t\n") << Text(over_tls) << d->Log();
  auto plain = Psql(tcp + "?sslmode=disable", "SELECT 1");
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE(Text(plain).find("pg_hba.conf rejects connection"), std::string::npos) << Text(plain);
  auto super = Psql("postgresql://" + TestUser() + "@" + host + ":5432/postgres?sslmode=require",
                    "SELECT 1");
  EXPECT_NE(Text(super).find("pg_hba.conf rejects connection"), std::string::npos) << Text(super);
  // A key that cannot be read on SIGHUP leaves PostgreSQL's copies as they were, named in the log.
  std::string copied_key = *NewRealFileSystem()->ReadFile(dir_ + "/pgdata/skydb_server.key");
  ASSERT_EQ(::chmod((pki + "/server.key").c_str(), 0), 0);
  ASSERT_TRUE(d->Signal(SIGHUP).ok());
  EXPECT_TRUE(d->WaitLogContains("tls.key_file " + pki + "/server.key (for postgres.tcp_bind)",
                                 std::chrono::milliseconds(30000)))
      << d->Log();
  EXPECT_EQ(*NewRealFileSystem()->ReadFile(dir_ + "/pgdata/skydb_server.key"), copied_key);
  EXPECT_EQ(Psql(tcp + "?sslmode=require", "SELECT 1").out, "1\n");
  // Without a certificate the start is refused before anything runs, naming what is missing.
  EXPECT_EQ(d->StopCleanly(seconds(60)), "");
  CliRun check = RunSkydb({"--set", "postgres.tcp_bind=" + host, "config", "check"});
  EXPECT_NE(check.exit_code, 0);
  EXPECT_NE((check.out + check.err).find("postgres.tcp_bind need tls.cert_file and tls.key_file"),
            std::string::npos)
      << check.out << check.err;
}

}  // namespace
}  // namespace skydb::testing
