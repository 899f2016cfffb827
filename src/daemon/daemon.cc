#include "daemon/daemon.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <mutex>
#include <thread>

#include "daemon/observing.h"
#include "daemon/open_files.h"
#include "daemon/serving.h"
#include "skydb/bundle.h"
#include "skydb/discovery.h"
#include "skydb/durable.h"
#include "skydb/log.h"
#include "skydb/process.h"
#include "skydb/schema.h"
#include "skydb/supervisor.h"

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

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// PostgreSQL's stderr, tagged, at a level that matches its severity.
void ForwardPostgresLine(std::string_view line) {
  auto has = [&](const char* word) { return line.find(word) != std::string_view::npos; };
  if (has("PANIC:") || has("FATAL:")) {
    spdlog::error("postgres: {}", line);
  } else if (has("ERROR:") || has("WARNING:")) {
    spdlog::warn("postgres: {}", line);
  } else {
    spdlog::info("postgres: {}", line);
  }
}

std::string SettingValue(const Settings& settings, const char* name) {
  const Setting* s = settings.Find(name);
  return s != nullptr ? s->value : "?";
}

struct Plan {
  Candidate binaries;
  HostFacts host;
  Settings settings;
  ClusterUser cluster_user;
};

Result<Plan> MakePlan(const Config& config, Profile profile, FileSystem& fs,
                      ProcessRunner& runner) {
  Plan plan;
  SKYDB_ASSIGN_OR_RETURN(plan.cluster_user,
                         ResolveClusterUser(::geteuid(), config.run_as_user, LookupUserByUid,
                                            LookupUser));
  SKYDB_ASSIGN_OR_RETURN(auto options,
                         DiscoveryOptionsFromConfig(config.postgres, GetEnv("SKY_POSTGRES_BIN"),
                                                    GetEnv("PATH")));
  SKYDB_ASSIGN_OR_RETURN(auto bundle, BundleSlotFor(config.postgres.bundle,
                                                    AbsolutePath(config.data_dir), fs,
                                                    /*extract=*/true));
  options.bundle = bundle.get();
  SKYDB_ASSIGN_OR_RETURN(auto report, DiscoverBinaries(options, fs, runner));
  if (!report.chosen || !report.chosen->version) {
    return Error::NotFound("no usable PostgreSQL binaries were found; run skydb doctor");
  }
  plan.binaries = *report.chosen;
  SKYDB_ASSIGN_OR_RETURN(plan.host, ReadHostFacts(fs, SchedAffinityCpuCount(), config.host));
  plan.settings = Tune(plan.host, profile, config.postgres.settings);
  return plan;
}

std::string Banner(const Plan& plan, const std::string& data_dir, const std::string& socket_dir,
                   const SupervisorSnapshot& snap, Profile profile) {
  return "skydb ready: PostgreSQL " + snap.server_version + " (binaries " +
         plan.binaries.bin_dir + " from " + BinarySourceName(plan.binaries.source) + ": " +
         plan.binaries.origin + "), data dir " + data_dir + ", socket " + socket_dir +
         "/.s.PGSQL.5432, cluster user " + plan.cluster_user.user.name + ", profile " +
         ProfileName(profile) + ", shared_buffers=" + SettingValue(plan.settings,
                                                                   "shared_buffers") +
         ", max_connections=" + SettingValue(plan.settings, "max_connections") +
         ", store_pool=" + SettingValue(plan.settings, "store_pool");
}

class Daemon {
 public:
  explicit Daemon(const DaemonOptions& options) : options_(options) {}
  int Run();

 private:
  void SignalLoop();
  void Reload();

  DaemonOptions options_;
  std::unique_ptr<FileSystem> fs_ = NewRealFileSystem();
  std::unique_ptr<Clock> clock_ = NewRealClock();
  std::unique_ptr<ProcessRunner> runner_ = NewRealProcessRunner();
  std::unique_ptr<ChildLauncher> launcher_ = NewRealChildLauncher();
  std::unique_ptr<HostOps> host_ = NewRealHostOps();
  std::unique_ptr<PgProbe> probe_ = NewRealPgProbe();
  std::unique_ptr<Notifier> notifier_ = NewSystemdNotifier();
  std::unique_ptr<Supervisor> supervisor_;
  std::unique_ptr<Serving> serving_;
  std::unique_ptr<Observing> observing_;
  std::atomic<bool> serving_failed_{false};
  std::mutex config_mu_;  // guards options_.config across SIGHUPs
};

