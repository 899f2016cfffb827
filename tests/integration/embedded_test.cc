// The embedding API (include/skydb/embedded.h) against a real PostgreSQL 15, linked the way an
// app links it: libskydb.so and the public headers only. Run as root (as CI does), each test
// that starts PostgreSQL forks and becomes SKYDB_TEST_USER first, as an app would run.
#include <grp.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <skydb/embedded.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>

#include "resp_client.h"

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const char* TestUser() {
  const char* user = std::getenv("SKYDB_TEST_USER");
  return user != nullptr && *user != '\0' ? user : "skydbtest";
}

// A fresh directory the test user owns (skydb creates DIR under it).
std::string TempDirFor(const passwd* user) {
  std::string dir = std::filesystem::path(::testing::TempDir() + "/embedded_test.XXXXXX")
                        .lexically_normal()
                        .string();
  if (::mkdtemp(dir.data()) == nullptr) return "";
  if (user != nullptr) (void)::chown(dir.c_str(), user->pw_uid, user->pw_gid);
  return dir;
}

// Runs `body` as the test user: in a forked child when root (a failure there fails the test
// through the exit status; the child is bounded by an alarm), in-process otherwise.
void AsTestUser(const std::function<void(const std::string& dir)>& body) {
  if (::geteuid() != 0) {
    std::string dir = TempDirFor(nullptr);
    body(dir);
    std::filesystem::remove_all(dir);
    return;
  }
  const passwd* user = ::getpwnam(TestUser());
  ASSERT_NE(user, nullptr) << "no user " << TestUser() << " (tools/install-deps.sh makes it)";
  std::string dir = TempDirFor(user);
  ASSERT_FALSE(dir.empty());
  std::fflush(stdout);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(240);
    if (::setgroups(0, nullptr) != 0 || ::setgid(user->pw_gid) != 0 ||
        ::setuid(user->pw_uid) != 0) {
      std::_Exit(3);
    }
    ::setenv("HOME", dir.c_str(), 1);
    body(dir);
    std::fflush(stdout);
    std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status)) << "the test's child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the test failed as " << TestUser() << " (see above)";
}

skydb::EmbeddedOptions Options(const std::string& dir, const std::string& database_url = "") {
  skydb::EmbeddedOptions options;
  options.data_dir = dir;
  options.database_url = database_url;
  return options;
}

std::unique_ptr<skydb::Embedded> StartReady(skydb::EmbeddedOptions options) {
  // A small host: tuning sizes PostgreSQL to it, and several test clusters share the machine.
  options.settings.insert(options.settings.end(), {"host.ram=1GiB", "supervisor.stop_timeout=10s"});
  auto started = skydb::Embedded::Start(std::move(options));
  if (!started.ok()) {
    ADD_FAILURE() << started.error().message;
    return nullptr;
  }
  skydb::Status ready = (*started)->WaitReady(seconds(120));
  if (!ready.ok()) {
    ADD_FAILURE() << ready.error().message;
    return nullptr;
  }
  return std::move(started).value();
}

skydb::testing::RespReply Command(const std::string& socket, std::vector<std::string> args) {
  auto client = skydb::testing::RespClient::Connect(socket, seconds(5));
  if (!client.ok()) {
    ADD_FAILURE() << client.error().message;
    return {};
  }
  auto reply = client->Command(args);
  if (!reply.ok()) {
    ADD_FAILURE() << reply.error().message;
    return {};
  }
  return std::move(reply).value();
}

// One statement on the app's database; "" when it ran, else libpq's error.
std::string Sql(const std::string& url, const std::string& statement) {
  PGconn* conn = ::PQconnectdb(url.c_str());
  std::string error;
  if (::PQstatus(conn) != CONNECTION_OK) {
    error = ::PQerrorMessage(conn);
  } else {
    PGresult* result = ::PQexec(conn, statement.c_str());
    auto status = ::PQresultStatus(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) error = ::PQerrorMessage(conn);
    ::PQclear(result);
  }
  ::PQfinish(conn);
  return error;
}

