// The app launcher's protocol (pure: frames fed whole, split at every byte and one byte at a
// time; malformed frames), who the app runs as, the READY gate, the restart backoff, the app
// runner over a fake launcher (the environment from READY, exit statuses, the stop's SIGTERM),
// and the real launcher process (src/os/app_launcher.cc) driven as skydb drives it (as the
// current user: start, output, exit, exec failure, signals, and the app stopped when the
// daemon's end of the socket closes).
#include "daemon/app_launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "daemon/app_runner.h"
#include "os/app_protocol.h"
#include "os/line_reader.h"
#include "skydb/process.h"
#include "support/fakes.h"

namespace skydb::daemon {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<AppFields> DecodeAll(const std::string& bytes, size_t step) {
  AppFrameDecoder decoder;
  std::vector<AppFields> out;
  for (size_t at = 0; at < bytes.size(); at += step) {
    decoder.Feed(std::string_view(bytes).substr(at, step));
    AppFields fields;
    while (decoder.Pop(fields) == AppFrameDecoder::Next::kMessage) out.push_back(fields);
  }
  return out;
}

TEST(AppProtocolTest, FramesSurviveAnySplit) {
  std::vector<AppFields> messages = {
      {"start", "2", "/usr/bin/app", "--flag=a b", "A=1", "EMPTY="},
      {"signal", "15"},
      {"exited", "-1", "9"},
      {"launcher-ready", ""},
      {"exec-failed", "2", std::string("bytes \xff\x01 here")},
  };
  std::string stream;
  for (const auto& m : messages) stream += EncodeAppFrame(m);
  for (size_t step : {stream.size(), size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
    EXPECT_EQ(DecodeAll(stream, step), messages) << "step " << step;
  }
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    AppFrameDecoder decoder;
    decoder.Feed(stream.substr(0, cut));
    decoder.Feed(stream.substr(cut));
    AppFields fields;
    size_t n = 0;
    while (decoder.Pop(fields) == AppFrameDecoder::Next::kMessage) ++n;
    EXPECT_EQ(n, messages.size()) << "cut at " << cut;
  }
}

TEST(AppProtocolTest, MalformedFramesAreRefused) {
  AppFields fields;
  AppFrameDecoder too_big;
  too_big.Feed(std::string("\x7f\xff\xff\xff", 4));
  EXPECT_EQ(too_big.Pop(fields), AppFrameDecoder::Next::kMalformed);
  AppFrameDecoder unterminated;
  unterminated.Feed(std::string("\0\0\0\3abc", 7));
  EXPECT_EQ(unterminated.Pop(fields), AppFrameDecoder::Next::kMalformed);
  AppFrameDecoder empty;
  empty.Feed(std::string("\0\0\0\0", 4));
  EXPECT_EQ(empty.Pop(fields), AppFrameDecoder::Next::kMalformed);
  AppFrameDecoder partial;
  partial.Feed(std::string("\0\0\0\5ab", 6));
  EXPECT_EQ(partial.Pop(fields), AppFrameDecoder::Next::kNeedMore);
}

TEST(AppProtocolTest, RequestsAndReportsRoundTrip) {
  AppRequest start;
  start.argv = {"app", "x"};
  start.env = {"A=1", "B=2"};
  auto parsed = ParseRequest(RequestFields(start));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->argv, start.argv);
  EXPECT_EQ(parsed->env, start.env);
  AppRequest signal;
  signal.kind = AppRequest::Kind::kSignal;
  signal.signal = SIGHUP;
  EXPECT_EQ(ParseRequest(RequestFields(signal))->signal, SIGHUP);

  AppReport exited;
  exited.kind = AppReport::Kind::kExited;
  exited.term_signal = SIGKILL;
  auto report = ParseReport(ReportFields(exited));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->kind, AppReport::Kind::kExited);
  EXPECT_EQ(report->exit_code, -1);
  EXPECT_EQ(report->term_signal, SIGKILL);

  for (const AppFields& bad : std::vector<AppFields>{
           {}, {"start", "0"}, {"start", "3", "a"}, {"signal", "0"}, {"signal", "x"}, {"frob"}}) {
    EXPECT_FALSE(ParseRequest(bad).ok()) << (bad.empty() ? "" : bad[0]);
  }
  EXPECT_FALSE(ParseReport({"started", "0"}).ok());
  EXPECT_FALSE(ParseReport({"exited", "1"}).ok());
}

