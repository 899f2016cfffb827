// The app's production modes against real daemons, real PostgreSQL 15 and real OS users
// (docs/embedding.md): `skydb run` with the Python and Go examples (the app as its own user
// and group, its table and its session surviving a restart, SIGTERM reaching the app before
// PostgreSQL stops, skydb exiting with the app's status), an app that cannot be exec'd, child
// mode with the parent killed by -9, and `skydb env` read by sh, JSON and systemd's own
// EnvironmentFile parser. Run as root (the cluster runs as SKYDB_TEST_USER).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_support.h"
#include "notify_socket.h"
#include "skydb/env.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

constexpr char kPython[] = "/usr/bin/python3";
const std::string kExamples = std::string(SKYDB_SOURCE_DIR) + "/examples";

CommandOutput RunCommand(const std::vector<std::string>& argv, seconds timeout = seconds(60)) {
  CommandSpec spec;
  spec.argv = argv;
  spec.timeout = timeout;
  auto out = NewRealProcessRunner()->Run(spec);
  if (!out.ok()) {
    CommandOutput failed;
    failed.err = out.error().message;
    return failed;
  }
  return *out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return done();
}

bool ProcessGone(pid_t pid) { return !NewRealHostOps()->ProcessExists(pid); }

// ---- environment files, read back by their real readers -----------------------------------

// systemd's environment.d generator: it reads files with load_env_file, EnvironmentFile='s parser.
constexpr char kEnvGenerator[] =
    "/lib/systemd/user-environment-generators/30-systemd-environment-d-generator";

std::map<std::string, std::string> ParseJsonObject(const std::string& text) {
  std::map<std::string, std::string> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  for (auto& [k, v] : j.items()) out[k] = v.get<std::string>();
  return out;
}

// The environment a shell has after sourcing `file` (with set -a), as a map.
std::map<std::string, std::string> SourcedBySh(const std::string& file) {
  auto out = RunCommand({"/bin/sh", "-c",
                         "set -a; . \"$0\"; exec /usr/bin/python3 -c 'import os, json; "
                         "print(json.dumps(dict(os.environ)))'",
                         file});
  return ParseJsonObject(out.out);
}

// `file` as systemd's EnvironmentFile= reads it: the generator parses it and prints the
// result shell-quoted, which sh reads back. Empty when the generator is missing.
std::map<std::string, std::string> ReadBySystemd(const std::string& file, const std::string& tmp) {
  if (::access(kEnvGenerator, X_OK) != 0) return {};
  std::filesystem::create_directories(tmp + "/xdg/environment.d");
  std::filesystem::copy_file(file, tmp + "/xdg/environment.d/50-skydb.conf",
                             std::filesystem::copy_options::overwrite_existing);
  auto parsed = RunCommand({"/usr/bin/env", "XDG_CONFIG_HOME=" + tmp + "/xdg", kEnvGenerator});
  std::ofstream(tmp + "/env.parsed") << parsed.out;
  return SourcedBySh(tmp + "/env.parsed");
}

// An OS user and a group of its own for the app, removed at the end.
class AppUser {
 public:
  AppUser() {
    std::string suffix = std::to_string(::getpid() % 100000);
    name_ = "skyapp" + suffix;
    group_ = "skyappg" + suffix;
    RunCommand({"/usr/sbin/groupadd", "--system", group_});
    auto made =
        RunCommand({"/usr/sbin/useradd", "--system", "--no-create-home", "--home-dir",
                    "/nonexistent", "--shell", "/usr/sbin/nologin", "--gid", group_, name_});
    ok_ = made.exit_code == 0;
  }
  ~AppUser() {
    RunCommand({"/usr/sbin/userdel", name_});
    RunCommand({"/usr/sbin/groupdel", group_});
  }
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  const std::string& group() const { return group_; }

 private:
  std::string name_, group_;
  bool ok_ = false;
};

class EmbeddingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the cluster runs as " << TestUser() << ")";
    if (!LookupUser(TestUser()).ok()) GTEST_SKIP() << "no user " << TestUser();
    dir_ = root_.Dir("d");
    state_ = root_.Dir("state.log");
    std::ofstream(state_).flush();
    ::chmod(state_.c_str(), 0666);
  }

  // `skydb [--set S]... run --embed --data-dir DIR --user TestUser() -- APP...`.
  std::unique_ptr<DaemonProcess> StartRun(const std::vector<std::string>& sets,
                                          const std::vector<std::string>& app,
                                          const std::string& exit_code = "3",
                                          const std::vector<std::string>& wrapper = {},
                                          const std::vector<std::string>& globals = {}) {
    std::vector<std::string> args = globals;
    for (const auto& set : sets) {
      args.push_back("--set");
      args.push_back(set);
    }
    for (const char* a : {"run", "--embed", "--data-dir"}) args.push_back(a);
    args.push_back(dir_);
    args.push_back("--user");
    args.push_back(TestUser());
    args.push_back("--");
    args.insert(args.end(), app.begin(), app.end());
    return std::make_unique<DaemonProcess>(
        args,
        std::map<std::string, std::optional<std::string>>{{"APP_STATE_FILE", state_},
                                                          {"APP_EXIT_CODE", exit_code}},
        wrapper);
  }

  int StateCount(const std::string& text) {
    std::string state = ReadAll(state_);
    int n = 0;
    for (size_t at = state.find(text); at != std::string::npos; at = state.find(text, at + 1)) ++n;
    return n;
  }

  // One run of the app up to "serving", SIGTERM, and its end; the daemon's log.
  std::string RunUntilTerm(const std::vector<std::string>& sets,
                           const std::vector<std::string>& app, int round) {
    auto started = SteadyClock::now();
    auto daemon = StartRun(sets, app);
    bool exited = false;
    bool serving = WaitFor(
        [&] {
          exited = daemon->WaitExit(milliseconds(1)).has_value();
          return exited || StateCount("serving") >= round;
        },
        seconds(90));
    serving = serving && !exited;
    EXPECT_TRUE(serving) << daemon->Log() << ReadAll(state_);
    if (!serving) return daemon->Log();
    RecordProperty(
        "run" + std::to_string(round) + "_start_to_serving_ms",
        std::to_string(
            std::chrono::duration_cast<milliseconds>(SteadyClock::now() - started).count()));
    EXPECT_TRUE(daemon->Signal(SIGTERM).ok());
    auto status = daemon->WaitExit(seconds(60));
    EXPECT_TRUE(status.has_value()) << daemon->Log();
    if (status) {
      EXPECT_EQ(status->exit_code, 3) << "skydb exits with the app's status\n" << daemon->Log();
    }
    EXPECT_EQ(StateCount("got SIGTERM"), round) << ReadAll(state_);
    EXPECT_TRUE(PostgresProcessesOf(dir_ + "/pgdata").empty()) << "a postgres process is left";
    std::string log = daemon->Log();
    size_t app_stopped = log.find("stopped (exited with status 3)");
    size_t drain = log.find("stopping: closing the listener");
    EXPECT_NE(app_stopped, std::string::npos) << log;
    EXPECT_LT(app_stopped, drain) << "the app stops before the store drains\n" << log;
    EXPECT_NE(log.find("database system is shut down"), std::string::npos) << log;
    return log;
  }

  // Two runs of `app`: the second finds the table (visits=2) and the session the first set.
  void TwoRuns(const std::vector<std::string>& sets, const std::vector<std::string>& app,
               const std::string& user) {
    std::string first = RunUntilTerm(sets, app, 1);
    if (HasFailure()) return;
    EXPECT_EQ(StateCount("visits=1 previous_session=none user=" + user), 1) << ReadAll(state_);
    std::string second = RunUntilTerm(sets, app, 2);
    EXPECT_EQ(StateCount("visits=2 previous_session=state-1 user=" + user), 1)
        << ReadAll(state_) << second;
  }

  // examples/go/SOURCE built to `binary` (skipped without go: apt-get install golang-go).
  void BuildGo(const std::string& source, const std::string& binary) {
    if (::access("/usr/bin/go", X_OK) != 0) GTEST_SKIP() << "go is not installed (golang-go)";
    auto built = RunCommand({"/usr/bin/env", "GOPATH=/usr/share/gocode", "GO111MODULE=off",
                             "GOCACHE=" + root_.Dir("gocache"), "HOME=" + root_.path(),
                             "/usr/bin/go", "build", "-o", binary, kExamples + "/go/" + source},
                            seconds(300));
    ASSERT_EQ(built.exit_code, 0) << built.err;
    ::chmod(binary.c_str(), 0755);
  }

  void ParentKilled(const std::vector<std::string>& parent_argv);

  TestRoot root_;
  std::string dir_;
  std::string state_;
};

