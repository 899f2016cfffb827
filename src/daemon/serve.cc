#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "daemon/app_runner.h"
#include "daemon/child_mode.h"
#include "daemon/daemon.h"
#include "daemon/lifecycle.h"
#include "daemon/open_files.h"
#include "daemon/parent_watch.h"
#include "daemon/privileges.h"
#include "daemon/run_dir.h"
#include "os/line_reader.h"
#include "skydb/app_env.h"
#include "skydb/log.h"

namespace skydb::daemon {
namespace {

// SIGUSR2 is only used internally, to wake the signal thread at shutdown.
constexpr int kQuitSignal = SIGUSR2;

sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, kQuitSignal}) sigaddset(&set, sig);
  return set;
}

// `app` (skydb run) is stopped before the lifecycle and hears SIGHUP too.
void SignalLoop(Lifecycle& lifecycle, const std::function<Result<Config>()>& reload_config,
                AppRunner* app) {
  sigset_t set = HandledSignals();
  while (true) {
    int sig = 0;
    if (::sigwait(&set, &sig) != 0) continue;
    if (sig == kQuitSignal) return;
    if (sig == SIGHUP) {
      if (app != nullptr) app->Forward(SIGHUP);
      if (!reload_config) continue;
      Result<Config> fresh = reload_config();
      if (app != nullptr && fresh.ok()) app->SetStopTimeout(fresh->app.stop_timeout);
      lifecycle.Reload(std::move(fresh));
      continue;
    }
    spdlog::info("received {}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    if (app != nullptr) app->Stop();
    lifecycle.RequestStop();
  }
}

// The launcher, forked while this is the only thread and before root is dropped.
Result<std::unique_ptr<AppLauncher>> ForkLauncher(Env& env, const Config& config,
                                                  ClusterUser& user) {
  auto resolved = ResolveAppUser(env.host->EffectiveUid(), config, LookupUserByUid, LookupUser);
  if (!resolved.ok()) return Error::InvalidArgument(resolved.error().message);
  user = *resolved;
  AppLauncherSetup setup{user, {}, config.app.stop_timeout};
  if (user.drop_privileges) {
    auto groups = GroupsToKeep(user.user, {config.app.group});
    if (!groups.ok()) return Error::InvalidArgument(groups.error().message + ": check app.group");
    setup.groups = *groups;
  }
  SKYDB_ASSIGN_OR_RETURN(auto launcher, env.app_launchers->Fork(setup));
  SKYDB_RETURN_IF_ERROR(launcher->AwaitReady(std::chrono::seconds(10)));
  return launcher;
}

}  // namespace

int RunDaemon(Env& env, const DaemonOptions& options) {
  auto started = env.clock->Now();
  // First of all: the parent is taken hold of before it can be missed (daemon/parent_watch.h).
  std::optional<Result<std::unique_ptr<ParentWatch>>> parent;
  if (options.exit_with_parent) parent = ParentWatch::Open(options.parent_pid);
  // Before any thread starts, so that every thread inherits the mask and only sigwait sees them.
  sigset_t set = HandledSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  Status logging = InitLogging(options.config.log_level, options.config.log_format);
  if (!logging.ok()) {
    std::fprintf(stderr, "skydb: %s\n", logging.error().message.c_str());
    return 2;
  }
  if (parent && !parent->ok()) {
    spdlog::info("--exit-with-parent: {}; not starting", parent->error().message);
    return 0;
  }
  {
    // PostgreSQL would crash-loop on a socket path past the limit; the store could not listen.
    Config absolute = options.config;
    absolute.data_dir = AbsolutePath(absolute.data_dir);
    bool embedded =
        absolute.store.database_url.empty() && absolute.store.kind != StoreKind::kMemory;
    auto problems = SocketPathProblems(absolute, embedded);
    for (const auto& problem : problems) spdlog::error("skydb cannot start: {}", problem);
    if (!problems.empty()) return 2;
  }
  if (options.ready_fd != -1) {
    if (Status fd = CheckReadyFd(options.ready_fd); !fd.ok()) {
      spdlog::error("skydb cannot start: {}", fd.error().message);
      return 2;
    }
  }
  RaiseOpenFileLimit(static_cast<uint64_t>(options.config.resp.max_clients));
  std::unique_ptr<AppLauncher> launcher;
  ClusterUser app_user;
  if (!options.app.empty()) {
    auto forked = ForkLauncher(env, options.config, app_user);
    if (!forked.ok()) {
      spdlog::error("skydb cannot start the app: {}", forked.error().message);
      return forked.error().code == ErrorCode::kInvalidArgument ? 2 : 1;
    }
    launcher = std::move(forked).value();
  }
  Status dropped = DropRootForGood(env, options.config);
  if (!dropped.ok()) {
    spdlog::error("skydb cannot start: {}", dropped.error().message);
    return 1;
  }
  if (parent && !(**parent)->Start()) {
    spdlog::info("--exit-with-parent: the parent (pid {}) is already gone; not starting",
                 (**parent)->parent());
    return 0;
  }
  ReadyGate gate(*env.notifier);
  Env lifecycle_env = env;
  if (launcher) lifecycle_env.notifier = &gate;
  std::unique_ptr<AppRunner> app;
  std::unique_ptr<LineReader> app_output;
  LifecycleOptions lifecycle_options{options.config, nullptr};
  lifecycle_options.on_ready = [&](const ReadyInfo& info) {
    if (options.ready_fd != -1) WriteReadyLine(options.ready_fd, ReadyLine(options.config, info));
    if (app) app->OnReady(AppProcessEnvironment(info.environment, app_user.user));
  };
  Lifecycle lifecycle(lifecycle_env, std::move(lifecycle_options),
                      NewDatabaseSource(lifecycle_env, options.config, options.profile));
  if (launcher) {
    // The app's environment comes with READY (ReadyInfo::environment); a contract that could
    // not be made at all is refused now, before anything starts.
    if (auto contract = AppEnvironmentFor(options.config); !contract.ok()) {
      spdlog::error("skydb cannot start the app: {}", contract.error().message);
      return 2;
    }
    AppRunnerOptions run;
    run.argv = options.app;
    run.user = app_user.user.name;
    run.restart = options.config.app.restart;
    run.stop_timeout = options.config.app.stop_timeout;
    run.skydb_started = started;
    run.request_stop = [&lifecycle] { lifecycle.RequestStop(); };
    run.on_exec = [&gate] { gate.Open(); };
    app = std::make_unique<AppRunner>(*launcher, std::move(run), *env.clock);
    int output = launcher->TakeOutput();
    app_output = std::make_unique<LineReader>(
        output, [tag = app->tag()](std::string_view line) { spdlog::info("{}: {}", tag, line); });
  }
  std::thread signals([&] { SignalLoop(lifecycle, options.reload_config, app.get()); });
  int status = lifecycle.Run();
  if (app) app->Stop();
  ::pthread_kill(signals.native_handle(), kQuitSignal);
  signals.join();
  if (app && status == 0 && app->exit_status()) status = *app->exit_status();
  // The launcher exits once the socket closes, and with it the last writer of the app's output.
  app.reset();
  launcher.reset();
  if (app_output) app_output->WaitClosed(std::chrono::seconds(2));
  return status;
}

}  // namespace skydb::daemon
