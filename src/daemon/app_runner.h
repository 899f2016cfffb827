// `skydb run`'s app, from the daemon's side: started through the launcher (skydb/process.h)
// once the lifecycle is ready, its output logged line by line as `app[NAME]: …`, restarted with
// backoff under app.restart = on-failure, and stopped first when skydb stops (SIGTERM, SIGKILL
// after app.stop_timeout). With app.restart = no, the app's own exit stops skydb, which then
// exits with the app's status (128 + N for signal N); an app that cannot be exec'd stops skydb
// with 127 (not found) or 126 (any other reason), as a shell would.
//
// READY=1 reaches systemd only once both skydb and the app are up: the lifecycle's notifier is
// wrapped in a ReadyGate that holds READY back until the app was exec'd.
//
// Thread-safety: OnReady, Stop, Forward and exit_status from any thread; the runner's own
// thread talks to the launcher. ReadyGate is safe for concurrent use.
// Ownership: borrows the launcher and the clock, which must outlive it.
// Failure: every failure is logged once and ends in a status (exit_status).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/app_launcher.h"
#include "skydb/app_env.h"
#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "skydb/process.h"

namespace skydb::daemon {

// Holds READY=1 (and a reload's RELOADING=1) back until Open(); everything else passes.
class ReadyGate final : public Notifier {
 public:
  explicit ReadyGate(Notifier& inner) : inner_(inner) {}
  void Send(const std::string& message) override;
  std::optional<std::chrono::microseconds> WatchdogTimeout() const override {
    return inner_.WatchdogTimeout();
  }
  uint64_t MonotonicUsec() const override { return inner_.MonotonicUsec(); }
  // The app was exec'd: READY=1 now if the daemon already said it, else when it does.
  void Open();

 private:
  Notifier& inner_;
  Mutex mu_;
  bool open_ GUARDED_BY(mu_) = false;
  bool held_ GUARDED_BY(mu_) = false;
};

// on-failure's pause before a restart: 1 s, doubling to 30 s; an app that stayed up 30 s
// starts again from 1 s.
class AppBackoff {
 public:
  Clock::Duration Next(Clock::Duration uptime);

 private:
  Clock::Duration next_ = std::chrono::seconds(1);
};

// The app's whole environment: skydb's own, the contract (skydb/app_env.h) on top, HOME, USER
// and LOGNAME naming `user`, and none of systemd's notify or watchdog variables (READY is
// skydb's to send).
std::vector<std::string> AppProcessEnvironment(const AppEnvironment& contract, const RunAs& user);

// The exit status skydb takes from the app: its code, or 128 + the signal that killed it.
int ShellStatus(int exit_code, int term_signal);

struct AppRunnerOptions {
  std::vector<std::string> argv;  // APP ARGS…; APP without a slash is looked up on PATH
  std::string user;               // for messages
  AppRestart restart = AppRestart::kNo;
  std::chrono::milliseconds stop_timeout{10000};
  Clock::TimePoint skydb_started{};    // for the start-to-exec figure in the log
  std::function<void()> request_stop;  // the lifecycle's ordered stop
  std::function<void()> on_exec;       // once, when the app first runs (ReadyGate::Open)
};

class AppRunner {
 public:
  AppRunner(AppLauncher& launcher, AppRunnerOptions options, Clock& clock);
  ~AppRunner();  // Stop()
  AppRunner(const AppRunner&) = delete;
  AppRunner& operator=(const AppRunner&) = delete;

  // The lifecycle is ready: start the app with `env`, its whole environment (NAME=value; the
  // contract the lifecycle published at READY, through AppProcessEnvironment).
  void OnReady(std::vector<std::string> env);
  // Stops the app (or keeps it from starting) and waits until it is gone; idempotent.
  void Stop();
  // Forwards `sig` (SIGHUP) to the running app.
  void Forward(int sig);
  // SIGHUP: app.stop_timeout is reloadable (the launcher's own, for a daemon that is gone, keeps
  // the value it started with).
  void SetStopTimeout(std::chrono::milliseconds timeout);
  // The app's status once it ended; nullopt when it never ran.
  std::optional<int> exit_status() const;
  // "app[NAME]" for the log, NAME the basename of APP.
  const std::string& tag() const { return tag_; }

 private:
  void Loop();
  // One run: exec, supervise until exit; false when the runner is finished.
  bool RunOnce(AppBackoff& backoff);
  std::optional<AppReport> AwaitReport(std::chrono::milliseconds timeout);
  void Finish(std::optional<int> status, bool stop_skydb);
  bool WaitStopOr(Clock::Duration delay);
  bool stopping() const;
  std::chrono::milliseconds stop_timeout() const;

  AppLauncher& launcher_;
  AppRunnerOptions options_;
  Clock& clock_;
  std::string tag_;
  bool first_exec_ = true;  // the runner's thread only
  mutable Mutex mu_;
  CondVar cv_;
  bool ready_ GUARDED_BY(mu_) = false;
  std::vector<std::string> env_ GUARDED_BY(mu_);  // from OnReady
  bool stop_ GUARDED_BY(mu_) = false;
  bool done_ GUARDED_BY(mu_) = false;
  std::optional<int> status_ GUARDED_BY(mu_);
  std::chrono::milliseconds stop_timeout_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace skydb::daemon