// The app as skydb's service user (app.user unset), which is peer-mapped to app.role.
TEST_F(EmbeddingTest, RunPythonAppAsTheServiceUser) {
  TwoRuns({}, {kPython, kExamples + "/python/app.py"}, TestUser());
}

// The production shape: the app as its own OS user and group, its own role and database,
// peer-mapped; skydb and PostgreSQL as the service user.
TEST_F(EmbeddingTest, RunPythonAppAsItsOwnUser) {
  AppUser user;
  ASSERT_TRUE(user.ok());
  TwoRuns({"app.user=" + user.name(), "app.group=" + user.group()},
          {kPython, kExamples + "/python/app.py"}, user.name());
}

TEST_F(EmbeddingTest, RunGoAppAsTheServiceUser) {
  std::string binary = root_.Dir("go-app");
  ASSERT_NO_FATAL_FAILURE(BuildGo("app.go", binary));
  TwoRuns({}, {binary}, TestUser());
}

TEST_F(EmbeddingTest, RunGoAppAsItsOwnUser) {
  std::string binary = root_.Dir("go-app");
  ASSERT_NO_FATAL_FAILURE(BuildGo("app.go", binary));
  AppUser user;
  ASSERT_TRUE(user.ok());
  TwoRuns({"app.user=" + user.name(), "app.group=" + user.group()}, {binary}, user.name());
}

// The systemd pair without systemd: skydb serve as one "unit", the app as another with its own
// user and group and, as EnvironmentFile= would give it, the variables of DIR/run/app.env read
// by systemd's parser.
TEST_F(EmbeddingTest, SystemdPairAppReadsAppEnv) {
  if (::access(kEnvGenerator, X_OK) != 0) GTEST_SKIP() << "no systemd environment generator";
  AppUser user;
  ASSERT_TRUE(user.ok());
  auto daemon = StartEmbedded(dir_, {"app.user=" + user.name(), "app.group=" + user.group()});
  ASSERT_TRUE(WaitDaemonReady(*daemon, dir_, seconds(90))) << daemon->Log();
  // Written at READY, just after the status file says ready.
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir_ + "/run/app.env"); }, seconds(10)))
      << daemon->Log();
  auto env = ReadBySystemd(dir_ + "/run/app.env", root_.Dir("pair"));
  ASSERT_EQ(env.count("DATABASE_URL"), 1u) << ReadAll(dir_ + "/run/app.env");
  std::vector<std::string> args = {
      "--reuid=" + user.name(),   "--regid=" + user.group(), "--init-groups", "/usr/bin/env", "-i",
      "APP_STATE_FILE=" + state_, "USER=" + user.name()};
  for (const char* name : {"DATABASE_URL", "SKY_DB_PATH", "PGHOST", "PGPORT", "PGDATABASE",
                           "PGUSER", "SKY_LIVE_STORE", "SKY_LIVE_STORE_PATH", "REDIS_URL"}) {
    args.push_back(std::string(name) + "=" + env[name]);
  }
  args.push_back(kPython);
  args.push_back(kExamples + "/python/app.py");
  DaemonProcess app("/usr/bin/setpriv", args);
  EXPECT_TRUE(WaitFor([&] { return StateCount("serving") == 1; }, seconds(30))) << app.Log();
  EXPECT_EQ(StateCount("visits=1 previous_session=none user=" + user.name()), 1) << app.Log();
  EXPECT_EQ(app.StopCleanly(seconds(10)), "");
  EXPECT_EQ(daemon->StopCleanly(seconds(60)), "");
}

