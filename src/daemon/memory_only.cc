// `skydb serve --store memory`: the Redis-protocol listener over a memory-only store, no
// PostgreSQL. For tests and demos; the banner says, loudly, that nothing survives a restart.
#include <signal.h>

#include <spdlog/spdlog.h>

#include "daemon/daemon.h"
#include "daemon/observing.h"
#include "daemon/serving.h"
#include "skydb/supervisor.h"
#include "supervisor/data_dir.h"

namespace skydb::daemon {

Status PrepareRunDir(const std::string& data_dir) {
  // The same rules as --embed (src/supervisor/data_dir.h): a skydb data dir, 0700, run/ 0700.
  auto fs = NewRealFileSystem();
  auto layout = supervisor::DataDirLayout::For(data_dir);
  SKYDB_RETURN_IF_ERROR(supervisor::PrepareRoot(*fs, layout.root));
  return supervisor::EnsurePrivateDir(*fs, layout.run);
}

Result<std::shared_ptr<void>> PrepareAndLockRunDir(const std::string& data_dir) {
  SKYDB_RETURN_IF_ERROR(PrepareRunDir(data_dir));
  // One daemon per DIR, as with --embed: `skydb status` reads the same lock.
  return NewRealHostOps()->LockExclusive(data_dir + "/skydb.lock");
}

int RunMemoryOnly(const DaemonOptions& options) {
  const Config& config = options.config;
  auto dir_lock = PrepareAndLockRunDir(config.data_dir);
  if (!dir_lock.ok()) {
    spdlog::error("skydb cannot start: {}", dir_lock.error().message);
    return 1;
  }
  auto clock = NewRealClock();
  auto notifier = NewSystemdNotifier();
  Serving serving(config, *clock, false);
  Observing observing(config, {"memory", nullptr, nullptr, &serving, std::nullopt}, *notifier,
                      *clock);
  Status started = observing.Start();
  if (!started.ok()) {
    spdlog::error("skydb cannot start: {}", started.error().message);
    return 1;
  }
  Status opened = serving.Open("", "memory", Pools{});
  if (!opened.ok()) {
    spdlog::error("skydb cannot start: {}", opened.error().message);
    return 1;
  }
  spdlog::warn("skydb ready: MEMORY-ONLY store (store.kind = memory): nothing written survives "
               "a restart; {}", serving.Describe());
  observing.service().Ready("serving sessions from a MEMORY-ONLY store: " + serving.Describe());
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  while (true) {
    int sig = 0;
    if (::sigwait(&set, &sig) != 0) continue;
    if (sig == SIGHUP) {
      observing.service().Reloading();
      spdlog::info("SIGHUP: a memory-only daemon has nothing to reload");
      observing.service().Reloaded();
      continue;
    }
    break;
  }
  spdlog::info("stopping: closing the listener");
  observing.service().Stopping();
  serving.Stop(std::chrono::seconds(5), std::chrono::seconds(5));
  observing.Stop();
  spdlog::info("skydb stopped cleanly");
  return 0;
}

}  // namespace skydb::daemon
