#include "daemon/lifecycle.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "daemon/app_access.h"
#include "daemon/observing.h"
#include "daemon/run_dir.h"
#include "skydb/app_env.h"
#include "skydb/data_dir_layout.h"
#include "skydb/log.h"
#include "tls/tls_context.h"

namespace skydb::daemon {

Lifecycle::Lifecycle(Env& env, LifecycleOptions options, std::unique_ptr<DatabaseSource> source,
                     std::unique_ptr<ClientService> clients)
    : env_(env),
      on_ready_(std::move(options.on_ready)),
      source_(std::move(source)),
      clients_(std::move(clients)),
      config_(std::move(options.config)) {
  Config config = ConfigNow();
  if (auto self = LookupUserByUid(env_.host->EffectiveUid()); self.ok()) {
    // A group that cannot be resolved stops the start in LockDataDir, with the reason.
    if (auto group = ResolveAppGroup(config, self->name); group.ok()) app_group_ = *group;
  }
  if (config.resp.tls || config.http.tls) tls_ = std::make_shared<TlsContext>();
  if (!clients_) {
    bool fallback = source_->mode() == "dev" && config.store.allow_memory_fallback;
    clients_ = std::make_unique<Serving>(config, *env_.clock, fallback,
                                         app_group_ ? app_group_->name : "", tls_);
  }
  // Built before any thread can call RequestStop, so that it is always there to tell.
  observing_ =
      std::make_unique<Observing>(config, ObservedParts{source_.get(), clients_.get(), tls_}, env_);
}

Lifecycle::~Lifecycle() = default;

Config Lifecycle::ConfigNow() const {
  MutexLock lock(config_mu_);
  return config_;
}

Status Lifecycle::LockDataDir() {
  Config config = ConfigNow();
  SKYDB_RETURN_IF_ERROR(PrepareRunDir(env_, config));
  SKYDB_ASSIGN_OR_RETURN(dir_lock_,
                         env_.host->LockExclusive(DataDirLayout::For(config.data_dir).lock_file));
  return Ok();
}

// The certificate is read as the service user (root is gone by now), the same user that reads
// it again on SIGHUP. A listener that leaves the host without TLS is said loudly, every start.
Status Lifecycle::LoadTls() {
  Config config = ConfigNow();
  if (config.resp.tcp_port != 0 && config.resp.allow_remote && !config.resp.tls) {
    spdlog::warn(
        "resp.allow_remote = true WITHOUT resp.tls: the password and every session cross the "
        "network UNENCRYPTED to {}:{}; set resp.tls = true with tls.cert_file and tls.key_file",
        config.resp.bind, config.resp.tcp_port);
  }
  if (config.http.port != 0 && config.http.listen == "tcp" && config.http.allow_remote &&
      !config.http.tls) {
    spdlog::warn(
        "http.allow_remote = true WITHOUT http.tls: /metrics and /status cross the network "
        "UNENCRYPTED from {}:{}; set http.tls = true with tls.cert_file and tls.key_file",
        config.http.bind, config.http.port);
  }
  if (!tls_) return Ok();
  SKYDB_RETURN_IF_ERROR(tls_->Reload(config.tls, *env_.fs));
  spdlog::info("tls: {}", tls_->Describe());
  return Ok();
}

int Lifecycle::Run() {
  Status prepared = LockDataDir();
  if (prepared.ok()) prepared = LoadTls();
  if (prepared.ok()) prepared = source_->Prepare();
  if (!prepared.ok()) {
    spdlog::error("skydb cannot start: {}", prepared.error().message);
    return prepared.error().code == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  Status observed = observing_->Start();
  if (!observed.ok()) {
    spdlog::error("skydb cannot start: {}", observed.error().message);
    return 1;
  }
  Status ran = source_->Run([this](const DatabaseReady& ready) { OnDatabaseReady(ready); });
  observing_->service().Stopping();                                  // no-op after RequestStop
  clients_->Stop(std::chrono::seconds(1), std::chrono::seconds(5));  // no-op after RequestStop
  observing_->Stop();
  dir_lock_.reset();
  if (failed_) return 1;
  if (!ran.ok()) {
    spdlog::error("skydb failed: {}", ran.error().message);
    return 1;
  }
  spdlog::info("skydb stopped cleanly");
  return 0;
}

// Everything from "the database is ready" to READY, in one place. The branches are the three
// ways an open can fail: the stop came first, the database went away again (the supervisor
// restarts it and this runs again), or it really failed.
void Lifecycle::OnDatabaseReady(const DatabaseReady& ready) {
  if (!first_ready_) {
    spdlog::info("PostgreSQL is ready again after restart {}", ready.restarts);
    return;
  }
  Status opened = clients_->Open(ready.conninfo, ready.description, ready.pools);
  if (!opened.ok() && (clients_->stopped() || stopping_)) {
    spdlog::info("stop requested before the session store was open");
    first_ready_ = false;
    return;
  }
  if (!opened.ok() && !ready.conninfo.empty() && !source_->Answers()) {
    spdlog::warn(
        "the session store could not open ({}); PostgreSQL stopped answering, so it "
        "opens once PostgreSQL is ready again",
        opened.error().message);
    return;
  }
  first_ready_ = false;
  if (!opened.ok()) {
    spdlog::error("skydb cannot serve sessions: {}", opened.error().message);
    failed_ = true;
    source_->RequestStop();
    return;
  }
  // Before READY: a unit ordered after this one reads it as its EnvironmentFile=.
  // The app may run in another directory: its store socket is an absolute path.
  std::string socket = clients_->SocketPath();
  if (!socket.empty() && socket.front() != '/') socket = AbsolutePath(socket);
  Result<AppEnvironment> contract = AppEnvironmentFor(ready.app, socket);
  WriteAppEnvironment(contract);
  if (source_->mode() == "memory") {
    spdlog::warn(
        "skydb ready: MEMORY-ONLY store (store.kind = memory): nothing written "
        "survives a restart; {}",
        clients_->Describe());
    observing_->service().Ready("serving sessions from a MEMORY-ONLY store: " +
                                clients_->Describe());
  } else {
    spdlog::info("skydb ready: {}; {}", ready.banner, clients_->Describe());
    if (!ready.conninfo.empty() && source_->supervisor() != nullptr) {
      observing_->StartPostgresPolling(ready.conninfo);
    }
    // The listener accepts connections now: only now may systemd call the service started.
    observing_->service().Ready("serving sessions: " + clients_->Describe());
  }
  if (on_ready_) {
    ReadyInfo info;
    info.store_socket = clients_->SocketPath();
    if (contract.ok()) info.environment = *contract;
    info.database = ready.description;
    info.http_port = observing_->http_port();
    info.http_socket = observing_->http_socket();
    info.pid = ::getpid();
    on_ready_(info);
  }
}

// DIR/run/app.env: the connection contract (skydb/app_env.h) for a systemd EnvironmentFile=,
// and DIR/run/app.json, the same as JSON, which `skydb status` and `skydb env` read while the
// daemon runs (the caller's own configuration may differ); both readable by the app's group. A
// failure is logged, not fatal: the store already serves.
void Lifecycle::WriteAppEnvironment(const Result<AppEnvironment>& contract) {
  const auto layout = DataDirLayout::For(AbsolutePath(ConfigNow().data_dir));
  for (const auto& [path, render] : {std::pair{layout.app_env, &RenderSystemdEnvironment},
                                     std::pair{layout.app_json, &RenderJsonEnvironment}}) {
    Status written = contract.ok() ? env_.fs->WriteFileAtomic(path, render(*contract), 0640)
                                   : Status(contract.error());
    if (written.ok() && app_group_) {
      written = env_.host->Chown(path, env_.host->EffectiveUid(), app_group_->gid);
    }
    if (!written.ok()) spdlog::warn("cannot write {}: {}", path, written.error().message);
  }
}

void Lifecycle::RequestStop() {
  if (stopping_.exchange(true)) return;
  spdlog::info(
      "stopping: closing the listener, committing queued writes, then stopping the "
      "database");
  observing_->service().Stopping();
  clients_->Stop(std::chrono::seconds(5), ConfigNow().supervisor.stop_timeout);
  observing_->StopPostgresPolling();  // no poll fails on PostgreSQL's shutdown
  source_->RequestStop();
}

// New connections get the new certificate; those already up keep theirs. Files that do not load
// leave the running certificate in place.
void Lifecycle::ReloadTls(const TlsConfig& files) {
  if (!tls_) return;
  Status reloaded = tls_->Reload(files, *env_.fs);
  if (reloaded.ok()) {
    spdlog::info("SIGHUP: tls: {} (new connections; open ones keep theirs)", tls_->Describe());
  } else {
    spdlog::error("SIGHUP: tls: {}; the running certificate stays", reloaded.error().message);
  }
}

void Lifecycle::Reload(Result<Config> fresh) {
  observing_->service().Reloading();
  if (!fresh.ok()) {
    spdlog::error("SIGHUP: configuration not reloaded: {}", fresh.error().message);
  } else {
    MutexLock lock(config_mu_);
    fresh->data_dir = config_.data_dir;  // the directory never changes under a daemon
    ConfigChange change = DiffConfig(config_, *fresh);
    for (const auto& key : change.need_restart) {
      const ConfigKey* row = FindConfigKey(key);
      std::string why =
          row != nullptr && !row->restart_why.empty() ? " (" + row->restart_why + ")" : "";
      spdlog::warn("SIGHUP: {} changed but is not reloadable{}; it applies at the next start", key,
                   why);
    }
    // Keys that need a restart keep their running values until then.
    fresh->supervisor.start_timeout = config_.supervisor.start_timeout;
    fresh->supervisor.stop_timeout = config_.supervisor.stop_timeout;
    fresh->host = config_.host;
    fresh->backup.repository = config_.backup.repository;
    spdlog::set_level(spdlog::level::from_str(fresh->log_level));
    ReloadTls(fresh->tls);
    source_->Reload(*fresh);
    observing_->Reload(*fresh);
    config_ = *fresh;
    spdlog::info("SIGHUP: configuration re-read ({} key(s) changed)", change.changed.size());
  }
  // READY=1 again however the reload ended: the daemon keeps serving either way.
  observing_->service().Reloaded();
}

}  // namespace skydb::daemon