TEST_F(EmbeddingTest, AnAppThatCannotStartStopsSkydbAndPostgres) {
  auto daemon = StartRun({}, {"/nonexistent/app"});
  auto status = daemon->WaitExit(seconds(90));
  ASSERT_TRUE(status.has_value()) << daemon->Log();
  EXPECT_EQ(status->exit_code, 127) << daemon->Log();
  EXPECT_TRUE(daemon->LogContains("cannot start /nonexistent/app as user " + TestUser() +
                                  ": No such file or directory"))
      << daemon->Log();
  EXPECT_TRUE(daemon->LogContains("skydb stopped cleanly")) << daemon->Log();
  EXPECT_TRUE(PostgresProcessesOf(dir_ + "/pgdata").empty());
}

// READY=1 only once the app runs: never for an app that cannot be exec'd, though skydb itself
// got ready (its STATUS said so); at once for one that can.
TEST_F(EmbeddingTest, ReadyWaitsForTheApp) {
  NotifySocket notify(root_.Dir("notify"));
  ASSERT_TRUE(notify.bound());
  // Through env(1): the child launcher strips NOTIFY_SOCKET from the processes it starts.
  std::vector<std::string> wrapper = {"/usr/bin/env", "NOTIFY_SOCKET=" + notify.path()};
  auto failing = StartRun({}, {"/nonexistent/app"}, "0", wrapper);
  ASSERT_TRUE(failing->WaitExit(seconds(90)).has_value());
  EXPECT_TRUE(notify.WaitFor("STATUS=serving sessions", milliseconds(100)).has_value())
      << failing->Log();
  EXPECT_FALSE(notify.WaitFor("READY=1", milliseconds(100)).has_value());

  size_t seen = notify.Messages().size();
  auto daemon = StartRun({}, {kPython, kExamples + "/python/app.py"}, "0", wrapper);
  EXPECT_TRUE(notify.WaitFor("READY=1", seconds(90), seen).has_value()) << daemon->Log();
  // The log line is written before READY=1 is sent, but reaches this test through another
  // channel (the daemon's stderr), so it may still be on its way.
  EXPECT_TRUE(daemon->WaitLogContains("started " + std::string(kPython), seconds(10)))
      << daemon->Log();
  // Stopped once it handles SIGTERM (before that, SIGTERM kills it: status 143).
  EXPECT_TRUE(WaitFor([&] { return StateCount("serving") == 1; }, seconds(60)));
  EXPECT_EQ(daemon->StopCleanly(seconds(60)), "");
}

// skydb killed with -9: the launcher sees its socket close and stops the app (SIGTERM), the
// postmaster gets its parent-death signal; nothing is left behind.
TEST_F(EmbeddingTest, SkydbKilledStopsTheAppAndPostgres) {
  auto daemon = StartRun({}, {kPython, kExamples + "/python/app.py"});
  ASSERT_TRUE(WaitFor([&] { return StateCount("serving") == 1; }, seconds(90))) << daemon->Log();
  auto killed = SteadyClock::now();
  ASSERT_TRUE(daemon->Signal(SIGKILL).ok());
  EXPECT_TRUE(WaitFor([&] { return StateCount("got SIGTERM") == 1; }, seconds(15)))
      << ReadAll(state_);
  EXPECT_TRUE(WaitFor([&] { return PostgresProcessesOf(dir_ + "/pgdata").empty(); }, seconds(15)));
  RecordProperty(
      "skydb_kill_to_all_gone_ms",
      std::to_string(
          std::chrono::duration_cast<milliseconds>(SteadyClock::now() - killed).count()));
}

