// ACL users served (issue 45 part 2): AUTH as a user, what a user walled into a prefix may and
// may not do, the denials' counts and log, changes that reach connected clients, the storage
// shared by two servers, and the ACL file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "commands_fixture.h"
#include "resp/acl_users.h"
#include "skydb/mutex.h"

namespace skydb::resp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kKeyDenied[] =
    "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n";
constexpr char kChannelDenied[] =
    "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n";

// Rows in memory, as PostgreSQL would hold them for every daemon on one database.
class FakeAclStorage final : public AclStorage {
 public:
  Status Update(const std::string& name, const Edit& edit) override {
    MutexLock lock(mu_);
    if (fail_) return Error::Unavailable("the database is down");
    std::optional<std::string> current;
    if (auto it = rows_.find(name); it != rows_.end()) current = it->second;
    SKYDB_ASSIGN_OR_RETURN(auto next, edit(current));
    if (next) {
      rows_[name] = *next;
    } else {
      rows_.erase(name);
    }
    ++generation_;
    return Ok();
  }
  Status ReplaceAll(const std::vector<Row>& rows) override {
    MutexLock lock(mu_);
    rows_.clear();
    for (const auto& row : rows) rows_[row.name] = row.rules;
    ++generation_;
    return Ok();
  }
  Result<std::vector<Row>> Load() override {
    MutexLock lock(mu_);
    std::vector<Row> rows;
    for (const auto& [name, rules] : rows_) rows.push_back({name, rules});
    return rows;
  }
  Result<int64_t> Generation() override {
    MutexLock lock(mu_);
    if (fail_) return Error::Unavailable("the database is down");
    return generation_;
  }
  std::map<std::string, std::string> rows() {
    MutexLock lock(mu_);
    return rows_;
  }
  void set_fail(bool fail) {
    MutexLock lock(mu_);
    fail_ = fail;
  }

 private:
  Mutex mu_;
  std::map<std::string, std::string> rows_ GUARDED_BY(mu_);
  int64_t generation_ GUARDED_BY(mu_) = 0;
  bool fail_ GUARDED_BY(mu_) = false;
};

class AclServingTest : public CommandsTest {
 protected:
  AclServingTest() : CommandsTest("adminpass") {
    admin_.id = 1;
    EXPECT_EQ(RunAs(admin_, {"AUTH", "adminpass"}), kOk);
    EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "app1", "on", ">pw1", "~app1:*", "&app1:*", "+@all",
                             "-@dangerous"}),
              kOk);
    EXPECT_EQ(Run({"AUTH", "app1", "pw1"}), kOk);
  }
  ClientState admin_;
};

TEST_F(AclServingTest, AnAppUserReachesOnlyItsOwnKeys) {
  EXPECT_EQ(Run({"ACL", "WHOAMI"}), "$4\r\napp1\r\n");
  EXPECT_EQ(Run({"SET", "app1:s", "v"}), kOk);
  EXPECT_EQ(Run({"GET", "app1:s"}), "$1\r\nv\r\n");
  EXPECT_EQ(RunAs(admin_, {"SET", "app2:s", "secret"}), kOk);
  EXPECT_EQ(Run({"GET", "app2:s"}), kKeyDenied);
  EXPECT_EQ(Run({"SET", "app2:s", "mine"}), kKeyDenied);
  EXPECT_EQ(Run({"MGET", "app1:s", "app2:s"}), kKeyDenied);
  EXPECT_EQ(Run({"DEL", "app2:s"}), kKeyDenied);
  EXPECT_EQ(Run({"RENAME", "app1:s", "app2:s"}), kKeyDenied);
  EXPECT_EQ(Run({"HSET", "app2:h", "f", "v"}), kKeyDenied);
  EXPECT_EQ(Run({"SUNIONSTORE", "app1:u", "app2:s"}), kKeyDenied);
  EXPECT_EQ(RunAs(admin_, {"GET", "app2:s"}), "$6\r\nsecret\r\n");  // untouched
}

