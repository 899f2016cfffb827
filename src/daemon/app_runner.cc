#include "daemon/app_runner.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "base/strings.h"
#include "os/spawn_support.h"
#include "supervisor/restart_policy.h"

namespace skydb::daemon {
namespace {

constexpr auto kStartAnswer = std::chrono::seconds(30);  // fork + exec; a report is instant
constexpr auto kTick = std::chrono::milliseconds(50);    // how often a running app sees a stop
constexpr auto kStableAfter = std::chrono::seconds(30);
constexpr auto kBackoffMax = std::chrono::seconds(30);

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DescribeExit(const AppReport& r) {
  ExitStatus status;
  status.exit_code = r.exit_code;
  status.term_signal = r.term_signal;
  return status.Describe();
}

}  // namespace

void ReadyGate::Send(const std::string& message) {
  MutexLock lock(mu_);
  if (open_) return inner_.Send(message);
  std::vector<std::string> kept;
  for (std::string_view line : Split(message, '\n')) {
    if (line == "READY=1") {
      held_ = true;
    } else if (line != "RELOADING=1" && line.rfind("MONOTONIC_USEC=", 0) != 0) {
      kept.emplace_back(line);
    }
  }
  if (!kept.empty()) inner_.Send(Join(kept, "\n"));
}

void ReadyGate::Open() {
  MutexLock lock(mu_);
  if (open_) return;
  open_ = true;
  if (held_) inner_.Send("READY=1");
}

Clock::Duration AppBackoff::Next(Clock::Duration uptime) {
  if (uptime >= kStableAfter) next_ = std::chrono::seconds(1);
  Clock::Duration delay = next_;
  next_ = std::min<Clock::Duration>(next_ * 2, kBackoffMax);
  return delay;
}

std::vector<std::string> AppProcessEnvironment(const AppEnvironment& contract, const RunAs& user) {
  std::map<std::string, std::optional<std::string>> changes;
  for (const auto& [name, value] : contract.vars) changes[name] = value;
  changes["HOME"] = user.home;
  changes["USER"] = user.name;
  changes["LOGNAME"] = user.name;
  for (const char* name : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}) {
    changes[name] = std::nullopt;
  }
  return BuildEnvironment(changes);
}

int ShellStatus(int exit_code, int term_signal) {
  return term_signal != 0 ? 128 + term_signal : exit_code;
}

AppRunner::AppRunner(AppLauncher& launcher, AppRunnerOptions options, Clock& clock)
    : launcher_(launcher),
      options_(std::move(options)),
      clock_(clock),
      tag_("app[" + Basename(options_.argv.front()) + "]"),
      stop_timeout_(options_.stop_timeout) {
  thread_ = std::thread([this] { Loop(); });
}

AppRunner::~AppRunner() {
  Stop();
  thread_.join();
}

void AppRunner::OnReady(std::vector<std::string> env) {
  MutexLock lock(mu_);
  env_ = std::move(env);
  ready_ = true;
  cv_.NotifyAll();
}

void AppRunner::Stop() {
  MutexLock lock(mu_);
  stop_ = true;
  cv_.NotifyAll();
  while (!done_) cv_.Wait(mu_);
}

void AppRunner::Forward(int sig) {
  AppRequest request;
  request.kind = AppRequest::Kind::kSignal;
  request.signal = sig;
  (void)launcher_.Send(request);  // no app running: the launcher ignores it
}

void AppRunner::SetStopTimeout(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  stop_timeout_ = timeout;
}

std::chrono::milliseconds AppRunner::stop_timeout() const {
  MutexLock lock(mu_);
  return stop_timeout_;
}

std::optional<int> AppRunner::exit_status() const {
  MutexLock lock(mu_);
  return status_;
}

bool AppRunner::stopping() const {
  MutexLock lock(mu_);
  return stop_;
}

void AppRunner::Finish(std::optional<int> status, bool stop_skydb) {
  {
    MutexLock lock(mu_);
    if (status) status_ = status;
    done_ = true;
    cv_.NotifyAll();
  }
  if (stop_skydb && options_.request_stop) options_.request_stop();
}

// True when a stop came within `delay`.
bool AppRunner::WaitStopOr(Clock::Duration delay) {
  MutexLock lock(mu_);
  if (!stop_) cv_.WaitFor(mu_, delay);  // a timed wait: the backoff reads no clock
  return stop_;
}