// SIGHUP reaches the app and re-reads app.stop_timeout; an app that ignores SIGTERM is killed
// (SIGKILL to its group) once the new timeout passes, and skydb exits with 128 + 9.
TEST_F(EmbeddingTest, SighupReachesTheAppAndReloadsStopTimeout) {
  std::string config = root_.Dir("skydb.toml");
  std::ofstream(config) << "[app]\nstop_timeout = \"60s\"\n";
  std::string script =
      "trap 'echo hup >> \"$APP_STATE_FILE\"' HUP; trap '' TERM; "
      "echo serving >> \"$APP_STATE_FILE\"; while :; do sleep 0.1; done";
  auto daemon = StartRun({}, {"/bin/sh", "-c", script}, "0", {}, {"--config", config});
  ASSERT_TRUE(WaitFor([&] { return StateCount("serving") == 1; }, seconds(90))) << daemon->Log();
  std::ofstream(config) << "[app]\nstop_timeout = \"300ms\"\n";
  ASSERT_TRUE(daemon->Signal(SIGHUP).ok());
  EXPECT_TRUE(WaitFor([&] { return StateCount("hup") == 1; }, seconds(10))) << daemon->Log();
  EXPECT_TRUE(WaitFor([&] { return daemon->LogContains("configuration re-read"); }, seconds(10)));
  auto term = SteadyClock::now();
  ASSERT_TRUE(daemon->Signal(SIGTERM).ok());
  auto status = daemon->WaitExit(seconds(30));
  ASSERT_TRUE(status.has_value()) << daemon->Log();
  EXPECT_EQ(status->exit_code, 128 + SIGKILL) << daemon->Log();
  EXPECT_LT(SteadyClock::now() - term, seconds(15)) << "the reloaded 300 ms applied, not 60 s";
  EXPECT_TRUE(daemon->LogContains("still running 300 ms after SIGTERM")) << daemon->Log();
  EXPECT_TRUE(PostgresProcessesOf(dir_ + "/pgdata").empty());
}

// app.restart = on-failure: a failed app is started again after the backoff (1 s first); the
// restarted one is stopped by SIGTERM as usual and its status is skydb's.
TEST_F(EmbeddingTest, OnFailureRestartsTheApp) {
  std::string script =
      "echo run >> \"$APP_STATE_FILE\"; "
      "[ \"$(grep -c run \"$APP_STATE_FILE\")\" -lt 2 ] && exit 1; "
      "trap 'exit 5' TERM; echo serving >> \"$APP_STATE_FILE\"; while :; do sleep 0.1; done";
  auto daemon = StartRun({"app.restart=on-failure"}, {"/bin/sh", "-c", script});
  ASSERT_TRUE(WaitFor([&] { return StateCount("serving") == 1; }, seconds(90))) << daemon->Log();
  EXPECT_EQ(StateCount("run"), 2);
  EXPECT_TRUE(daemon->LogContains("exited with status 1; restarting it in 1")) << daemon->Log();
  ASSERT_TRUE(daemon->Signal(SIGTERM).ok());
  auto status = daemon->WaitExit(seconds(60));
  ASSERT_TRUE(status.has_value()) << daemon->Log();
  EXPECT_EQ(status->exit_code, 5) << daemon->Log();
}

TEST_F(EmbeddingTest, AppUserMustNotBeRoot) {
  auto daemon = StartRun({"app.user=root"}, {"/bin/true"});
  auto status = daemon->WaitExit(seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->exit_code, 2);
  EXPECT_TRUE(daemon->LogContains("skydb never runs the app as root")) << daemon->Log();
  EXPECT_FALSE(std::filesystem::exists(dir_)) << "a refused start leaves nothing behind";
}

