// Starting, watching, restarting, reloading and stopping the postmaster.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "base/strings.h"
#include "pgconn/pgconn.h"
#include "skydb/status_file.h"
#include "supervisor/postmaster_pid.h"
#include "supervisor/supervisor_impl.h"

namespace skydb::supervisor {
namespace {

constexpr size_t kRecentLogLines = 8;
// A crashed postmaster's backends hold the old shared memory until they notice and exit; the
// new postmaster refuses to start while they do. They share its stderr pipe, so EOF on it
// means they are all gone.
constexpr auto kOldBackendsGrace = std::chrono::seconds(10);
// Readiness may be extended while the server says it is starting or recovering, up to this
// many times start_timeout in all.
constexpr int kMaxStartExtensions = 10;

int64_t EpochSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

SupervisorImpl::SupervisorImpl(SupervisorOptions options, SupervisorEnv env)
    : options_(std::move(options)),
      env_(std::move(env)),
      layout_(DataDirLayout::For(options_.data_dir)),
      policy_(options_.timing, *env_.clock) {
  // The OS users peer-mapped to the app's role: the cluster user (child mode) and the app's.
  const std::string& superuser = options_.cluster_user.user.name;
  std::vector<std::string>& users = options_.app.os_users;
  users = {superuser};
  for (const std::string& os_user : options_.app_os_users) {
    if (os_user != superuser && os_user != "root") users.push_back(os_user);
  }
}

SupervisorImpl::~SupervisorImpl() = default;

std::string SupervisorImpl::ConnInfo() const {
  return pg::UnixSocketConnInfo(layout_.run, options_.port, options_.cluster_user.user.name,
                                options_.database);
}

void SupervisorImpl::RequestStop() { stop_requested_ = true; }

void SupervisorImpl::RequestReload(SupervisorReload reload) {
  MutexLock lock(mu_);
  pending_reload_ = std::move(reload);
}

SupervisorSnapshot SupervisorImpl::Snapshot() const {
  MutexLock lock(mu_);
  return snap_;
}

Status SupervisorImpl::Run() {
  {
    MutexLock lock(mu_);
    snap_.started_at = env_.clock->WallNow();
  }
  SetState(SupervisorState::kInitializing);
  Status status = Prepare();
  if (status.ok()) status = Supervise();
  if (!status.ok()) {
    SetState(SupervisorState::kFailed, status.error().message);
    WriteStatusFile(status.error().message);
  }
  return status;
}

Status SupervisorImpl::Supervise() {
  while (true) {
    Result<StartOutcome> started = StartOnce();
    if (!started.ok()) {
      (void)StopPostmaster();
      return std::move(started).error();
    }
    if (*started == StartOutcome::kReady && !Watch()) return StopPostmaster();
    if (*started == StartOutcome::kStopRequested) return StopPostmaster();
    SKYDB_RETURN_IF_ERROR(OnUnexpectedExit());
    if (stop_requested_) {
      SetState(SupervisorState::kStopped);
      return Ok();
    }
  }
}

Result<SupervisorImpl::StartOutcome> SupervisorImpl::StartOnce() {
  SetState(SupervisorState::kStarting);
  out_of_space_since_start_ = false;
  ChildSpec spec;
  spec.argv = {options_.bin_dir + "/postgres", "-D", layout_.pgdata};
  if (options_.cluster_user.drop_privileges) spec.run_as = options_.cluster_user.user;
  spec.working_dir = layout_.pgdata;
  spec.parent_death_signal = SIGINT;  // fast shutdown if skydb dies without stopping it
  auto child =
      env_.launcher->Spawn(spec, [this](std::string_view line) { CapturePostgresLine(line); });
  if (!child.ok()) return std::move(child).error();
  child_ = std::move(child).value();
  {
    MutexLock lock(mu_);
    snap_.postgres_pid = child_->pid();
  }
  WriteStatusFile();
  SKYDB_ASSIGN_OR_RETURN(StartOutcome outcome, WaitReady());
  if (outcome != StartOutcome::kReady) return outcome;
  if (Status prepared = Migrate(); !prepared.ok()) {
    if (stop_requested_) return StartOutcome::kStopRequested;
    // A step that failed because PostgreSQL went away is a crash like any other: restarted
    // with the backoff, and the preparation runs again. Only a server still answering has
    // refused the step itself.
    if (!LostDuringPreparation()) return std::move(prepared).error();
    spdlog::warn("PostgreSQL went away while skydb prepared it ({})", prepared.error().message);
    return StartOutcome::kExited;
  }
  policy_.OnReady();
  {
    MutexLock lock(mu_);
    snap_.ready_since = env_.clock->WallNow();
  }
  SetState(SupervisorState::kReady);
  if (env_.on_ready) env_.on_ready(Snapshot());
  return StartOutcome::kReady;
}

Result<SupervisorImpl::StartOutcome> SupervisorImpl::WaitReady() {
  const std::string conninfo = ConnInfo();
  auto deadline = env_.clock->Now() + options_.timing.start_timeout;
  int extensions = 0;
  while (true) {
    if (stop_requested_) return StartOutcome::kStopRequested;
    if (ChildExited()) return StartOutcome::kExited;
    PgProbe::Ping ping = PingQuietly(conninfo);
    if (ping == PgProbe::Ping::kOk) return StartOutcome::kReady;
    if (env_.clock->Now() >= deadline) {
      if (ping != PgProbe::Ping::kRejecting || ++extensions > kMaxStartExtensions) {
        return Error::Timeout("PostgreSQL did not accept connections on " + layout_.run +
                              " within " + FormatDuration(options_.timing.start_timeout) +
                              " (supervisor.start_timeout)" + RecentPostgresLog());
      }
      spdlog::info("PostgreSQL is still starting up or recovering; waiting another {}",
                   FormatDuration(options_.timing.start_timeout));
      deadline += options_.timing.start_timeout;
    }
    env_.clock->SleepFor(options_.tick);
  }
}

Status SupervisorImpl::Migrate() {
  SetState(SupervisorState::kMigrating);
  const std::string conninfo = ConnInfo();
  SKYDB_ASSIGN_OR_RETURN(std::string version, env_.probe->ServerVersion(conninfo));
  {
    MutexLock lock(mu_);
    snap_.server_version = version;
  }
  auto applied = env_.probe->Migrate(conninfo, options_.migrations);
  if (!applied.ok()) return std::move(applied).error().Within("schema migrations failed");
  if (*applied > 0) spdlog::info("applied {} schema migration(s)", *applied);
  SKYDB_RETURN_IF_ERROR(env_.probe->EnsureAppDatabase(conninfo, options_.app, options_.database));
  // The apps `skydb app add` made since the last start join the configured one in pg_hba.conf.
  AccessTarget access;
  access.pgdata = layout_.pgdata;
  access.superuser = options_.cluster_user.user.name;
  access.read = [this](const std::string& path) { return env_.fs->ReadFile(path); };
  access.write = [this](const std::string& path, const std::string& contents) {
    return WriteOwnedFile(path, contents);
  };
  Status synced = env_.probe->SyncAccess(conninfo, access);
  if (!synced.ok()) return std::move(synced).error().Within("the apps' access to PostgreSQL");
  return Ok();
}

bool SupervisorImpl::LostDuringPreparation() {
  // A fast shutdown ends the backends (failing the step) before the postmaster exits.
  auto deadline = env_.clock->Now() + options_.timing.stop_timeout;
  const std::string conninfo = ConnInfo();
  while (!ChildExited()) {
    if (stop_requested_ || env_.clock->Now() >= deadline) return false;
    if (PingQuietly(conninfo) == PgProbe::Ping::kOk) return false;
    env_.clock->SleepFor(options_.tick);
  }
  return true;
}

PgProbe::Ping SupervisorImpl::PingQuietly(const std::string& conninfo) {
  // Every refused connection attempt costs a FATAL line in PostgreSQL's log, so while
  // postmaster.pid says our postmaster is still starting (as pg_ctl -w reads it), do not ask.
  if (auto text = env_.fs->ReadFile(layout_.pgdata + "/postmaster.pid"); text.ok()) {
    auto file = ParsePostmasterPid(*text);
    if (file.ok() && file->pid == child_->pid() && file->status == "starting") {
      return PgProbe::Ping::kRejecting;
    }
  }
  return env_.probe->PingServer(conninfo);
}

bool SupervisorImpl::Watch() {
  while (!stop_requested_) {
    ApplyPendingReload();
    if (ChildExited()) return true;
    env_.clock->SleepFor(options_.tick);
  }
  return false;
}

bool SupervisorImpl::ChildExited() { return child_ && child_->TryWait().has_value(); }

Status SupervisorImpl::OnUnexpectedExit() {
  std::string how = child_->TryWait()->Describe();
  {
    MutexLock lock(mu_);
    snap_.postgres_pid = 0;
    snap_.last_exit = how;
  }
  spdlog::error("PostgreSQL exited unexpectedly ({})", how);
  // Its last lines (and its orphaned backends') must be read before deciding why it exited.
  bool output_closed = child_->WaitOutputClosed(kOldBackendsGrace);
  bool out_of_space = out_of_space_since_start_.exchange(false);
  RestartPolicy::Decision decision = policy_.OnCrash(out_of_space);
  if (decision.give_up) {
    return Error::Unavailable(decision.reason + "; last exit: " + how + RecentPostgresLog());
  }
  if (out_of_space) {
    SetState(SupervisorState::kBackoff,
             "PostgreSQL cannot write: the filesystem of " + options_.data_dir +
                 " is full (No space left on device); free space there. Retrying in " +
                 FormatDuration(decision.delay) + " (not counted as a crash)");
  } else {
    SetState(SupervisorState::kBackoff,
             "restarting in " + FormatDuration(decision.delay) + " (crash " +
                 std::to_string(decision.crashes_in_window) + " of at most " +
                 std::to_string(options_.timing.max_crashes) + " in the window)");
  }
  if (!output_closed) {
    spdlog::warn("processes of the old postmaster still run after {}; restarting anyway",
                 FormatDuration(kOldBackendsGrace));
  }
  if (!SleepUnlessStopped(decision.delay)) return Ok();
  MutexLock lock(mu_);
  ++snap_.restarts;
  return Ok();
}

bool SupervisorImpl::SleepUnlessStopped(Clock::Duration d) {
  auto until = env_.clock->Now() + d;
  while (env_.clock->Now() < until) {
    if (stop_requested_) return false;
    env_.clock->SleepFor(std::min<Clock::Duration>(options_.tick, until - env_.clock->Now()));
  }
  return !stop_requested_;
}

Status SupervisorImpl::StopPostmaster() {
  if (!child_ || child_->TryWait()) {
    SetState(SupervisorState::kStopped);
    return Ok();
  }
  SetState(SupervisorState::kStopping);
  (void)child_->Signal(SIGINT);  // fast shutdown: abort transactions, checkpoint, exit
  auto exited = child_->WaitFor(options_.timing.stop_timeout);
  if (!exited) {
    spdlog::warn(
        "PostgreSQL did not stop within {} (supervisor.stop_timeout); sending SIGQUIT "
        "(immediate shutdown: the next start will run crash recovery)",
        FormatDuration(options_.timing.stop_timeout));
    (void)child_->Signal(SIGQUIT);
    exited = child_->WaitFor(options_.timing.stop_timeout);
  }
  child_->WaitOutputClosed(std::chrono::seconds(2));  // let its last log lines through
  {
    MutexLock lock(mu_);
    snap_.postgres_pid = exited ? 0 : child_->pid();
  }
  if (!exited) {
    return Error::Timeout("PostgreSQL (pid " + std::to_string(child_->pid()) +
                          ") did not stop after SIGINT and SIGQUIT");
  }
  SetState(SupervisorState::kStopped);
  return Ok();
}

void SupervisorImpl::ApplyPendingReload() {
  std::optional<SupervisorReload> reload;
  {
    MutexLock lock(mu_);
    reload.swap(pending_reload_);
  }
  if (!reload) return;
  options_.timing = reload->timing;
  policy_.Reconfigure(options_.timing);
  options_.tls_cert_file = reload->tls_cert_file;
  options_.tls_key_file = reload->tls_key_file;
  // The files PostgreSQL reads at every start: a value it rejects must not stay there, or the
  // next crash restart (or any start) fails, again and again. The last good settings were the
  // ones rendered before.
  std::string last_good = std::exchange(options_.settings_conf, std::move(reload->settings_conf));
  Status applied = WriteSettingsFiles();
  if (applied.ok()) applied = CheckConfigFiles();
  if (!applied.ok()) {
    options_.settings_conf = std::move(last_good);
    Status restored = WriteSettingsFiles();
    spdlog::error(
        "reload: {}; the pinned settings ([postgres.settings]) were not applied: "
        "PostgreSQL keeps its previous settings{}; fix the cause above and reload again",
        applied.error().message,
        restored.ok() ? " and skydb.conf holds them again"
                      : ", but skydb.conf could not be restored: " + restored.error().message);
    return;
  }
  if (child_ && !child_->TryWait()) (void)child_->Signal(SIGHUP);
  spdlog::info(
      "reloaded: settings re-rendered and checked by PostgreSQL, PostgreSQL signalled to "
      "reload (settings that need a restart are reported by PostgreSQL and apply at the "
      "next start)");
}

void SupervisorImpl::SetState(SupervisorState s, const std::string& detail) {
  {
    MutexLock lock(mu_);
    if (snap_.state == s && detail.empty() && s != SupervisorState::kInitializing) return;
    snap_.state = s;
  }
  if (detail.empty()) {
    spdlog::info("supervisor state: {}", SupervisorStateName(s));
  } else {
    spdlog::info("supervisor state: {}: {}", SupervisorStateName(s), detail);
  }
  WriteStatusFile();
}

void SupervisorImpl::WriteStatusFile(const std::string& error) {
  // The caller holds DIR/skydb.lock (a refused second daemon never gets here).
  if (!env_.fs->IsDirectory(layout_.run)) return;
  StatusRecord r;
  {
    MutexLock lock(mu_);
    r.state = SupervisorStateName(snap_.state);
    r.started_at = EpochSeconds(snap_.started_at);
    r.ready_since =
        snap_.ready_since.time_since_epoch().count() == 0 ? 0 : EpochSeconds(snap_.ready_since);
    r.postgres_pid = snap_.postgres_pid;
    r.restarts = snap_.restarts;
    r.last_exit = snap_.last_exit;
    r.server_version = snap_.server_version;
  }
  r.daemon_pid = env_.host->SelfPid();
  r.updated_at = EpochSeconds(env_.clock->WallNow());
  r.data_dir = layout_.root;
  r.socket_dir = layout_.run;
  r.port = options_.port;
  r.bin_dir = options_.bin_dir;
  r.superuser = options_.cluster_user.user.name;
  r.database = options_.database;
  r.error = error;
  Status written = env_.fs->WriteFileAtomic(layout_.status_file, RenderStatusJson(r), 0644);
  if (!written.ok()) spdlog::warn("cannot write the status file: {}", written.error().message);
}

void SupervisorImpl::CapturePostgresLine(std::string_view line) {
  if (env_.postgres_log) env_.postgres_log(line);
  if (line.find("No space left on device") != std::string_view::npos)
    out_of_space_since_start_ = true;
  MutexLock lock(mu_);
  recent_log_.emplace_back(line);
  if (recent_log_.size() > kRecentLogLines) recent_log_.pop_front();
}

std::string SupervisorImpl::RecentPostgresLog() const {
  MutexLock lock(mu_);
  std::vector<std::string> picked;
  for (const auto& line : recent_log_) {
    bool severe = line.find("FATAL") != std::string::npos ||
                  line.find("PANIC") != std::string::npos ||
                  line.find("ERROR") != std::string::npos;
    std::string text(Trim(line));
    // Drop log_line_prefix's "[pid] " so that one message repeated by each crash shows once.
    if (auto close = text.find("] ");
        !text.empty() && text[0] == '[' && close != std::string::npos) {
      text = text.substr(close + 2);
    }
    if (severe && std::find(picked.begin(), picked.end(), text) == picked.end()) {
      picked.push_back(text);
    }
  }
  return picked.empty() ? "" : "; PostgreSQL said: " + Join(picked, " | ");
}

}  // namespace skydb::supervisor

namespace skydb {

std::unique_ptr<Supervisor> NewSupervisor(SupervisorOptions options, SupervisorEnv env) {
  return std::make_unique<supervisor::SupervisorImpl>(std::move(options), std::move(env));
}

}  // namespace skydb