void AppRunner::Loop() {
  {
    MutexLock lock(mu_);
    while (!ready_ && !stop_) cv_.Wait(mu_);
  }
  AppBackoff backoff;
  while (!stopping() && RunOnce(backoff)) {
  }
  if (!stopping()) return;
  MutexLock lock(mu_);
  done_ = true;
  cv_.NotifyAll();
}

// A report, or nullopt on timeout; a launcher that is gone ends the runner (status 1).
std::optional<AppReport> AppRunner::AwaitReport(std::chrono::milliseconds timeout) {
  auto report = launcher_.Next(timeout);
  if (report.ok()) return *report;
  spdlog::error("{}: {}; skydb stops", tag_, report.error().message);
  Finish(1, true);
  AppReport gone;
  gone.kind = AppReport::Kind::kLauncherFailed;
  return gone;
}

bool AppRunner::RunOnce(AppBackoff& backoff) {
  AppRequest start;
  start.argv = options_.argv;
  {
    MutexLock lock(mu_);
    start.env = env_;
  }
  if (Status sent = launcher_.Send(start); !sent.ok()) {
    spdlog::error("{}: {}; skydb stops", tag_, sent.error().message);
    Finish(1, true);
    return false;
  }
  auto report = AwaitReport(kStartAnswer);
  if (!report) {
    spdlog::error("{}: the app launcher did not answer the start within {} s; skydb stops", tag_,
                  kStartAnswer.count());
    Finish(1, true);
    return false;
  }
  if (report->kind == AppReport::Kind::kLauncherFailed) return false;
  if (report->kind == AppReport::Kind::kExecFailed) {
    spdlog::error(
        "{}: cannot start {} as user {}: {}; skydb stops (check the path and that {} "
        "may execute it)",
        tag_, options_.argv.front(), options_.user, report->text, options_.user);
    Finish(report->error_number == ENOENT ? 127 : 126, true);
    return false;
  }
  auto started = clock_.Now();
  auto since_start =
      std::chrono::duration_cast<std::chrono::milliseconds>(started - options_.skydb_started);
  spdlog::info("{}: started {} (pid {}) as user {}, {} ms after skydb started", tag_,
               options_.argv.front(), report->pid, options_.user, since_start.count());
  if (first_exec_ && options_.on_exec) options_.on_exec();
  first_exec_ = false;
  // Supervise until it exits; a stop sends SIGTERM, then SIGKILL after app.stop_timeout.
  std::optional<Clock::TimePoint> term_sent;
  bool killed = false;
  while (!report || report->kind != AppReport::Kind::kExited) {
    if (stopping() && !term_sent) {
      spdlog::info("{}: stopping it (SIGTERM; SIGKILL after app.stop_timeout = {} ms)", tag_,
                   stop_timeout().count());
      Forward(SIGTERM);
      term_sent = clock_.Now();
    }
    if (term_sent && !killed && clock_.Now() - *term_sent >= stop_timeout()) {
      spdlog::warn("{}: still running {} ms after SIGTERM (app.stop_timeout); sending SIGKILL",
                   tag_, stop_timeout().count());
      Forward(SIGKILL);
      killed = true;
    }
    report = AwaitReport(kTick);
    if (report && report->kind == AppReport::Kind::kLauncherFailed) return false;
  }
  int status = ShellStatus(report->exit_code, report->term_signal);
  auto uptime = clock_.Now() - started;
  if (stopping()) {
    spdlog::info("{}: stopped ({})", tag_, DescribeExit(*report));
    Finish(status, false);
    return false;
  }
  bool failed = status != 0;
  if (options_.restart == AppRestart::kNo || !failed) {
    spdlog::log(failed ? spdlog::level::err : spdlog::level::info,
                "{}: {}; skydb stops too and exits with status {}{}", tag_, DescribeExit(*report),
                status, failed ? " (app.restart = on-failure would restart it)" : "");
    Finish(status, true);
    return false;
  }
  auto delay = backoff.Next(uptime);
  spdlog::error("{}: {}; restarting it in {} (app.restart = on-failure)", tag_,
                DescribeExit(*report), supervisor::FormatDuration(delay));
  {
    MutexLock lock(mu_);
    status_ = status;
  }
  return !WaitStopOr(delay);
}

}  // namespace skydb::daemon