// Child mode: the parent (`parent`, run as the service user) is killed with -9; skydb stops in
// order and leaves no postgres behind within the bound, and DIR starts again.
void EmbeddingTest::ParentKilled(const std::vector<std::string>& parent_argv) {
  auto service = LookupUser(TestUser());
  ASSERT_TRUE(service.ok());
  ASSERT_EQ(::chown(root_.path().c_str(), service->uid, service->gid), 0);
  // sh sends the parent's stdout to the captured stderr, then execs it (the same pid).
  std::vector<std::string> args = {"-c",
                                   "exec >&2; exec \"$@\"",
                                   "sh",
                                   "/usr/bin/setpriv",
                                   "--reuid=" + TestUser(),
                                   "--regid=" + TestUser(),
                                   "--init-groups"};
  args.insert(args.end(), parent_argv.begin(), parent_argv.end());
  args.push_back(SKYDB_BINARY);
  args.push_back(dir_);
  DaemonProcess parent("/bin/sh", args);
  ASSERT_TRUE(WaitFor([&] { return parent.LogContains("ready: {"); }, seconds(90))) << parent.Log();
  std::string log = parent.Log();
  std::string line = log.substr(log.find("ready: {") + 7);
  auto ready = nlohmann::json::parse(line.substr(0, line.find('\n')));
  EXPECT_EQ(ready["store_socket"], dir_ + "/run/skydb.sock");
  EXPECT_EQ(ready["database_url"], "postgresql:///app?host=" + dir_ + "/run&user=app");
  EXPECT_TRUE(ready["http"].is_null());
  pid_t skydb = ready["pid"].get<pid_t>();
  ASSERT_GT(skydb, 0);

  auto killed = SteadyClock::now();
  ASSERT_TRUE(parent.Signal(SIGKILL).ok());
  bool gone =
      WaitFor([&] { return ProcessGone(skydb) && PostgresProcessesOf(dir_ + "/pgdata").empty(); },
              seconds(15));
  auto took = std::chrono::duration_cast<milliseconds>(SteadyClock::now() - killed);
  RecordProperty("parent_kill_to_all_gone_ms", std::to_string(took.count()));
  ASSERT_TRUE(gone) << "skydb or postgres still running 15 s after the parent died\n"
                    << parent.Log();
  parent.WaitExit(seconds(5));
  EXPECT_TRUE(parent.LogContains("skydb stopped cleanly")) << parent.Log();

  auto again = StartEmbedded(dir_);
  EXPECT_TRUE(WaitDaemonReady(*again, dir_, seconds(60))) << again->Log();
  EXPECT_EQ(again->StopCleanly(seconds(30)), "");
}

TEST_F(EmbeddingTest, ChildModeStopsWhenThePythonParentIsKilled) {
  ParentKilled({kPython, kExamples + "/python/parent.py"});
}

TEST_F(EmbeddingTest, ChildModeStopsWhenTheGoParentIsKilled) {
  std::string binary = root_.Dir("go-parent");
  ASSERT_NO_FATAL_FAILURE(BuildGo("parent.go", binary));
  ParentKilled({binary});
}

