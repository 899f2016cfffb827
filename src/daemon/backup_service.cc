#include "daemon/backup_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "skydb/backup.h"
#include "skydb/data_dir_layout.h"
#include "skydb/status_file.h"

namespace skydb::daemon {
namespace {

constexpr auto kBackupRetryCap = std::chrono::minutes(10);

std::chrono::milliseconds RetryDelay(std::chrono::milliseconds schedule) {
  return std::min<std::chrono::milliseconds>(schedule, kBackupRetryCap);
}

}  // namespace

BackupCluster BackupClusterOf(Supervisor& supervisor) {
  return {[&supervisor] { return supervisor.Snapshot().state == SupervisorState::kReady; },
          [&supervisor] { return supervisor.SocketDir(); }};
}

BackupService::BackupService(const Config& config, Env& env, BackupCluster cluster,
                             std::chrono::milliseconds tick)
    : config_(config), env_(env), cluster_(std::move(cluster)), tick_(tick) {
  {
    MutexLock lock(mu_);
    policy_ = config_.backup;
    status_.repository = config_.backup.repository;
    status_.schedule = config_.backup.schedule;
    if (auto backups = ListBackups(*env_.fs, config_.backup.repository);
        backups.ok() && !backups->empty()) {
      status_.last_success_time = backups->back().end_time;
      status_.last_size_bytes = backups->back().bytes;
    }
  }
  if (tick_.count() > 0) thread_ = std::thread([this] { Loop(); });
}

BackupService::~BackupService() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

BackupStatus BackupService::Status() const {
  MutexLock lock(mu_);
  return status_;
}

void BackupService::SetPolicy(const BackupConfig& fresh) {
  {
    MutexLock lock(mu_);
    if (policy_.schedule == fresh.schedule && policy_.retain_count == fresh.retain_count &&
        policy_.retain_age == fresh.retain_age && policy_.compression == fresh.compression) {
      return;
    }
    policy_.schedule = fresh.schedule;
    policy_.retain_count = fresh.retain_count;
    policy_.retain_age = fresh.retain_age;
    policy_.compression = fresh.compression;
    status_.schedule = fresh.schedule;
  }
  spdlog::info(
      "backup: schedule = {}, retain_count = {}, retain_age = {}, compression = {} from now on",
      FormatDuration(fresh.schedule), fresh.retain_count, FormatDuration(fresh.retain_age),
      CompressionName(fresh.compression));
}

void BackupService::Loop() {
  MutexLock lock(mu_);
  while (!stop_) {
    lock.Unlock();
    Tick();
    lock.Lock();
    if (!stop_) cv_.WaitFor(mu_, tick_);  // a timed wait: the tick reads no clock
  }
}

void BackupService::Tick() {
  WatchArchiver();
  auto now = env_.clock->WallNow();
  BackupConfig policy;
  bool due = false;
  {
    MutexLock lock(mu_);
    policy = policy_;
    auto newest =
        std::chrono::system_clock::time_point(std::chrono::seconds(status_.last_success_time));
    due = policy.schedule.count() > 0 && now >= newest + policy.schedule &&
          (!failed_at_ || now >= *failed_at_ + RetryDelay(policy.schedule));
  }
  if (due && cluster_.ready()) TakeScheduled(policy);
}

// One WARNING when archiving starts failing (with archive-wal's reason), one line when it works
// again; never a line per retry.
void BackupService::WatchArchiver() {
  std::string failure = ReadArchiveFailure(*env_.fs, ArchiveFailureFile(config_.data_dir));
  MutexLock lock(mu_);
  if (failure == status_.archive_failure) return;
  if (!failure.empty()) {
    spdlog::warn(
        "WAL archiving into {} is failing: {} (skydb_wal_archive_pending_segments counts the "
        "backlog in pg_wal)",
        config_.backup.repository, failure);
  } else {
    spdlog::info("WAL archiving into {} works again; PostgreSQL archives the backlog now",
                 config_.backup.repository);
  }
  status_.archive_failure = failure;
}

// What pg_basebackup needs, from the supervisor's status file (the binaries, port and role).
Result<BackupTarget> BackupService::TargetFor(const BackupConfig& policy) const {
  const DataDirLayout layout = DataDirLayout::For(config_.data_dir);
  SKYDB_ASSIGN_OR_RETURN(std::string text, env_.fs->ReadFile(layout.status_file));
  SKYDB_ASSIGN_OR_RETURN(supervisor::StatusRecord record, supervisor::ParseStatusJson(text));
  BackupTarget target;
  target.bin_dir = record.bin_dir;
  target.pgdata = layout.pgdata;
  target.socket_dir = cluster_.socket_dir();
  target.port = record.port;
  target.superuser = record.superuser;
  target.repository = config_.backup.repository;
  target.retain_count = policy.retain_count;
  target.retain_age = policy.retain_age;
  target.compression = policy.compression;
  return target;
}

void BackupService::TakeScheduled(const BackupConfig& policy) {
  {
    MutexLock lock(mu_);
    status_.running = true;
  }
  spdlog::info("backup: taking the scheduled base backup into {}", config_.backup.repository);
  auto started = env_.clock->Now();
  auto target = TargetFor(policy);
  auto info = target.ok() ? TakeBackup(*target, env_) : Result<BackupInfo>(target.error());
  double seconds = std::chrono::duration<double>(env_.clock->Now() - started).count();
  MutexLock lock(mu_);
  status_.running = false;
  if (info.ok()) {
    failed_at_.reset();
    ++status_.successes;
    status_.last_success_time = info->end_time;
    status_.last_duration_seconds = seconds;
    status_.last_size_bytes = info->bytes;
    status_.last_error.clear();
    spdlog::info("backup: {} taken and verified, {} bytes in {:.1f} s", info->path, info->bytes,
                 seconds);
  } else {
    failed_at_ = env_.clock->WallNow();
    ++status_.failures;
    status_.last_error = info.error().message;
    spdlog::error(
        "backup: the scheduled base backup failed: {}; retrying in {} s", info.error().message,
        std::chrono::duration_cast<std::chrono::seconds>(RetryDelay(policy.schedule)).count());
  }
}

}  // namespace skydb::daemon