TEST_F(AclServingTest, KeysAndScanShowOnlyItsKeysAndRefuseWiderPatterns) {
  EXPECT_EQ(Run({"SET", "app1:a", "1"}), kOk);
  EXPECT_EQ(RunAs(admin_, {"SET", "app2:b", "2"}), kOk);
  EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "app1", "+keys"}), kOk);
  EXPECT_EQ(Run({"KEYS", "app1:*"}), "*1\r\n$6\r\napp1:a\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}), kKeyDenied);
  EXPECT_EQ(Run({"KEYS", "app*"}), kKeyDenied);
  EXPECT_EQ(Run({"SCAN", "0", "MATCH", "app1:*", "COUNT", "100"}),
            "*2\r\n$1\r\n0\r\n*1\r\n$6\r\napp1:a\r\n");
  EXPECT_EQ(Run({"SCAN", "0"}), kKeyDenied);
  EXPECT_EQ(Run({"SCAN", "0", "MATCH", "*"}), kKeyDenied);
}

TEST_F(AclServingTest, ChannelsOutsideItsPrefixAreRefused) {
  EXPECT_EQ(Run({"PUBLISH", "app1:topic", "hi"}), ":0\r\n");
  EXPECT_EQ(Run({"PUBLISH", "app2:topic", "hi"}), kChannelDenied);
  EXPECT_EQ(Run({"SUBSCRIBE", "app2:topic"}), kChannelDenied);
  EXPECT_EQ(Run({"PSUBSCRIBE", "app2:*"}), kChannelDenied);
  EXPECT_EQ(Run({"PSUBSCRIBE", "app*"}), kChannelDenied);  // a pattern must be one of its own
  // Allowed (this test's client has no connection to subscribe with: the socket tests do).
  EXPECT_THAT(Run({"PSUBSCRIBE", "app1:*"}), Not(HasSubstr("NOPERM")));
  EXPECT_THAT(Run({"SUBSCRIBE", "app1:topic"}), Not(HasSubstr("NOPERM")));
}

TEST_F(AclServingTest, DangerousCommandsAreRefusedByName) {
  EXPECT_EQ(Run({"FLUSHALL"}),
            "-NOPERM this user has no permissions to run the 'flushall' command\r\n");
  EXPECT_EQ(Run({"CONFIG", "GET", "maxmemory"}),
            "-NOPERM this user has no permissions to run the 'config' command\r\n");
  EXPECT_EQ(Run({"ACL", "LIST"}),
            "-NOPERM this user has no permissions to run the 'acl' command\r\n");
  // CLIENT is allowed, but not the subcommands that reach other users' connections.
  EXPECT_EQ(Run({"CLIENT", "SETNAME", "worker"}), kOk);
  EXPECT_EQ(Run({"CLIENT", "LIST"}),
            "-NOPERM this user has no permissions to run the 'client|list' command\r\n");
  EXPECT_EQ(Run({"CLIENT", "KILL", "ID", "1"}),
            "-NOPERM this user has no permissions to run the 'client|kill' command\r\n");
  // A user with FLUSHALL but not every key may still not delete every key.
  EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "app1", "+flushall"}), kOk);
  EXPECT_EQ(Run({"FLUSHALL"}), kKeyDenied);
}

TEST_F(AclServingTest, ScriptsAndTransactionsAreCheckedToo) {
  EXPECT_EQ(RunAs(admin_, {"SET", "app2:s", "secret"}), kOk);
  EXPECT_EQ(Run({"EVAL", "return redis.call('GET', KEYS[1])", "1", "app2:s"}), kKeyDenied);
  std::string inside = Run({"EVAL", "return redis.call('GET', 'app2:s')", "1", "app1:x"});
  EXPECT_THAT(inside, HasSubstr("The user executing the script can't access at least one of the "
                                "keys mentioned in the command arguments"));
  EXPECT_THAT(inside, Not(HasSubstr("secret")));
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"SET", "app1:x", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"SET", "app2:s", "stolen"}), kKeyDenied);
  EXPECT_THAT(Run({"EXEC"}), StartsWith("-EXECABORT"));
  EXPECT_EQ(Run({"GET", "app1:x"}), kNull);
  // Allowed when queued, refused at EXEC: the right was taken away in between.
  EXPECT_EQ(Run({"MULTI"}), kOk);
  EXPECT_EQ(Run({"SET", "app1:y", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "app1", "resetkeys", "~app1:x"}), kOk);
  EXPECT_THAT(Run({"EXEC"}), HasSubstr("NOPERM ACLs rules changed between the moment"));
}