// The parent killed in skydb's first instant, at 0, 10, 50 and 100 ms after it spawned skydb
// (a shell that starts skydb in the background, then kills itself), and later while skydb
// starts PostgreSQL (500, 1500 ms), the parent's pid passed by --parent-pid and by
// SKYDB_PARENT_PID: skydb is gone, cleanly, within 5 s and leaves no postgres behind. This test
// process is the subreaper that inherits the orphaned skydb, so it reaps it and reads its exit
// status.
TEST_F(EmbeddingTest, ParentKilledWhileSkydbStartsLeavesNothingBehind) {
  {
    auto first = StartEmbedded(dir_);  // initdb now: each round below is a plain start
    ASSERT_TRUE(WaitDaemonReady(*first, dir_, seconds(90))) << first->Log();
    ASSERT_EQ(first->StopCleanly(seconds(60)), "");
  }
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  for (bool by_env : {false, true}) {
    for (int ms : {0, 10, 50, 100, 500, 1500}) {
      SCOPED_TRACE(std::string(by_env ? "SKYDB_PARENT_PID" : "--parent-pid") + ", parent killed " +
                   std::to_string(ms) + " ms after the spawn");
      std::string skydb =
          std::string(by_env ? "SKYDB_PARENT_PID=$$ " : "") +
          "\"$0\" serve --embed --data-dir \"$1\" --user \"$2\" --exit-with-parent" +
          (by_env ? "" : " --parent-pid $$");
      char pause[32] = "";
      if (ms > 0) std::snprintf(pause, sizeof pause, "sleep %d.%03d; ", ms / 1000, ms % 1000);
      DaemonProcess parent(
          "/bin/sh", {"-c", skydb + " & echo skydb=$! >&2; " + pause + "kill -9 $$", SKYDB_BINARY,
                      dir_, TestUser()});
      // skydb shares the parent's stderr: wait for the parent alone.
      auto parent_exit = parent.WaitProcessExit(seconds(10));
      ASSERT_TRUE(parent_exit.has_value()) << parent.Log();
      ASSERT_EQ(parent_exit->term_signal, SIGKILL) << parent.Log();
      auto killed = SteadyClock::now();
      auto left = [&] {
        return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(
                                             killed + seconds(5) - SteadyClock::now()));
      };
      ASSERT_TRUE(parent.WaitLogContains("skydb=", seconds(5))) << parent.Log();
      std::string log = parent.Log();
      pid_t pid = std::stoi(log.substr(log.find("skydb=") + 6));
      int status = 0;
      bool reaped = WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, left());
      bool no_postgres =
          WaitFor([&] { return PostgresProcessesOf(dir_ + "/pgdata").empty(); }, left());
      std::string round =
          "parent_killed_at_" + std::to_string(ms) + "ms_" + (by_env ? "env" : "flag");
      RecordProperty(
          round + "_all_gone_ms",
          std::to_string(
              std::chrono::duration_cast<milliseconds>(SteadyClock::now() - killed).count()));
      RecordProperty(round + "_how",
                     parent.LogContains("not starting") ? "not started" : "stopped in order");
      if (!reaped) {  // still serving: what the bug did; stop it so the next round can run
        ::kill(pid, SIGTERM);
        WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, seconds(30));
      }
      EXPECT_TRUE(reaped) << "skydb still runs 5 s after its parent died\n" << parent.Log();
      EXPECT_TRUE(no_postgres) << "a postgres process is left\n" << parent.Log();
      ASSERT_TRUE(
          WaitFor([&] { return PostgresProcessesOf(dir_ + "/pgdata").empty(); }, seconds(30)));
      if (!reaped) continue;
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n"
                                                                 << parent.Log();
      EXPECT_TRUE(parent.LogContains("--exit-with-parent: ")) << parent.Log();
    }
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  auto again = StartEmbedded(dir_);
  EXPECT_TRUE(WaitDaemonReady(*again, dir_, seconds(60))) << again->Log();
  EXPECT_EQ(again->StopCleanly(seconds(30)), "");
}

// Child mode keeps HTTP off unless http.port or http.listen is set: two instances started at
// once by their parents (with the machine's default http.port, no SKYDB_HTTP_PORT) both get
// ready, their ready lines saying "http": null. Before, the second exited 1 on port 9733.
TEST_F(EmbeddingTest, ChildModeInstancesDoNotShareAnHttpPort) {
  auto service = LookupUser(TestUser());
  ASSERT_TRUE(service.ok());
  ASSERT_EQ(::chown(root_.path().c_str(), service->uid, service->gid), 0);
  std::vector<std::unique_ptr<DaemonProcess>> parents;
  for (const char* name : {"one", "two"}) {
    parents.push_back(std::make_unique<DaemonProcess>(
        "/bin/sh",
        std::vector<std::string>{"-c", "exec >&2; exec \"$@\"", "sh", "/usr/bin/setpriv",
                                 "--reuid=" + TestUser(), "--regid=" + TestUser(), "--init-groups",
                                 kPython, kExamples + "/python/parent.py", SKYDB_BINARY,
                                 root_.Dir(name)},
        std::map<std::string, std::optional<std::string>>{{"SKYDB_HTTP_PORT", std::nullopt}}));
  }
  for (auto& parent : parents) {
    ASSERT_TRUE(parent->WaitLogContains("ready: {", seconds(90))) << parent->Log();
    std::string log = parent->Log();
    std::string line = log.substr(log.find("ready: {") + 7);
    auto ready = nlohmann::json::parse(line.substr(0, line.find('\n')));
    EXPECT_TRUE(ready["http"].is_null()) << line;
    EXPECT_TRUE(parent->LogContains("http: endpoints off")) << log;
  }
  for (auto& parent : parents) EXPECT_EQ(parent->StopCleanly(seconds(60)), "");
}