// ---- who the app runs as -------------------------------------------------------------------

RunAs User(const std::string& name, uid_t uid) { return RunAs{name, uid, uid, "/home/" + name}; }

Result<RunAs> ByName(const std::string& name) {
  if (name == "svc") return User("svc", 100);
  if (name == "web") return User("web", 200);
  if (name == "root") return User("root", 0);
  return Error::NotFound("user '" + name + "' does not exist");
}

Result<RunAs> ByUid(uid_t uid) {
  if (uid == 100) return User("svc", 100);
  return Error::NotFound("no user");
}

Result<ClusterUser> Resolve(uid_t euid, const std::string& app_user,
                            const std::string& run_as = "svc") {
  Config config;
  config.app.user = app_user;
  config.run_as_user = run_as;
  return ResolveAppUser(euid, config, ByUid, ByName);
}

TEST(ResolveAppUserTest, WhoTheAppRunsAs) {
  auto service = Resolve(0, "");
  ASSERT_TRUE(service.ok());
  EXPECT_EQ(service->user.name, "svc");
  EXPECT_TRUE(service->drop_privileges);
  auto web = Resolve(0, "web");
  ASSERT_TRUE(web.ok());
  EXPECT_EQ(web->user.uid, 200u);
  auto root = Resolve(0, "root");
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.error().message.find("never runs the app as root"), std::string::npos);
  EXPECT_FALSE(Resolve(0, "nobody-here").ok());
  auto self = Resolve(100, "", "");
  ASSERT_TRUE(self.ok());
  EXPECT_FALSE(self->drop_privileges);
  EXPECT_TRUE(Resolve(100, "svc", "").ok());
  auto other = Resolve(100, "web", "");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("only root can start the app as another user"),
            std::string::npos)
      << other.error().message;
}

// ---- READY gate, backoff, status ---------------------------------------------------------

class Recorder final : public Notifier {
 public:
  void Send(const std::string& message) override { sent.push_back(message); }
  std::optional<std::chrono::microseconds> WatchdogTimeout() const override { return {}; }
  uint64_t MonotonicUsec() const override { return 7; }
  std::vector<std::string> sent;
};

TEST(ReadyGateTest, ReadyWaitsForTheApp) {
  Recorder systemd;
  ReadyGate gate(systemd);
  gate.Send("EXTEND_TIMEOUT_USEC=90000000");
  gate.Send("READY=1\nSTATUS=serving sessions");
  gate.Send("RELOADING=1\nMONOTONIC_USEC=7\nSTATUS=reloading");
  EXPECT_EQ(systemd.sent,
            (std::vector<std::string>{"EXTEND_TIMEOUT_USEC=90000000", "STATUS=serving sessions",
                                      "STATUS=reloading"}));
  gate.Open();
  gate.Open();
  gate.Send("STOPPING=1");
  EXPECT_EQ(systemd.sent.back(), "STOPPING=1");
  EXPECT_EQ(systemd.sent[3], "READY=1");
  EXPECT_EQ(systemd.sent.size(), 5u);
}

TEST(ReadyGateTest, OpenBeforeReadySendsItWhenItComes) {
  Recorder systemd;
  ReadyGate gate(systemd);
  gate.Open();
  EXPECT_TRUE(systemd.sent.empty());
  gate.Send("READY=1\nSTATUS=x");
  EXPECT_EQ(systemd.sent, std::vector<std::string>{"READY=1\nSTATUS=x"});
}

TEST(AppBackoffTest, DoublesToThirtySecondsAndResetsAfterAStableRun) {
  AppBackoff backoff;
  std::vector<int64_t> got;
  for (int i = 0; i < 7; ++i) {
    got.push_back(std::chrono::duration_cast<seconds>(backoff.Next(seconds(1))).count());
  }
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, 4, 8, 16, 30, 30}));
  EXPECT_EQ(backoff.Next(seconds(31)), seconds(1));
  EXPECT_EQ(backoff.Next(seconds(2)), seconds(2));
}

TEST(AppStatusTest, SignalsBecome128PlusN) {
  EXPECT_EQ(ShellStatus(3, 0), 3);
  EXPECT_EQ(ShellStatus(-1, SIGKILL), 137);
  EXPECT_EQ(ShellStatus(-1, SIGTERM), 143);
}

// ---- the app runner over a fake launcher -----------------------------------------------------

