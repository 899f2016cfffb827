// The private cluster under DIR (`serve --embed`, `dev`): discovery → tuning → the supervisor,
// which runs, watches and restarts PostgreSQL and calls back each time it is ready.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "base/strings.h"
#include "daemon/app_access.h"
#include "daemon/database_source.h"
#include "daemon/run_dir.h"
#include "skydb/backup.h"
#include "skydb/bundle.h"
#include "skydb/discovery.h"
#include "skydb/durable.h"
#include "skydb/process.h"
#include "skydb/schema.h"
#include "supervisor/postgres_log.h"

namespace skydb::daemon {
namespace {

constexpr char kInstalledSkydb[] = "/usr/bin/skydb";

std::string SettingValue(const Settings& settings, const char* name) {
  const Setting* s = settings.Find(name);
  return s != nullptr ? s->value : "?";
}

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

class EmbeddedCluster final : public DatabaseSource {
 public:
  EmbeddedCluster(Env& env, const Config& config, Profile profile)
      : env_(env), config_(config), profile_(profile) {
    config_.data_dir = AbsolutePath(config_.data_dir);
  }

  std::string mode() const override { return ProfileName(profile_); }

  Status Prepare() override {
    SKYDB_ASSIGN_OR_RETURN(cluster_user_,
                           ResolveClusterUser(env_.host->EffectiveUid(), config_.run_as_user,
                                              LookupUserByUid, LookupUser));
    SKYDB_ASSIGN_OR_RETURN(
        auto options,
        DiscoveryOptionsFromConfig(config_.postgres, EnvOr("SKY_POSTGRES_BIN"), EnvOr("PATH")));
    SKYDB_ASSIGN_OR_RETURN(auto bundle, BundleSlotFor(config_.postgres.bundle, config_.data_dir,
                                                      *env_.fs, env_.bundle_output));
    options.bundle = bundle.get();
    SKYDB_ASSIGN_OR_RETURN(auto report, DiscoverBinaries(options, *env_.fs, *env_.runner));
    if (!report.chosen || !report.chosen->version) {
      return Error::NotFound("no usable PostgreSQL binaries were found; run skydb doctor");
    }
    binaries_ = *report.chosen;
    SKYDB_ASSIGN_OR_RETURN(HostFacts host,
                           ReadHostFacts(*env_.fs, SchedAffinityCpuCount(), config_.host));
    settings_ = Tune(host, profile_, config_.postgres.settings, AppPool(config_));
    if (!config_.backup.repository.empty()) {
      SKYDB_ASSIGN_OR_RETURN(archiver_, ArchiverBinary());
    }
    SupervisorOptions sup;
    sup.data_dir = config_.data_dir;
    sup.bin_dir = binaries_.bin_dir;
    sup.binaries_major = binaries_.version->major;
    sup.binaries_version = binaries_.version->text;
    sup.cluster_user = cluster_user_;
    sup.settings_conf = RenderConf(settings_) + ArchiveConf(config_);
    sup.timing = config_.supervisor;
    sup.migrations = AllMigrations();
    auto fsync = config_.postgres.settings.find("fsync");
    sup.sync_initdb = fsync == config_.postgres.settings.end() || fsync->second != "off";
    SKYDB_ASSIGN_OR_RETURN(AppAccess app,
                           ResolveAppAccess(*env_.fs, config_, cluster_user_.user.name));
    sup.app.database = config_.app.database;
    sup.app.role = config_.app.role;
    sup.app.password = app.password;
    sup.app.extensions = config_.app.extensions;
    // The app's pool and its three aux pools (docs/tuning.md): what the role may hold open, so
    // that the store's own connections are never crowded out.
    sup.app.connection_limit = settings_.pools.demand;
    // The store's pool and the headroom tuning keeps (docs/tuning.md): not for other apps.
    sup.app.skydb_connections = settings_.pools.store_pool + kConnectionHeadroom;
    if (app.user) sup.app_os_users.push_back(app.user->name);
    sup.shared_group = app.group;
    sup.tcp_bind = config_.postgres.tcp_bind;
    sup.tls_cert_file = config_.tls.cert_file;
    sup.tls_key_file = config_.tls.key_file;
    SupervisorEnv senv{env_.fs,   env_.clock, env_.runner, env_.launcher,
                       env_.host, env_.pg,    nullptr,     nullptr};
    // PostgreSQL's stderr, tagged, leveled and with its pid (supervisor/postgres_log.h).
    senv.postgres_log = [this](std::string_view line) {
      postgres_log_.Forward(line, stop_requested_.load());
    };
    senv.on_ready = [this](const SupervisorSnapshot& snap) { OnReady(snap); };
    supervisor_ = NewSupervisor(std::move(sup), std::move(senv));
    supervisor_view_ = supervisor_.get();
    return Ok();
  }