TEST_F(AclServingTest, DenialsAreCountedAndLoggedWithoutTheKey) {
  EXPECT_EQ(Run({"GET", "app2:sess:token123"}), kKeyDenied);
  EXPECT_EQ(Run({"GET", "app2:sess:token123"}), kKeyDenied);
  EXPECT_EQ(Run({"PUBLISH", "app2:t", "x"}), kChannelDenied);
  EXPECT_EQ(Run({"CONFIG", "GET", "x"}),
            "-NOPERM this user has no permissions to run the 'config' command\r\n");
  EXPECT_EQ(Run({"AUTH", "app1", "wrong"}),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  std::string info = RunAs(admin_, {"INFO", "stats"});
  EXPECT_THAT(info, HasSubstr("acl_access_denied_cmd:1\r\n"));
  EXPECT_THAT(info, HasSubstr("acl_access_denied_key:2\r\n"));
  EXPECT_THAT(info, HasSubstr("acl_access_denied_channel:1\r\n"));
  std::string log = RunAs(admin_, {"ACL", "LOG"});
  EXPECT_THAT(log, Not(HasSubstr("token123"))) << "session keys are credentials";
  EXPECT_THAT(log, HasSubstr("$3\r\nkey\r\n$7\r\ncontext\r\n$8\r\ntoplevel\r\n$6\r\nobject\r\n"
                             "$3\r\nget\r\n$8\r\nusername\r\n$4\r\napp1\r\n"));
  EXPECT_THAT(log, HasSubstr("$5\r\ncount\r\n:2\r\n$6\r\nreason\r\n$3\r\nkey\r\n"));
  EXPECT_THAT(log, HasSubstr("$6\r\nobject\r\n$6\r\napp2:t\r\n"));
  EXPECT_THAT(log, HasSubstr("$4\r\nauth\r\n"));
  EXPECT_THAT(log, StartsWith("*4\r\n"));
  EXPECT_EQ(RunAs(admin_, {"ACL", "LOG", "RESET"}), kOk);
  EXPECT_EQ(RunAs(admin_, {"ACL", "LOG"}), "*0\r\n");
}

TEST_F(AclServingTest, ARotatedPasswordStopsTheOldOneAtOnce) {
  EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "app1", "resetpass", ">pw2"}), kOk);
  ClientState other;
  other.id = 9;
  EXPECT_THAT(RunAs(other, {"AUTH", "app1", "pw1"}), StartsWith("-WRONGPASS"));
  EXPECT_EQ(RunAs(other, {"AUTH", "app1", "pw2"}), kOk);
  EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "app1", "off"}), kOk);
  ClientState third;
  EXPECT_THAT(RunAs(third, {"AUTH", "app1", "pw2"}), StartsWith("-WRONGPASS"));
}

TEST_F(AclServingTest, ADeletedUsersConnectionIsClosedAtItsNextCommand) {
  EXPECT_EQ(RunAs(admin_, {"ACL", "DELUSER", "app1", "nosuch"}), ":1\r\n");
  EXPECT_THAT(Run({"GET", "app1:s"}), StartsWith("-ERR the user this connection"));
  EXPECT_TRUE(client_.close_after_reply);
  EXPECT_EQ(RunAs(admin_, {"ACL", "DELUSER", "default"}),
            "-ERR The 'default' user cannot be removed\r\n");
  // A client deleting its own user is closed once it has the reply, as in Redis.
  ClientState self;
  EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "ops", "on", ">o", "~*", "&*", "+@all"}), kOk);
  EXPECT_EQ(RunAs(self, {"AUTH", "ops", "o"}), kOk);
  EXPECT_EQ(RunAs(self, {"ACL", "DELUSER", "ops"}), ":1\r\n");
  EXPECT_TRUE(self.close_after_reply);
}