// Answers each request from a script: a start with the next scripted reports, a signal with
// `on_signal`'s. Records what it was sent.
class FakeLauncher final : public AppLauncher {
 public:
  Status AwaitReady(milliseconds) override { return Ok(); }
  Status Send(const AppRequest& request) override {
    std::lock_guard lock(mu);
    sent.push_back(request);
    if (request.kind == AppRequest::Kind::kStart && !on_start.empty()) {
      for (const AppReport& r : on_start.front()) reports.push_back(r);
      on_start.erase(on_start.begin());
    } else if (request.kind == AppRequest::Kind::kSignal) {
      for (const AppReport& r : on_signal) reports.push_back(r);
    }
    cv.notify_all();
    return Ok();
  }
  Result<std::optional<AppReport>> Next(milliseconds timeout) override {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, timeout, [&] { return !reports.empty(); })) {
      return std::optional<AppReport>();
    }
    AppReport next = reports.front();
    reports.erase(reports.begin());
    return std::optional<AppReport>(next);
  }
  int TakeOutput() override { return -1; }
  pid_t pid() const override { return 4242; }

  std::vector<AppRequest> Sent() {
    std::lock_guard lock(mu);
    return sent;
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<AppReport>> on_start;
  std::vector<AppReport> on_signal;
  std::vector<AppReport> reports;
  std::vector<AppRequest> sent;
};

AppReport Report(AppReport::Kind kind, int code = -1, int sig = 0, int error_number = 0) {
  AppReport r;
  r.kind = kind;
  r.pid = 42;
  r.exit_code = code;
  r.term_signal = sig;
  r.error_number = error_number;
  r.text = "scripted";
  return r;
}

class AppRunnerTest : public ::testing::Test {
 protected:
  std::unique_ptr<AppRunner> Runner() {
    AppRunnerOptions options;
    options.argv = {"/usr/bin/app", "--flag"};
    options.user = "web";
    options.request_stop = [this] { stop_requested_ = true; };
    options.on_exec = [this] { ++execs_; };
    return std::make_unique<AppRunner>(launcher_, std::move(options), clock_);
  }
  bool WaitFor(const std::function<bool()>& condition) {
    for (int i = 0; i < 1000 && !condition(); ++i) std::this_thread::sleep_for(milliseconds(5));
    return condition();
  }

  FakeLauncher launcher_;
  testing::FakeClock clock_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<int> execs_{0};
};

TEST_F(AppRunnerTest, TheAppGetsTheEnvironmentFromReadyAndItsExitStopsSkydb) {
  launcher_.on_start = {{Report(AppReport::Kind::kStarted), Report(AppReport::Kind::kExited, 3)}};
  auto runner = Runner();
  EXPECT_TRUE(launcher_.Sent().empty());  // nothing starts before READY
  runner->OnReady({"DATABASE_URL=postgresql:///app?host=/d/run", "HOME=/home/web"});
  ASSERT_TRUE(WaitFor([&] { return stop_requested_.load(); }));
  EXPECT_EQ(runner->exit_status(), 3);
  EXPECT_EQ(execs_, 1);
  auto sent = launcher_.Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].argv, (std::vector<std::string>{"/usr/bin/app", "--flag"}));
  EXPECT_EQ(sent[0].env, (std::vector<std::string>{"DATABASE_URL=postgresql:///app?host=/d/run",
                                                   "HOME=/home/web"}));
}

TEST_F(AppRunnerTest, AnAppThatCannotBeExecutedStopsSkydbWith127) {
  launcher_.on_start = {{Report(AppReport::Kind::kExecFailed, -1, 0, ENOENT)}};
  auto runner = Runner();
  runner->OnReady({});
  ASSERT_TRUE(WaitFor([&] { return stop_requested_.load(); }));
  EXPECT_EQ(runner->exit_status(), 127);
  EXPECT_EQ(execs_, 0);
}

// skydb stops: the runner asks the launcher to SIGTERM the app, and reports how it ended.
TEST_F(AppRunnerTest, AStopSignalsTheAppThroughTheLauncher) {
  launcher_.on_start = {{Report(AppReport::Kind::kStarted)}};
  launcher_.on_signal = {Report(AppReport::Kind::kExited, -1, SIGTERM)};
  auto runner = Runner();
  runner->OnReady({});
  ASSERT_TRUE(WaitFor([&] { return execs_ == 1; }));
  runner->Stop();
  auto sent = launcher_.Sent();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].kind, AppRequest::Kind::kSignal);
  EXPECT_EQ(sent[1].signal, SIGTERM);
  EXPECT_EQ(runner->exit_status(), 128 + SIGTERM);
  EXPECT_FALSE(stop_requested_);  // skydb's own stop: the app does not stop it again
}

