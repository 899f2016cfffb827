// The daemon's one lifecycle over fakes: a scripted database source, a client service that
// fails or blocks on demand, a fake lock and a recording systemd notifier. The start-up races
// that were once tested only end to end (the postmaster lost between ready and the store's
// open; a stop during the open) are millisecond tests here.
#include "daemon/lifecycle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "skydb/notify.h"
#include "support/fakes.h"

namespace skydb::daemon {
namespace {

using std::chrono::milliseconds;

class RecordingNotifier final : public Notifier {
 public:
  void Send(const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu);
    sent.push_back(message);
  }
  std::optional<std::chrono::microseconds> WatchdogTimeout() const override { return std::nullopt; }
  uint64_t MonotonicUsec() const override { return 1; }
  int Count(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (const auto& m : sent) n += m.find(text) != std::string::npos ? 1 : 0;
    return n;
  }
  std::mutex mu;
  std::vector<std::string> sent;
};

class LockOnlyHost final : public HostOps {
 public:
  pid_t SelfPid() const override { return 4242; }
  Status Chown(const std::string&, uid_t, gid_t) override { return Ok(); }
  Result<std::shared_ptr<void>> LockExclusive(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    if (held.count(path) != 0) {
      return Error::Conflict("another skydb (pid " + std::to_string(held[path]) +
                             ") is already running on this data directory");
    }
    held[path] = SelfPid();
    return std::shared_ptr<void>(new int(0), [this, path](void* p) {
      delete static_cast<int*>(p);
      std::lock_guard<std::mutex> release(mu);
      held.erase(path);
    });
  }
  bool ProcessExists(pid_t) override { return false; }
  Status Kill(pid_t, int) override { return Ok(); }
  long ClockTicksPerSecond() const override { return 100; }
  uid_t EffectiveUid() const override { return euid; }
  Status DropPrivileges(const RunAs& user, const std::vector<gid_t>&) override {
    dropped_to.push_back(user.name);
    euid = user.uid;
    return Ok();
  }
  uid_t euid = 1000;
  std::vector<std::string> dropped_to;
  std::mutex mu;
  std::map<std::string, pid_t> held;
};

// A database that becomes ready `readies` times (a restart between each) and then waits for
// the stop.
class ScriptedSource final : public DatabaseSource {
 public:
  std::string mode() const override { return "embedded"; }
  Status Prepare() override { return Ok(); }
  Status Run(const std::function<void(const DatabaseReady&)>& ready) override {
    ran = true;
    for (int i = 0; i < readies && !Stopped(); ++i) {
      ready({"host=/fake", "fake cluster", Pools{}, "PostgreSQL fake", i, app});
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return stop; });
    return Ok();
  }
  void RequestStop() override {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
  }
  void Reload(const Config& fresh) override {
    reloaded.push_back(fresh.log_level);
    reloaded_backup = fresh.backup;
  }
  bool Answers() override { return answers; }
  bool Stopped() {
    std::lock_guard<std::mutex> lock(mu);
    return stop;
  }

  int readies = 1;
  AppDatabaseAddress app;  // what the ready signal says about the app's database
  std::atomic<bool> answers{true};
  std::atomic<bool> ran{false};
  std::vector<std::string> reloaded;
  BackupConfig reloaded_backup;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
};

class ScriptedClients final : public ClientService {
 public:
  Status Open(const std::string&, const std::string&, const Pools&) override {
    std::unique_lock<std::mutex> lock(mu);
    ++opens;
    events.push_back("open");
    if (block_open) cv.wait(lock, [&] { return stopped_; });
    if (stopped_) return Error::Unavailable("skydb is stopping");
    if (fail_opens > 0) {
      --fail_opens;
      return Error::Unavailable("connection refused");
    }
    open_ = true;
    return Ok();
  }
  void Stop(milliseconds, milliseconds) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!stopped_) events.push_back("stop");
      stopped_ = true;
      open_ = false;
    }
    cv.notify_all();
  }
  bool stopped() const override {
    std::lock_guard<std::mutex> lock(mu);
    return stopped_;
  }
  std::string Describe() const override { return "fake store"; }
  std::string SocketPath() const override { return "/fake/run/skydb.sock"; }
  std::optional<StoreStats> StoreStatsNow() const override {
    std::lock_guard<std::mutex> lock(mu);
    if (!open_) return std::nullopt;
    return StoreStats{};
  }
  std::optional<RespServerStats> RespStatsNow() const override { return std::nullopt; }
  std::string StoreDescription() const override { return "fake"; }

  int fail_opens = 0;
  bool block_open = false;
  std::atomic<int> opens{0};
  std::vector<std::string> events;
  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopped_ = false;
  bool open_ = false;
};

