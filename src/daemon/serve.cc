#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <thread>

#include "daemon/daemon.h"
#include "daemon/lifecycle.h"
#include "daemon/open_files.h"
#include "daemon/privileges.h"
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

std::unique_ptr<DatabaseSource> SourceFor(Env& env, const DaemonOptions& options) {
  const Config& config = options.config;
  if (config.store.kind == StoreKind::kMemory) return NewNoDatabase(env, config);
  if (!config.store.database_url.empty()) return NewExternalDatabase(env, config);
  return NewEmbeddedCluster(env, config, options.profile);
}

void SignalLoop(Lifecycle& lifecycle, const std::function<Result<Config>()>& reload_config) {
  sigset_t set = HandledSignals();
  while (true) {
    int sig = 0;
    if (::sigwait(&set, &sig) != 0) continue;
    if (sig == kQuitSignal) return;
    if (sig == SIGHUP) {
      if (reload_config) lifecycle.Reload(reload_config());
      continue;
    }
    spdlog::info("received {}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    lifecycle.RequestStop();
  }
}

}  // namespace

int RunDaemon(Env& env, const DaemonOptions& options) {
  // Before any thread starts, so that every thread inherits the mask and only sigwait sees them.
  sigset_t set = HandledSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  Status logging = InitLogging(options.config.log_level, options.config.log_format);
  if (!logging.ok()) {
    std::fprintf(stderr, "skydb: %s\n", logging.error().message.c_str());
    return 2;
  }
  RaiseOpenFileLimit(static_cast<uint64_t>(options.config.resp.max_clients));
  Status dropped = DropRootForGood(env, options.config);
  if (!dropped.ok()) {
    spdlog::error("skydb cannot start: {}", dropped.error().message);
    return 1;
  }
  Lifecycle lifecycle(env, {options.config, nullptr}, SourceFor(env, options));
  std::thread signals([&] { SignalLoop(lifecycle, options.reload_config); });
  int status = lifecycle.Run();
  ::pthread_kill(signals.native_handle(), kQuitSignal);
  signals.join();
  return status;
}

}  // namespace skydb::daemon