// ---- the real launcher, as the current user ------------------------------------------------

class LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = NewRealHostOps();
    AppLauncherSetup setup;
    auto self = LookupUserByUid(::geteuid());
    ASSERT_TRUE(self.ok());
    setup.user = ClusterUser{*self, false};
    setup.stop_timeout = milliseconds(500);
    auto launcher = ForkRealAppLauncher(*host_, setup);
    ASSERT_TRUE(launcher.ok()) << launcher.error().message;
    launcher_ = std::move(launcher).value();
    ASSERT_TRUE(launcher_->AwaitReady(seconds(5)).ok());
    output_ = std::make_unique<LineReader>(launcher_->TakeOutput(), [this](std::string_view l) {
      std::lock_guard lock(mu_);
      lines_.emplace_back(l);
    });
  }

  AppReport Next() {
    auto report = launcher_->Next(seconds(10));
    EXPECT_TRUE(report.ok() && report->has_value());
    return report.ok() && report->has_value() ? **report : AppReport{};
  }

  AppReport Start(const std::vector<std::string>& argv) {
    AppRequest start;
    start.argv = argv;
    start.env = {"PATH=/usr/bin:/bin", "GREETING=hello"};
    EXPECT_TRUE(launcher_->Send(start).ok());
    return Next();
  }

  std::vector<std::string> Lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }

  std::unique_ptr<HostOps> host_;
  std::unique_ptr<AppLauncher> launcher_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::unique_ptr<LineReader> output_;
};

TEST_F(LauncherTest, RunsTheAppWithItsEnvironmentAndReportsItsExit) {
  AppReport started = Start({"sh", "-c", "echo $GREETING; echo err >&2; exit 3"});
  ASSERT_EQ(started.kind, AppReport::Kind::kStarted);
  AppReport exited = Next();
  ASSERT_EQ(exited.kind, AppReport::Kind::kExited);
  EXPECT_EQ(exited.exit_code, 3);
  launcher_.reset();  // the launcher exits: the output pipe's last writer
  EXPECT_TRUE(output_->WaitClosed(seconds(5)));
  EXPECT_EQ(Lines(), (std::vector<std::string>{"hello", "err"}));
}

TEST_F(LauncherTest, ExecFailureIsReportedNotStarted) {
  AppReport failed = Start({"/nonexistent/app"});
  ASSERT_EQ(failed.kind, AppReport::Kind::kExecFailed);
  EXPECT_EQ(failed.error_number, ENOENT);
  EXPECT_NE(failed.text.find("No such file"), std::string::npos) << failed.text;
  // The launcher still serves: the next start works.
  EXPECT_EQ(Start({"true"}).kind, AppReport::Kind::kStarted);
  EXPECT_EQ(Next().exit_code, 0);
}

TEST_F(LauncherTest, SignalsReachTheApp) {
  ASSERT_EQ(Start({"sleep", "30"}).kind, AppReport::Kind::kStarted);
  AppReport busy = Start({"true"});
  EXPECT_EQ(busy.kind, AppReport::Kind::kExecFailed);
  EXPECT_EQ(busy.error_number, EBUSY);
  AppRequest term;
  term.kind = AppRequest::Kind::kSignal;
  term.signal = SIGTERM;
  ASSERT_TRUE(launcher_->Send(term).ok());
  AppReport exited = Next();
  EXPECT_EQ(exited.kind, AppReport::Kind::kExited);
  EXPECT_EQ(exited.term_signal, SIGTERM);
}

// The daemon's end closes (it died): the app gets SIGTERM, then SIGKILL after stop_timeout.
TEST_F(LauncherTest, TheAppStopsWhenTheDaemonGoes) {
  AppReport started = Start({"sh", "-c", "trap 'echo term' TERM; while :; do sleep 0.05; done"});
  ASSERT_EQ(started.kind, AppReport::Kind::kStarted);
  std::this_thread::sleep_for(milliseconds(200));  // the trap is set
  auto begin = std::chrono::steady_clock::now();
  launcher_.reset();
  EXPECT_TRUE(output_->WaitClosed(seconds(5)));
  auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(::kill(started.pid, 0), -1) << "the app outlived its launcher";
  EXPECT_LT(took, seconds(3));
  // Its "term" went to the reader or, once the launcher took the pipe over, to stderr.
  EXPECT_LE(Lines().size(), 1u);
}