class LifecycleTest : public ::testing::Test {
 protected:
  LifecycleTest() {
    env_.fs = &fs_;
    env_.clock = &clock_;
    env_.host = &host_;
    env_.notifier = &notifier_;
    fs_.AddDir("/srv", 0755);
    config_.data_dir = "/srv/app";
    config_.http.port = 0;  // no endpoints: nothing but the lifecycle under test
  }

  // Starts a lifecycle on its own thread; its exit status arrives in the future.
  std::future<int> Start(std::function<void(const ReadyInfo&)> on_ready = nullptr) {
    auto source = std::make_unique<ScriptedSource>();
    auto clients = std::make_unique<ScriptedClients>();
    source->readies = readies_;
    source->app = app_;
    source->answers = answers_;
    clients->fail_opens = fail_opens_;
    clients->block_open = block_open_;
    source_ = source.get();
    clients_ = clients.get();
    lifecycle_ = std::make_unique<Lifecycle>(env_, LifecycleOptions{config_, std::move(on_ready)},
                                             std::move(source), std::move(clients));
    return std::async(std::launch::async, [this] { return lifecycle_->Run(); });
  }
  // Starts a lifecycle (its exit status arrives in `run`) and waits for its on_ready.
  std::optional<ReadyInfo> StartUntilReady(std::future<int>& run) {
    auto told = std::make_shared<std::promise<ReadyInfo>>();
    run = Start([told](const ReadyInfo& info) { told->set_value(info); });
    auto future = told->get_future();
    if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return std::nullopt;
    return future.get();
  }
  bool WaitFor(const std::function<bool()>& condition) {
    for (int i = 0; i < 1000 && !condition(); ++i) std::this_thread::sleep_for(milliseconds(5));
    return condition();
  }

  testing::FakeFileSystem fs_;
  testing::FakeClock clock_;
  LockOnlyHost host_;
  RecordingNotifier notifier_;
  Env env_;
  Config config_;
  int readies_ = 1;
  AppDatabaseAddress app_;
  bool answers_ = true;
  int fail_opens_ = 0;
  bool block_open_ = false;
  ScriptedSource* source_ = nullptr;
  ScriptedClients* clients_ = nullptr;
  std::unique_ptr<Lifecycle> lifecycle_;
};

TEST_F(LifecycleTest, ReadyOpensTheStoreThenReadyIsSentAndTheStopIsOrdered) {
  std::future<int> run;
  std::optional<ReadyInfo> info = StartUntilReady(run);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->store_socket, "/fake/run/skydb.sock");
  EXPECT_EQ(notifier_.Count("READY=1"), 1);
  EXPECT_TRUE(fs_.IsDirectory("/srv/app/run"));
  lifecycle_->RequestStop();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(run.get(), 0);
  EXPECT_EQ(notifier_.Count("STOPPING=1"), 1);
  // The listener and the store stop before the database is told to.
  std::lock_guard<std::mutex> lock(clients_->mu);
  EXPECT_EQ(clients_->events, (std::vector<std::string>{"open", "stop"}));
}

// DATABASE_URL is what the database source said at ready, not what the configuration would
// make of the data dir: the published files and the ready info carry the source's socket dir.
TEST_F(LifecycleTest, TheAppsDatabaseComesFromTheReadySignal) {
  app_ = {"", "/elsewhere/sockets", "shop", "shop_web"};
  std::future<int> run;
  std::optional<ReadyInfo> info = StartUntilReady(run);
  ASSERT_TRUE(info.has_value());
  const std::string url = "postgresql:///shop?host=/elsewhere/sockets&user=shop_web";
  ASSERT_NE(info->environment.Find("DATABASE_URL"), nullptr);
  EXPECT_EQ(*info->environment.Find("DATABASE_URL"), url);
  EXPECT_EQ(*info->environment.Find("SKY_LIVE_STORE_PATH"), "/fake/run/skydb.sock");
  auto json = fs_.ReadFile("/srv/app/run/app.json");
  ASSERT_TRUE(json.ok()) << json.error().message;
  EXPECT_NE(json->find("\"DATABASE_URL\":\"" + url + "\""), std::string::npos) << *json;
  auto systemd = fs_.ReadFile("/srv/app/run/app.env");
  ASSERT_TRUE(systemd.ok());
  EXPECT_NE(systemd->find("PGHOST=\"/elsewhere/sockets\""), std::string::npos) << *systemd;
  lifecycle_->RequestStop();
  EXPECT_EQ(run.get(), 0);
}

