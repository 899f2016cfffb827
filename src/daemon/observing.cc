#include "daemon/observing.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "daemon/run_dir.h"
#include "skydb/app_env.h"
#include "skydb/data_dir_layout.h"

#ifndef SKYDB_VERSION_TEXT
#define SKYDB_VERSION_TEXT "0.0.0"
#endif

namespace skydb::daemon {
namespace {

constexpr auto kHealthTick = std::chrono::milliseconds(250);
constexpr auto kPingEvery = std::chrono::seconds(1);

}  // namespace

HttpOptions HttpOptionsFrom(const Config& config) {
  HttpOptions o;
  o.bind = config.http.bind;
  o.port = static_cast<int>(config.http.port);
  o.allow_remote = config.http.allow_remote;
  if (!config.http.listen.empty() && config.http.listen != "tcp") {
    o.unix_path = DataDirLayout::For(config.data_dir).InRun(config.http.listen);
    // The config table accepts only octal modes up to 0777.
    o.unix_mode = static_cast<uint32_t>(std::strtoul(config.http.socket_mode.c_str(), nullptr, 8));
    o.unix_group = config.http.socket_group;
  }
  return o;
}

Observing::Observing(const Config& config, ObservedParts parts, Env& env)
    : config_(config), parts_(parts), env_(env), service_(*env.notifier, *env.clock) {
  MutexLock lock(backups_mu_);
  backup_policy_ = config_.backup;
}

Observing::~Observing() { Stop(); }

Status Observing::Start() {
  HttpOptions options = HttpOptionsFrom(config_);
  if (config_.http.tls) options.tls = parts_.tls;
  if (options.enabled()) {
    // A relative http.listen names a socket under DATA_DIR/run, which a first embedded start
    // has not made yet (the supervisor makes it later, and keeps what it finds if it is safe).
    bool under_run = !options.unix_path.empty() && config_.http.listen.front() != '/';
    if (under_run) SKYDB_RETURN_IF_ERROR(PrepareRunDir(env_, config_));
    HttpHandlers handlers{[this] { return RenderPrometheusText(DaemonFamilies(Observe())); },
                          [this] { return CurrentReadiness(); },
                          [this] { return StatusJson(Observe()); }};
    SKYDB_ASSIGN_OR_RETURN(http_, NewHttpEndpoints(options, std::move(handlers)));
  } else {
    spdlog::info("http: endpoints off (http.port = 0)");
  }
  health_ = std::thread([this] { HealthLoop(); });
  return Ok();
}

void Observing::Stop() {
  {
    MutexLock lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.NotifyAll();
  if (health_.joinable()) health_.join();
  if (http_) http_->Shutdown();
  poller_view_ = nullptr;
  poller_.reset();
  MutexLock lock(backups_mu_);
  backups_view_ = nullptr;
  backups_.reset();
}

void Observing::StartPostgresPolling(const std::string& conninfo) {
  if (poller_) return;
  PollerOptions options;
  options.conninfo = conninfo;
  options.clock = env_.clock;
  poller_ = StartPostgresPoller(options);
  poller_view_ = poller_.get();
  Supervisor* supervisor = parts_.source->supervisor();
  if (supervisor != nullptr && !config_.backup.repository.empty()) {
    MutexLock lock(backups_mu_);
    Config config = config_;
    config.data_dir = AbsolutePath(config_.data_dir);
    config.backup = backup_policy_;
    backups_ = std::make_unique<BackupService>(config, env_, BackupClusterOf(*supervisor));
    backups_view_ = backups_.get();
  }
}

void Observing::StopPostgresPolling() {
  if (PostgresPoller* poller = poller_view_.load()) poller->Stop();
}

void Observing::Reload(const Config& fresh) {
  MutexLock lock(backups_mu_);
  // The repository is the one archive_mode was started with: it changes only at a restart.
  backup_policy_.schedule = fresh.backup.schedule;
  backup_policy_.retain_count = fresh.backup.retain_count;
  backup_policy_.retain_age = fresh.backup.retain_age;
  backup_policy_.compression = fresh.backup.compression;
  if (backups_) backups_->SetPolicy(backup_policy_);
}

int Observing::http_port() const { return http_ && http_socket().empty() ? http_->port() : 0; }

std::string Observing::http_socket() const { return HttpOptionsFrom(config_).unix_path; }

Readiness Observing::CurrentReadiness() const {
  if (Supervisor* supervisor = parts_.source->supervisor()) {
    SupervisorState state = supervisor->Snapshot().state;
    if (state != SupervisorState::kReady) {
      return {false, std::string("PostgreSQL is not ready (") + SupervisorStateName(state) + ")"};
    }
  }
  if (!parts_.clients->StoreStatsNow()) return {false, "the session store is not open"};
  return {true, "ready"};
}

ObservedState Observing::Observe() const {
  ObservedState s;
  s.version = SKYDB_VERSION_TEXT;
  s.mode = parts_.source->mode();
  s.readiness = CurrentReadiness();
  s.store = parts_.clients->StoreStatsNow();
  s.store_description = parts_.clients->StoreDescription();
  s.resp = parts_.clients->RespStatsNow();
  s.settings = parts_.source->settings();
  s.memory.skydb_rss_bytes = ReadSelfRss(*env_.fs);
  s.process = ReadProcessFigures(*env_.fs);
  if (auto contract = AppEnvironmentFor(config_); contract.ok()) {
    s.store_socket = *contract->Find("SKY_LIVE_STORE_PATH");
    if (const std::string* url = contract->Find("DATABASE_URL")) {
      s.app_database_url = RedactedDatabaseUrl(*url);
    }
  }
  if (Supervisor* supervisor = parts_.source->supervisor()) {
    s.cluster = supervisor->Snapshot();
    s.postgres_answers = postgres_answers_.load();
    if (s.cluster->postgres_pid > 0) {
      auto tree = ReadProcessTreePss(*env_.fs, s.cluster->postgres_pid);
      if (tree.ok()) {
        s.memory.postgres_pss_bytes = tree->pss_bytes;
        s.memory.postgres_processes = tree->processes;
      }
    }
  }
  if (PostgresPoller* poller = poller_view_.load()) {
    s.postgres = poller->Latest();
    s.postgres_poll_failures = poller->failures();
  }
  if (BackupService* backups = backups_view_.load()) s.backup = backups->Status();
  return s;
}

// Every tick: sample the state and let the service notifier decide what systemd hears. The
// ping (at most once a second) may block up to libpq's connect_timeout when PostgreSQL hangs;
// then no WATCHDOG=1 is sent, which is the point.
void Observing::HealthLoop() {
  Clock::TimePoint last_ping{};
  MutexLock lock(mu_);
  while (!stop_) {
    lock.Unlock();
    ServiceObservation o;
    o.store_open = parts_.clients->StoreStatsNow().has_value();
    o.postgres_answers = true;
    if (Supervisor* supervisor = parts_.source->supervisor()) {
      SupervisorSnapshot snap = supervisor->Snapshot();
      o.cluster = snap.state;
      auto now = env_.clock->Now();
      if (snap.state != SupervisorState::kReady) {
        postgres_answers_ = false;
      } else if (last_ping == Clock::TimePoint{} || now - last_ping >= kPingEvery) {
        last_ping = now;
        postgres_answers_ = env_.pg->PingServer(supervisor->ConnInfo() + " connect_timeout=2") ==
                            PgProbe::Ping::kOk;
      }
      o.postgres_answers = postgres_answers_.load();
    }
    service_.Tick(o);
    lock.Lock();
    // A timed wait, not a clock read: the next tick comes early only if woken for the stop.
    if (!stop_) cv_.WaitFor(mu_, kHealthTick);
  }
}

}  // namespace skydb::daemon