TEST(EmbeddedTest, ServesTheAppsDatabaseAndTheStoreAndKeepsSessionsAcrossARestart) {
  AsTestUser([](const std::string& tmp) {
    std::string dir = tmp + "/app";
    {
      auto skydb = StartReady(Options(dir));
      ASSERT_NE(skydb, nullptr);
      EXPECT_EQ(skydb->database_url(), "postgresql:///app?host=" + dir + "/run&user=app");
      EXPECT_EQ(skydb->store_socket(), dir + "/run/skydb.sock");
      const std::string* redis = skydb->environment().Find("REDIS_URL");
      ASSERT_NE(redis, nullptr);
      EXPECT_EQ(*redis, "unix://" + dir + "/run/skydb.sock");
      EXPECT_EQ(skydb->config().http.port, 0);
      EXPECT_TRUE(Command(skydb->store_socket(), {"SET", "session:t", "model-v1"}).IsOk());
      // The app's own database, owned by the app's role: it can create its tables.
      EXPECT_EQ(Sql(skydb->database_url(), "CREATE TABLE visits (id int)"), "");
      EXPECT_EQ(Sql(skydb->database_url(), "INSERT INTO visits VALUES (1)"), "");

      // The data directory is locked while it runs: a second Embedded says so.
      auto second = skydb::Embedded::Start(Options(dir));
      ASSERT_TRUE(second.ok()) << second.error().message;
      skydb::Status refused = (*second)->WaitReady(seconds(30));
      ASSERT_FALSE(refused.ok());
      EXPECT_NE(refused.error().message.find("skydb.lock"), std::string::npos)
          << refused.error().message;

      EXPECT_TRUE(skydb->Stop().ok());
      EXPECT_TRUE(skydb->Stop().ok());  // idempotent
      EXPECT_FALSE(std::filesystem::exists(dir + "/run/skydb.sock"));
      EXPECT_NE(Sql(skydb->database_url(), "SELECT 1"), "");  // PostgreSQL is down
    }
    auto again = StartReady(Options(dir));
    ASSERT_NE(again, nullptr);
    auto got = Command(again->store_socket(), {"GET", "session:t"});
    EXPECT_EQ(got.text, "model-v1");
    EXPECT_EQ(Sql(again->database_url(), "SELECT 1 FROM visits WHERE id = 1"), "");
    // The destructor stops it in order.
  });
}

TEST(EmbeddedTest, AnExternalDatabaseCarriesTheStoreAndIsTheAppsDatabaseUrl) {
  AsTestUser([](const std::string& tmp) {
    auto database = StartReady(Options(tmp + "/db"));
    ASSERT_NE(database, nullptr);
    std::string url = database->database_url();
    auto skydb = StartReady(Options(tmp + "/app", url));
    ASSERT_NE(skydb, nullptr);
    EXPECT_EQ(skydb->database_url(), url);
    EXPECT_TRUE(Command(skydb->store_socket(), {"SET", "k", "v"}).IsOk());
    EXPECT_EQ(Command(skydb->store_socket(), {"GET", "k"}).text, "v");
    EXPECT_TRUE(skydb->Stop().ok());
    EXPECT_TRUE(database->Stop().ok());
  });
}

TEST(EmbeddedTest, WaitReadyTellsWhySkydbStopped) {
  AsTestUser([](const std::string& tmp) {
    std::string file = tmp + "/not-a-directory";
    std::ofstream(file) << "x";
    auto skydb = skydb::Embedded::Start(Options(file));
    ASSERT_TRUE(skydb.ok()) << skydb.error().message;
    skydb::Status ready = (*skydb)->WaitReady(seconds(30));
    ASSERT_FALSE(ready.ok());
    EXPECT_EQ(ready.error().code, skydb::ErrorCode::kUnavailable);
    EXPECT_NE(ready.error().message.find("stopped before it was ready: "), std::string::npos)
        << ready.error().message;
    EXPECT_NE(ready.error().message.find(file), std::string::npos) << ready.error().message;
    EXPECT_FALSE((*skydb)->Stop().ok());
  });
}

TEST(EmbeddedTest, ALogSinkReceivesSkydbsLines) {
  AsTestUser([](const std::string& tmp) {
    std::vector<std::string> lines;
    std::mutex mu;
    skydb::EmbeddedOptions options = Options(tmp + "/f");
    options.settings = {"store.kind=memory"};
    options.log_sink = [&](skydb::LogLevel, std::string_view line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.emplace_back(line);
    };
    auto skydb = skydb::Embedded::Start(std::move(options));
    ASSERT_TRUE(skydb.ok()) << skydb.error().message;
    ASSERT_TRUE((*skydb)->WaitReady(seconds(30)).ok());
    EXPECT_TRUE((*skydb)->environment().Find("DATABASE_URL") == nullptr);
    EXPECT_TRUE((*skydb)->Stop().ok());
    std::lock_guard<std::mutex> lock(mu);
    bool ready_line = false;
    for (const auto& line : lines) ready_line |= line.find("skydb ready") != std::string::npos;
    EXPECT_TRUE(ready_line);
  });
}

TEST(EmbeddedTest, RootIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  auto skydb = skydb::Embedded::Start(Options(::testing::TempDir() + "/never"));
  ASSERT_FALSE(skydb.ok());
  EXPECT_EQ(skydb.error().code, skydb::ErrorCode::kPermission);
  EXPECT_NE(skydb.error().message.find("PostgreSQL will not run as root"), std::string::npos)
      << skydb.error().message;
  EXPECT_FALSE(std::filesystem::exists(::testing::TempDir() + "/never"));
}

}  // namespace