TEST_F(LifecycleTest, ASourceWithoutADatabaseGivesTheAppNoDatabaseUrl) {
  std::future<int> run;
  std::optional<ReadyInfo> info = StartUntilReady(run);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->environment.Find("DATABASE_URL"), nullptr);
  EXPECT_NE(info->environment.Find("REDIS_URL"), nullptr);
  lifecycle_->RequestStop();
  EXPECT_EQ(run.get(), 0);
}

TEST_F(LifecycleTest, AStoreThatCannotOpenWhilePostgresIsDownOpensAtTheNextReady) {
  readies_ = 2;  // the postmaster died between ready and the open; the supervisor restarts it
  answers_ = false;
  fail_opens_ = 1;
  auto run = Start();
  ASSERT_TRUE(WaitFor([&] { return notifier_.Count("READY=1") == 1; }));
  EXPECT_EQ(clients_->opens, 2);
  lifecycle_->RequestStop();
  EXPECT_EQ(run.get(), 0);
}

TEST_F(LifecycleTest, AStoreThatCannotOpenWhileTheDatabaseAnswersFailsTheStart) {
  fail_opens_ = 1;
  auto run = Start();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(run.get(), 1);
  EXPECT_EQ(notifier_.Count("READY=1"), 0);
  EXPECT_TRUE(source_->Stopped());
}

TEST_F(LifecycleTest, AStopDuringTheStoresOpenIsARequestedStop) {
  block_open_ = true;
  auto run = Start();
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(clients_->mu);
    return clients_->opens == 1;
  }));
  lifecycle_->RequestStop();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(run.get(), 0);
  EXPECT_EQ(notifier_.Count("READY=1"), 0);
}

TEST_F(LifecycleTest, ReadyAgainAfterARestartNeitherReopensNorAnnouncesAgain) {
  readies_ = 3;
  auto run = Start();
  ASSERT_TRUE(WaitFor([&] { return notifier_.Count("READY=1") == 1; }));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(clients_->opens, 1);
  EXPECT_EQ(notifier_.Count("READY=1"), 1);
  lifecycle_->RequestStop();
  EXPECT_EQ(run.get(), 0);
}

TEST_F(LifecycleTest, ASecondDaemonOnTheDataDirIsRefusedNamingTheHolder) {
  host_.held["/srv/app/skydb.lock"] = 777;
  auto run = Start();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(run.get(), 1);
  EXPECT_FALSE(source_->ran.load());
  EXPECT_EQ(clients_->opens, 0);
}

TEST_F(LifecycleTest, ReloadAppliesAFreshConfigAndSurvivesABadOne) {
  auto run = Start();
  ASSERT_TRUE(WaitFor([&] { return notifier_.Count("READY=1") == 1; }));
  lifecycle_->Reload(Error::InvalidArgument("skydb.toml: line 3: bad"));
  EXPECT_TRUE(source_->reloaded.empty());
  Config fresh = config_;
  fresh.log_level = "debug";
  fresh.data_dir = "/elsewhere";  // ignored: the directory never changes under a daemon
  lifecycle_->Reload(fresh);
  ASSERT_EQ(source_->reloaded, (std::vector<std::string>{"debug"}));
  EXPECT_EQ(notifier_.Count("RELOADING=1"), 2);
  EXPECT_EQ(notifier_.Count("READY=1"), 3);  // after start, and after each reload
  lifecycle_->RequestStop();
  EXPECT_EQ(run.get(), 0);
  spdlog::set_level(spdlog::level::info);
}

TEST_F(LifecycleTest, ReloadAppliesTheBackupPolicyButKeepsTheRepositoryUntilARestart) {
  config_.backup.repository = "/srv/backup";
  auto run = Start();
  ASSERT_TRUE(WaitFor([&] { return notifier_.Count("READY=1") == 1; }));
  std::ostringstream logged;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(logged);
  spdlog::default_logger()->sinks().push_back(sink);
  Config fresh = config_;
  fresh.backup.schedule = std::chrono::minutes(1);
  fresh.backup.archive_timeout = std::chrono::seconds(30);
  lifecycle_->Reload(fresh);
  fresh.backup.repository = "/srv/other";
  lifecycle_->Reload(fresh);
  spdlog::default_logger()->sinks().pop_back();
  EXPECT_EQ(source_->reloaded_backup.schedule, std::chrono::minutes(1));
  EXPECT_EQ(source_->reloaded_backup.archive_timeout, std::chrono::seconds(30));
  EXPECT_EQ(source_->reloaded_backup.repository, "/srv/backup");
  std::string text = logged.str();
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("backup.schedule changed")));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("backup.archive_timeout changed")));
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "SIGHUP: backup.repository changed but is not reloadable (archive_mode"));
  lifecycle_->RequestStop();
  EXPECT_EQ(run.get(), 0);
}

}  // namespace
}  // namespace skydb::daemon