int Daemon::Run() {
  Config& config = options_.config;
  config.data_dir = AbsolutePath(config.data_dir);
  auto plan = MakePlan(config, options_.profile, *fs_, *runner_);
  if (!plan.ok()) {
    spdlog::error("skydb cannot start: {}", plan.error().message);
    return 1;
  }
  SupervisorOptions sup;
  sup.data_dir = config.data_dir;
  sup.bin_dir = plan->binaries.bin_dir;
  sup.binaries_major = plan->binaries.version->major;
  sup.binaries_version = plan->binaries.version->text;
  sup.cluster_user = plan->cluster_user;
  sup.settings_conf = RenderConf(plan->settings);
  sup.timing = config.supervisor;
  sup.migrations = AllMigrations();
  bool fallback = options_.profile == Profile::kDev && config.store.allow_memory_fallback;
  serving_ = std::make_unique<Serving>(config, *clock_, fallback);
  SupervisorEnv env{fs_.get(), clock_.get(), runner_.get(), launcher_.get(), host_.get(),
                    probe_.get(), ForwardPostgresLine, nullptr};
  bool first_ready = true;
  env.on_ready = [&](const SupervisorSnapshot& snap) {
    if (first_ready) {
      Status opened = serving_->Open(supervisor_->ConnInfo(),
                                     "private cluster " + supervisor_->SocketDir(),
                                     plan->settings.pools);
      if (!opened.ok() && serving_->stopped()) {
        // SIGTERM arrived while the store was opening: a requested stop, not a failure.
        spdlog::info("stop requested before the session store was open");
        first_ready = false;
        return;
      }
      if (!opened.ok() &&
          probe_->PingServer(supervisor_->ConnInfo()) != PgProbe::Ping::kOk) {
        // PostgreSQL died between ready and the store's open: the supervisor restarts it,
        // and the store opens at the next ready instead of the daemon giving up.
        spdlog::warn("the session store could not open ({}); PostgreSQL stopped answering, so "
                     "it opens once PostgreSQL is ready again",
                     opened.error().message);
        return;
      }
      if (!opened.ok()) {
        spdlog::error("skydb cannot serve sessions: {}", opened.error().message);
        serving_failed_ = true;
        supervisor_->RequestStop();
        first_ready = false;
        return;
      }
      spdlog::info("{}; {}", Banner(*plan, config.data_dir, supervisor_->SocketDir(), snap,
                                    options_.profile),
                   serving_->Describe());
      observing_->StartPostgresPolling(supervisor_->ConnInfo());
      // The listener accepts connections now: only now may systemd call the service started.
      observing_->service().Ready("serving sessions: " + serving_->Describe());
    } else {
      spdlog::info("PostgreSQL is ready again after restart {}", snap.restarts);
    }
    first_ready = false;
  };
  supervisor_ = NewSupervisor(std::move(sup), std::move(env));
  ObservedParts parts{ProfileName(options_.profile), supervisor_.get(), probe_.get(),
                      serving_.get(), plan->settings};
  observing_ = std::make_unique<Observing>(config, std::move(parts), *notifier_, *clock_);
  Status observing = observing_->Start();
  if (!observing.ok()) {
    spdlog::error("skydb cannot start: {}", observing.error().message);
    return 1;
  }
  std::thread signals([this] { SignalLoop(); });
  Status status = supervisor_->Run();
  observing_->service().Stopping();  // no-op after SIGTERM
  ::pthread_kill(signals.native_handle(), kQuitSignal);
  signals.join();
  serving_->Stop(std::chrono::seconds(1), std::chrono::seconds(5));  // no-op after SIGTERM
  observing_->Stop();
  if (serving_failed_) return 1;
  if (!status.ok()) {
    spdlog::error("skydb failed: {}", status.error().message);
    return 1;
  }
  spdlog::info("skydb stopped cleanly");
  return 0;
}

void Daemon::SignalLoop() {
  sigset_t set = HandledSignals();
  while (true) {
    int sig = 0;
    if (::sigwait(&set, &sig) != 0) continue;
    if (sig == kQuitSignal) return;
    if (sig == SIGHUP) {
      Reload();
      continue;
    }
    spdlog::info("received {}: closing the listener, flushing the store, then stopping "
                 "PostgreSQL (fast shutdown)",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
    observing_->service().Stopping();
    serving_->Stop(std::chrono::seconds(5), options_.config.supervisor.stop_timeout);
    supervisor_->RequestStop();
  }
}

void Daemon::Reload() {
  if (!options_.reload_config) return;
  observing_->service().Reloading();
  // READY=1 again however the reload ends: the daemon keeps serving either way.
  struct Reloaded {
    ServiceNotifier& service;
    ~Reloaded() { service.Reloaded(); }
  } reloaded{observing_->service()};
  auto fresh = options_.reload_config();
  if (!fresh.ok()) {
    spdlog::error("SIGHUP: configuration not reloaded: {}", fresh.error().message);
    return;
  }
  std::lock_guard lock(config_mu_);
  fresh->data_dir = options_.config.data_dir;  // the directory never changes under a daemon
  ConfigChange change = DiffConfig(options_.config, *fresh);
  for (const auto& key : change.need_restart) {
    spdlog::warn("SIGHUP: {} changed but is not reloadable; it applies at the next start", key);
  }
  // Keys that need a restart keep their running values until then.
  fresh->supervisor.start_timeout = options_.config.supervisor.start_timeout;
  fresh->supervisor.stop_timeout = options_.config.supervisor.stop_timeout;
  fresh->host = options_.config.host;
  auto host = ReadHostFacts(*fs_, SchedAffinityCpuCount(), fresh->host);
  if (!host.ok()) {
    spdlog::error("SIGHUP: {}", host.error().message);
    return;
  }
  Settings settings = Tune(*host, options_.profile, fresh->postgres.settings);
  spdlog::set_level(spdlog::level::from_str(fresh->log_level));
  supervisor_->RequestReload({RenderConf(settings), fresh->supervisor});
  options_.config = *fresh;
  spdlog::info("SIGHUP: configuration re-read ({} key(s) changed)", change.changed.size());
}

}  // namespace

int RunDaemon(const DaemonOptions& options) {
  // Before any thread starts, so that every thread inherits the mask and only sigwait sees them.
  sigset_t set = HandledSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  Status logging = InitLogging(options.config.log_level, options.config.log_format);
  if (!logging.ok()) {
    std::fprintf(stderr, "skydb: %s\n", logging.error().message.c_str());
    return 2;
  }
  RaiseOpenFileLimit(static_cast<uint64_t>(options.config.resp.max_clients));
  if (options.config.store.kind == "memory") return RunMemoryOnly(options);
  if (!options.config.store.database_url.empty()) return RunExternal(options);
  Daemon daemon(options);
  return daemon.Run();
}

}  // namespace skydb::daemon