TEST_F(AclServingTest, SubcommandArgumentErrorsAreRedissOwn) {
  EXPECT_EQ(RunAs(admin_, {"ACL", "HELP", "x"}),
            "-ERR wrong number of arguments for 'acl|help' command\r\n");
  EXPECT_EQ(RunAs(admin_, {"ACL", "CAT", "a", "b"}),
            "-ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.\r\n");
  EXPECT_EQ(RunAs(admin_, {"ACL", "NOSUCH"}),
            "-ERR unknown subcommand 'NOSUCH'. Try ACL HELP.\r\n");
  EXPECT_EQ(RunAs(admin_, {"ACL", "GENPASS", "5000"}),
            "-ERR ACL GENPASS argument must be the number of bits for the output password, a "
            "positive number up to 4096\r\n");
}

TEST_F(AclServingTest, RulesAreListedAndShownAsRedisShowsThem) {
  std::string hash = acl::PasswordHash("pw1");
  EXPECT_EQ(RunAs(admin_, {"ACL", "USERS"}), "*2\r\n$4\r\napp1\r\n$7\r\ndefault\r\n");
  std::string list = RunAs(admin_, {"ACL", "LIST"});
  EXPECT_THAT(list, HasSubstr("user app1 on #" + hash +
                              " ~app1:* resetchannels &app1:* +@all -@dangerous"));
  EXPECT_THAT(list, HasSubstr("user default on #" + acl::PasswordHash("adminpass") +
                              " ~* resetchannels &* +@all"));
  EXPECT_THAT(list, Not(HasSubstr("pw1")));
  std::string user = RunAs(admin_, {"ACL", "GETUSER", "app1"});
  EXPECT_THAT(user, HasSubstr("$5\r\nflags\r\n*1\r\n$2\r\non\r\n"));
  EXPECT_THAT(user, HasSubstr("$4\r\nkeys\r\n$7\r\n~app1:*\r\n"));
  EXPECT_THAT(user, HasSubstr("$8\r\ncommands\r\n$17\r\n+@all -@dangerous\r\n"));
  EXPECT_EQ(RunAs(admin_, {"ACL", "GETUSER", "nosuch"}), kNull);
  EXPECT_EQ(RunAs(admin_, {"ACL", "DRYRUN", "app1", "get", "app1:x"}), kOk);
  EXPECT_EQ(RunAs(admin_, {"ACL", "DRYRUN", "app1", "get", "app2:x"}),
            "$72\r\nThis user has no permissions to access one of the keys used as arguments\r\n");
  EXPECT_THAT(RunAs(admin_, {"ACL", "SETUSER", "bad", "~a b"}), HasSubstr("spaces"));
  EXPECT_EQ(RunAs(admin_, {"ACL", "SETUSER", "bad", "+nosuchcommand"}),
            "-ERR Error in ACL SETUSER modifier '+nosuchcommand': Unknown command or category "
            "name in ACL\r\n");
  EXPECT_EQ(RunAs(admin_, {"ACL", "GENPASS", "32"}).size(),
            std::string("$8\r\n12345678\r\n").size());
  EXPECT_EQ(RunAs(admin_, {"ACL", "SAVE"}).substr(0, 60),
            "-ERR This Redis instance is not configured to use an ACL fil");
}

TEST(AclDefaultUser, WithoutAPasswordEveryClientIsTheDefaultUser) {
  testing::FakeClock clock;
  auto store = NewMemoryStore(MemoryTierOptions{}, clock);
  ServerCounters counters;
  CommandExecutor executor(ExecutorConfig{}, *store, clock, counters);
  ClientState client;
  auto run = [&](std::vector<std::string> args) {
    std::string out;
    executor.Execute(client, std::move(args), [&](std::string r) { out = std::move(r); });
    return out;
  };
  EXPECT_EQ(run({"ACL", "WHOAMI"}), "$7\r\ndefault\r\n");
  EXPECT_EQ(run({"ACL", "SETUSER", "reader", "on", "nopass", "~*", "+get"}), kOk);
  EXPECT_EQ(run({"AUTH", "reader", "anything"}), kOk);
  EXPECT_EQ(run({"GET", "k"}), kNull);
  EXPECT_EQ(run({"SET", "k", "v"}),
            "-NOPERM this user has no permissions to run the 'set' command\r\n");
  // A user turned off keeps its open connections (as in Redis) but cannot log in again.
  EXPECT_EQ(run({"AUTH", "default", "x"}), kOk);
  EXPECT_EQ(run({"ACL", "SETUSER", "default", "off"}), kOk);
  EXPECT_EQ(run({"GET", "k"}), kNull);
  ClientState fresh;
  std::string out;
  executor.Execute(fresh, {"GET", "k"}, [&](std::string r) { out = std::move(r); });
  EXPECT_EQ(out, "-NOAUTH Authentication required.\r\n");
}