  Status Run(const std::function<void(const DatabaseReady&)>& ready) override {
    ready_ = ready;
    if (stop_requested_) return Ok();
    return supervisor_->Run();
  }

  void RequestStop() override {
    stop_requested_ = true;
    if (Supervisor* s = supervisor_view_.load()) s->RequestStop();
  }

  void Reload(const Config& fresh) override {
    Supervisor* s = supervisor_view_.load();
    if (s == nullptr) return;
    auto host = ReadHostFacts(*env_.fs, SchedAffinityCpuCount(), fresh.host);
    if (!host.ok()) {
      spdlog::error("SIGHUP: {}", host.error().message);
      return;
    }
    // archive_timeout reloads; the repository (archive_mode) stays the one PostgreSQL started
    // with until the next start.
    Config archive = fresh;
    archive.backup.repository = config_.backup.repository;
    s->RequestReload({RenderConf(Tune(*host, profile_, fresh.postgres.settings, AppPool(fresh))) +
                          ArchiveConf(archive),
                      fresh.supervisor, fresh.tls.cert_file, fresh.tls.key_file});
  }

  bool Answers() override {
    Supervisor* s = supervisor_view_.load();
    return s != nullptr && env_.pg->PingServer(s->ConnInfo()) == PgProbe::Ping::kOk;
  }

  Supervisor* supervisor() override { return supervisor_view_.load(); }
  std::optional<Settings> settings() const override {
    if (supervisor_view_.load() == nullptr) return std::nullopt;
    return settings_;  // written once in Prepare, before the view is published
  }

 private:
  // The skydb binary whose `archive-wal` PostgreSQL runs: this process when it is skydb; in an
  // app that links libskydb, the installed /usr/bin/skydb.
  Result<std::string> ArchiverBinary() const {
    auto self = env_.fs->RealPath("/proc/self/exe");
    if (self.ok() && StartsWith(std::filesystem::path(*self).filename().string(), "skydb")) {
      return *self;
    }
    if (env_.fs->IsExecutable(kInstalledSkydb)) return std::string(kInstalledSkydb);
    return Error::NotFound(
        "backup.repository is set, but this process (" + (self.ok() ? *self : "?") +
        ") is not the skydb binary and " + kInstalledSkydb +
        " is missing; PostgreSQL's archive_command runs `skydb archive-wal`: install the skydb "
        "package, or leave backup.repository empty");
  }

  // With a backup repository: archive every WAL segment into it through skydb's `archive-wal`
  // (docs/backup.md); its last failure lands in DIR/run for /status and metrics.
  std::string ArchiveConf(const Config& config) const {
    if (config.backup.repository.empty()) return "";
    return ArchiveSettingsConf(archiver_, config.backup.repository,
                               ArchiveFailureFile(config_.data_dir), config.backup.archive_timeout);
  }

  void OnReady(const SupervisorSnapshot& snap) {
    DatabaseReady r;
    r.conninfo = supervisor_->ConnInfo();
    r.description = "private cluster " + supervisor_->SocketDir();
    r.pools = settings_.pools;
    r.restarts = snap.restarts;
    r.app = {"", supervisor_->SocketDir(), config_.app.database, config_.app.role};
    r.banner = "PostgreSQL " + snap.server_version + " (binaries " + binaries_.bin_dir + " from " +
               BinarySourceName(binaries_.source) + ": " + binaries_.origin + "), data dir " +
               config_.data_dir + ", socket " + supervisor_->SocketDir() +
               "/.s.PGSQL.5432, cluster user " + cluster_user_.user.name + ", profile " +
               ProfileName(profile_) +
               ", shared_buffers=" + SettingValue(settings_, "shared_buffers") +
               ", max_connections=" + SettingValue(settings_, "max_connections") +
               ", store_pool=" + SettingValue(settings_, "store_pool");
    ready_(r);
  }

  Env& env_;
  Config config_;
  Profile profile_;
  ClusterUser cluster_user_;
  Candidate binaries_;
  Settings settings_;
  std::string archiver_;  // the skydb binary for archive_command, with a backup repository
  std::unique_ptr<Supervisor> supervisor_;
  std::atomic<Supervisor*> supervisor_view_{nullptr};
  std::atomic<bool> stop_requested_{false};
  supervisor::PostgresLogForwarder postgres_log_;
  std::function<void(const DatabaseReady&)> ready_;
};

}  // namespace

std::unique_ptr<DatabaseSource> NewEmbeddedCluster(Env& env, const Config& config,
                                                   Profile profile) {
  return std::make_unique<EmbeddedCluster>(env, config, profile);
}

}  // namespace skydb::daemon