// Test mode: `serve --ephemeral` is a throwaway instance for an app's test suite: a new
// temporary data dir under $TMPDIR, fsync off, the dev profile's small settings, HTTP off; the
// ready line says where it is; SIGTERM stops it in order and removes the directory. Its start
// (initdb included: every ephemeral start is a first start) is recorded.
TEST_F(EmbeddingTest, EphemeralInstanceStartsAndLeavesNothingBehind) {
  std::string ready_file = root_.Dir("ready");
  // Like /tmp: the service user may remove what it owns there (sticky, world-writable).
  std::string tmp = root_.Dir("tmp");
  ASSERT_EQ(::mkdir(tmp.c_str(), 01777), 0);
  ASSERT_EQ(::chmod(tmp.c_str(), 01777), 0);
  auto started = SteadyClock::now();
  DaemonProcess d("/bin/sh",
                  {"-c", "exec \"$0\" serve --ephemeral --user \"$1\" --ready-fd 3 3>\"$2\"",
                   SKYDB_BINARY, TestUser(), ready_file},
                  {{"TMPDIR", tmp}});
  std::string line;
  bool ready = WaitFor(
      [&] {
        line = ReadAll(ready_file);
        return line.find('\n') != std::string::npos || d.WaitExit(milliseconds(1)).has_value();
      },
      seconds(120));
  ASSERT_TRUE(ready && line.find('\n') != std::string::npos) << d.Log();
  RecordProperty(
      "ephemeral_start_to_ready_ms",
      std::to_string(
          std::chrono::duration_cast<milliseconds>(SteadyClock::now() - started).count()));
  auto info = nlohmann::json::parse(line);
  std::string socket = info["store_socket"].get<std::string>();
  std::string dir = socket.substr(0, socket.size() - std::string("/run/skydb.sock").size());
  EXPECT_EQ(dir.rfind(tmp + "/skydb-ephemeral-", 0), 0u) << dir;
  EXPECT_TRUE(info["http"].is_null()) << line;
  EXPECT_EQ(RedisCli(socket, {"PING"}), "PONG");
  EXPECT_EQ(Psql(dir, "SHOW fsync"), "off");
  EXPECT_EQ(Psql(dir, "SHOW synchronous_commit"), "off");
  EXPECT_EQ(Psql(dir, "SHOW shared_buffers"), "32MB");  // the dev profile
  EXPECT_EQ(d.StopCleanly(seconds(60)), "");
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the ephemeral data dir is removed at stop";
  EXPECT_TRUE(PostgresProcessesOf(dir + "/pgdata").empty());
}

TEST_F(EmbeddingTest, ReadyFdThatIsNotOpenIsRefused) {
  CliRun run =
      RunSkydb({"serve", "--embed", "--data-dir", dir_, "--user", TestUser(), "--ready-fd", "97"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--ready-fd 97 is not an open descriptor"), std::string::npos) << run.err;
}

TEST(SkydbEnvTest, ShellJsonAndSystemdReadTheSameValues) {
  TempDir tmp;
  // Space, single and double quotes, a backslash: what each format must escape.
  std::string dir = tmp.path() + "/it's a \"dir\" \\ here";
  std::map<std::string, std::string> formats;
  for (const char* format : {"shell", "json", "systemd"}) {
    CliRun run = RunSkydb({"env", "--data-dir", dir, "--format", format});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    formats[format] = tmp.Write(std::string("env.") + format, run.out);
  }
  auto json = ParseJsonObject(ReadAll(formats["json"]));
  ASSERT_EQ(json["REDIS_URL"], "unix://" + dir + "/run/skydb.sock");
  ASSERT_EQ(json["PGHOST"], dir + "/run");
  EXPECT_EQ(json["DATABASE_URL"].rfind("postgresql:///app?host=", 0), 0u);

  auto shell = SourcedBySh(formats["shell"]);
  // systemd's own EnvironmentFile parser (load_env_file), through the environment.d generator.
  auto systemd = ReadBySystemd(formats["systemd"], tmp.path());
  for (const auto& [name, value] : json) {
    EXPECT_EQ(shell[name], value) << name << " as sh reads it";
    if (::access(kEnvGenerator, X_OK) == 0) {
      EXPECT_EQ(systemd[name], value) << name << " as systemd";
    }
  }
  EXPECT_EQ(json.size(), 9u);
}

}  // namespace
}  // namespace skydb::testing