// A launcher as the current user that sends SIGKILL 100 ms after its SIGTERM.
AppLauncherSetup QuickStopSetup() {
  AppLauncherSetup setup;
  auto self = LookupUserByUid(::geteuid());
  EXPECT_TRUE(self.ok());
  if (self.ok()) setup.user = ClusterUser{*self, false};
  setup.stop_timeout = milliseconds(100);
  return setup;
}

// Starts an app that prints "term" on SIGTERM and runs on until SIGKILL; its pid, or 0.
pid_t StartAppThatTrapsTerm(AppLauncher& launcher, milliseconds trap_set) {
  AppRequest start;
  start.argv = {"sh", "-c", "trap 'echo term' TERM; while :; do sleep 0.01; done"};
  start.env = {"PATH=/usr/bin:/bin"};
  EXPECT_TRUE(launcher.Send(start).ok());
  auto started = launcher.Next(seconds(10));
  EXPECT_TRUE(started.ok() && started->has_value());
  if (!started.ok() || !started->has_value()) return 0;
  std::this_thread::sleep_for(trap_set);
  return (*started)->pid;
}

// The daemon closes its end while it still reads the app's output (src/daemon/serve.cc, an
// app not stopped in time): the launcher drains the same pipe, and the line the app prints on
// SIGTERM may reach the daemon's reader first. The launcher then waited for more output, forever,
// and never sent SIGKILL (seen as a hang of the test above). A race, so it runs 50 rounds.
TEST(LauncherRaceTest, TheAppStopsOnTimeWhileTheDaemonStillReadsItsOutput) {
  auto host = NewRealHostOps();
  AppLauncherSetup setup = QuickStopSetup();
  for (int round = 0; round < 50; ++round) {
    auto launcher = ForkRealAppLauncher(*host, setup);
    ASSERT_TRUE(launcher.ok()) << launcher.error().message;
    ASSERT_TRUE((*launcher)->AwaitReady(seconds(5)).ok());
    pid_t launcher_pid = (*launcher)->pid();
    LineReader daemon_reader((*launcher)->TakeOutput(), [](std::string_view) {});
    pid_t app = StartAppThatTrapsTerm(**launcher, milliseconds(50));
    ASSERT_GT(app, 0);
    launcher->reset();  // waits up to stop_timeout + 5 s for the launcher to exit
    bool app_alive = ::kill(app, 0) == 0;
    if (app_alive) {  // leave nothing behind: a stuck launcher holds the test's stderr
      ::kill(-app, SIGKILL);
      ::kill(launcher_pid, SIGKILL);
    }
    ASSERT_FALSE(app_alive) << "round " << round << ": the app outlived its launcher";
    EXPECT_TRUE(daemon_reader.WaitClosed(seconds(5)));
  }
}

// When the daemon goes, its stderr (the launcher's too: the journal's stream under systemd) may
// be gone as well. The app's last line, copied there, must not kill the launcher with SIGPIPE
// before it sends the SIGKILL. Nobody else reads the app's output here, so the copy is certain.
TEST(LauncherStderrTest, TheAppStopsWhenTheLaunchersStderrIsClosed) {
  auto host = NewRealHostOps();
  int broken[2];
  ASSERT_EQ(::pipe2(broken, O_CLOEXEC), 0);
  int saved = ::dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ::dup2(broken[1], STDERR_FILENO);  // the launcher inherits a pipe nobody reads
  ::close(broken[1]);
  ::close(broken[0]);
  auto launcher = ForkRealAppLauncher(*host, QuickStopSetup());
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ASSERT_TRUE(launcher.ok()) << launcher.error().message;
  ASSERT_TRUE((*launcher)->AwaitReady(seconds(5)).ok());
  pid_t app = StartAppThatTrapsTerm(**launcher, milliseconds(200));
  ASSERT_GT(app, 0);
  launcher->reset();
  bool app_alive = ::kill(app, 0) == 0;
  if (app_alive) ::kill(-app, SIGKILL);
  EXPECT_FALSE(app_alive) << "the launcher died of SIGPIPE and left the app running";
}

}  // namespace
}  // namespace skydb::daemon