// Two servers on one storage, as two daemons on one database.
class SharedAclTest : public ::testing::Test {
 protected:
  struct Server {
    std::unique_ptr<SessionStore> store;
    ServerCounters counters;
    std::unique_ptr<CommandExecutor> executor;
  };
  std::unique_ptr<Server> Open() {
    auto s = std::make_unique<Server>();
    s->store = NewMemoryStore(MemoryTierOptions{}, clock_);
    ExecutorConfig config;
    config.requirepass = "root";
    config.acl_storage = &storage_;
    s->executor = std::make_unique<CommandExecutor>(config, *s->store, clock_, s->counters);
    EXPECT_TRUE(s->executor->acl().Start().ok());
    return s;
  }
  static std::string Run(Server& s, ClientState& client, std::vector<std::string> args) {
    auto promise = std::make_shared<std::promise<std::string>>();
    auto future = promise->get_future();
    s.executor->Execute(client, std::move(args),
                        [promise](std::string r) { promise->set_value(std::move(r)); });
    if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return "timeout";
    return future.get();
  }
  // AUTH on `s` until it answers `want` (another server's change arrives within its poll).
  static bool AuthBecomes(Server& s, const std::string& user, const std::string& pass,
                          const std::string& want) {
    for (int i = 0; i < 200; ++i) {
      ClientState client;
      if (Run(s, client, {"AUTH", user, pass}) == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  testing::FakeClock clock_;
  FakeAclStorage storage_;
};

TEST_F(SharedAclTest, AUserMadeOnOneServerIsSeenByTheOtherAndSurvivesARestart) {
  auto a = Open();
  auto b = Open();
  ClientState admin;
  ASSERT_EQ(Run(*a, admin, {"AUTH", "root"}), kOk);
  ASSERT_EQ(Run(*a, admin, {"ACL", "SETUSER", "shop", "on", ">s3cret", "~shop:*", "+@all"}), kOk);
  EXPECT_THAT(storage_.rows().at("shop"), StartsWith("on #" + acl::PasswordHash("s3cret")));
  EXPECT_THAT(storage_.rows().at("shop"), Not(HasSubstr("s3cret ")));
  EXPECT_EQ(storage_.rows().count("default"), 0U) << "default is each daemon's own";
  EXPECT_TRUE(AuthBecomes(*b, "shop", "s3cret", kOk));
  // A rotation on b stops the old password on a within its poll.
  ClientState admin_b;
  ASSERT_EQ(Run(*b, admin_b, {"AUTH", "root"}), kOk);
  ASSERT_EQ(Run(*b, admin_b, {"ACL", "SETUSER", "shop", "resetpass", ">n3w"}), kOk);
  EXPECT_TRUE(AuthBecomes(*a, "shop", "s3cret",
                          "-WRONGPASS invalid username-password pair or user is disabled.\r\n"));
  EXPECT_TRUE(AuthBecomes(*a, "shop", "n3w", kOk));
  b.reset();
  auto restarted = Open();
  ClientState client;
  EXPECT_EQ(Run(*restarted, client, {"AUTH", "shop", "n3w"}), kOk);
  EXPECT_EQ(Run(*restarted, client, {"GET", "other:x"}), kKeyDenied);
}

TEST_F(SharedAclTest, AChangeTheDatabaseRefusesIsNotAcknowledged) {
  auto a = Open();
  ClientState admin;
  ASSERT_EQ(Run(*a, admin, {"AUTH", "root"}), kOk);
  storage_.set_fail(true);
  EXPECT_THAT(Run(*a, admin, {"ACL", "SETUSER", "shop", "on", ">x"}),
              StartsWith("-ERR the change was not stored: the database is down"));
  ClientState client;
  EXPECT_THAT(Run(*a, client, {"AUTH", "shop", "x"}), StartsWith("-WRONGPASS"));
}

TEST_F(SharedAclTest, ADatabaseDownAtStartDelaysTheUsersNotTheStart) {
  {
    auto a = Open();
    ClientState admin;
    ASSERT_EQ(Run(*a, admin, {"AUTH", "root"}), kOk);
    ASSERT_EQ(Run(*a, admin, {"ACL", "SETUSER", "shop", "on", ">x", "~shop:*", "+@all"}), kOk);
  }
  storage_.set_fail(true);
  auto b = Open();  // starts, with the default user only
  ClientState client;
  EXPECT_EQ(Run(*b, client, {"AUTH", "root"}), kOk);
  EXPECT_TRUE(AuthBecomes(*b, "shop", "x",
                          "-WRONGPASS invalid username-password pair or user is disabled.\r\n"));
  storage_.set_fail(false);
  EXPECT_TRUE(AuthBecomes(*b, "shop", "x", kOk));
}

// A server whose resp.aclfile is /etc/skydb/users.acl on a fake file system.
class AclFileTest : public ::testing::Test {
 protected:
  AclFileTest() {
    files_.AddDir("/etc/skydb");
    store_ = NewMemoryStore(MemoryTierOptions{}, clock_);
  }
  CommandExecutor& Executor() {
    ExecutorConfig config;
    config.acl_file = "/etc/skydb/users.acl";
    config.acl_files = &files_;
    executor_ = std::make_unique<CommandExecutor>(config, *store_, clock_, counters_);
    return *executor_;
  }
  std::string Run(std::vector<std::string> args) {
    std::string out;
    executor_->Execute(client_, std::move(args), [&](std::string r) { out = std::move(r); });
    return out;
  }
  testing::FakeClock clock_;
  testing::FakeFileSystem files_;
  std::unique_ptr<SessionStore> store_;
  ServerCounters counters_;
  std::unique_ptr<CommandExecutor> executor_;
  ClientState client_;
};

TEST_F(AclFileTest, SaveWritesHashesAndLoadReplacesEveryUser) {
  ASSERT_TRUE(Executor().acl().Start().ok());  // no file yet: no users but default
  ASSERT_EQ(Run({"ACL", "SETUSER", "shop", "on", ">pw", "~shop:*", "+get"}), kOk);
  ASSERT_EQ(Run({"ACL", "SAVE"}), kOk);
  std::string saved = *files_.ReadFile("/etc/skydb/users.acl");
  EXPECT_THAT(saved, HasSubstr("user shop on #" + acl::PasswordHash("pw") +
                               " ~shop:* resetchannels -@all +get\n"));
  EXPECT_THAT(saved, HasSubstr("user default on nopass ~* resetchannels &* +@all\n"));
  EXPECT_THAT(saved, Not(HasSubstr(">pw")));
  files_.AddFile("/etc/skydb/users.acl", "user blog on >b ~blog:* +@read\n");
  ASSERT_EQ(Run({"ACL", "LOAD"}), kOk);
  EXPECT_EQ(Run({"ACL", "USERS"}), "*2\r\n$4\r\nblog\r\n$7\r\ndefault\r\n");
  files_.AddFile("/etc/skydb/users.acl", "user blog on\nuser x +nosuch\n");
  EXPECT_EQ(Run({"ACL", "LOAD"}),
            "-ERR /etc/skydb/users.acl:2: Error in ACL SETUSER modifier '+nosuch': Unknown "
            "command or category name in ACL; fix the line, or ACL SAVE to write the file "
            "again\r\n");
  EXPECT_EQ(Run({"ACL", "USERS"}), "*2\r\n$4\r\nblog\r\n$7\r\ndefault\r\n") << "unchanged";
}

TEST_F(AclFileTest, ABadFileStopsTheStartWithItsLine) {
  files_.AddFile("/etc/skydb/users.acl", "\nuser ok on\nusr typo\n");
  Status started = Executor().acl().Start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().message,
            "/etc/skydb/users.acl:3: a line must read 'user NAME rules...'; fix the line, or ACL "
            "SAVE to write the file again");
}

}  // namespace
}  // namespace skydb::resp
