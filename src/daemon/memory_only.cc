// `skydb serve --store memory`: the Redis-protocol listener over a memory-only store, no
// PostgreSQL. For tests and demos; the banner says, loudly, that nothing survives a restart.
#include <signal.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <cerrno>

#include "daemon/daemon.h"
#include "daemon/observing.h"
#include "daemon/serving.h"
#include "skydb/supervisor.h"

namespace skydb::daemon {

Status PrepareRunDir(const std::string& data_dir) {
  for (const std::string& dir : {data_dir, data_dir + "/run"}) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
      if ((st.st_mode & 0022) != 0) {
        return Error::Permission(dir + " is writable by group or others; chmod go-w " + dir);
      }
      continue;
    }
    if (::mkdir(dir.c_str(), 0700) != 0) return ErrnoError("cannot create " + dir, errno);
  }
  return Ok();
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
