#include "daemon/backup_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "skydb/backup.h"
#include "skydb/status_file.h"

namespace skydb::daemon {
namespace {

constexpr auto kBackupTick = std::chrono::seconds(1);
constexpr auto kBackupRetryCap = std::chrono::minutes(10);

}  // namespace

BackupService::BackupService(const Config& config, Env& env, Supervisor& supervisor)
    : config_(config), env_(env), supervisor_(supervisor) {
  {
    MutexLock lock(mu_);
    status_.repository = config_.backup.repository;
    status_.schedule = config_.backup.schedule;
    if (auto backups = ListBackups(*env_.fs, config_.backup.repository);
        backups.ok() && !backups->empty()) {
      status_.last_success_time = backups->back().end_time;
      status_.last_size_bytes = backups->back().bytes;
    }
  }
  thread_ = std::thread([this] { Loop(); });
}

BackupService::~BackupService() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

BackupStatus BackupService::Status() const {
  MutexLock lock(mu_);
  return status_;
}

void BackupService::Loop() {
  auto next_try = std::chrono::system_clock::time_point{};
  MutexLock lock(mu_);
  while (!stop_) {
    lock.Unlock();
    WatchArchiver();
    auto now = env_.clock->WallNow();
    lock.Lock();
    auto schedule = config_.backup.schedule;
    auto due =
        std::chrono::system_clock::time_point(std::chrono::seconds(status_.last_success_time)) +
        schedule;
    bool take = schedule.count() > 0 && now >= due && now >= next_try &&
                supervisor_.Snapshot().state == SupervisorState::kReady;
    lock.Unlock();
    if (take) {
      TakeScheduled();
      next_try =
          env_.clock->WallNow() + std::min<std::chrono::milliseconds>(schedule, kBackupRetryCap);
    }
    lock.Lock();
    auto until = std::chrono::steady_clock::now() + kBackupTick;
    while (!stop_ && cv_.WaitUntil(mu_, until)) {
    }
  }
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

void BackupService::TakeScheduled() {
  auto text = env_.fs->ReadFile(config_.data_dir + "/run/skydb.status.json");
  auto record = text.ok() ? supervisor::ParseStatusJson(*text)
                          : Result<supervisor::StatusRecord>(text.error());
  if (!record.ok()) return;
  BackupTarget target;
  target.bin_dir = record->bin_dir;
  target.pgdata = config_.data_dir + "/pgdata";
  target.socket_dir = supervisor_.SocketDir();
  target.port = record->port;
  target.superuser = record->superuser;
  target.repository = config_.backup.repository;
  target.retain_count = config_.backup.retain_count;
  target.retain_age = config_.backup.retain_age;
  target.compression = config_.backup.compression;
  {
    MutexLock lock(mu_);
    status_.running = true;
  }
  spdlog::info("backup: taking the scheduled base backup into {}", target.repository);
  auto started = env_.clock->Now();
  auto info = TakeBackup(target, env_);
  double seconds = std::chrono::duration<double>(env_.clock->Now() - started).count();
  MutexLock lock(mu_);
  status_.running = false;
  if (info.ok()) {
    ++status_.successes;
    status_.last_success_time = info->end_time;
    status_.last_duration_seconds = seconds;
    status_.last_size_bytes = info->bytes;
    status_.last_error.clear();
    spdlog::info("backup: {} taken and verified, {} bytes in {:.1f} s", info->path, info->bytes,
                 seconds);
  } else {
    ++status_.failures;
    status_.last_error = info.error().message;
    spdlog::error("backup: the scheduled base backup failed: {}; retrying in {} s",
                  info.error().message,
                  std::chrono::duration_cast<std::chrono::seconds>(
                      std::min<std::chrono::milliseconds>(config_.backup.schedule, kBackupRetryCap))
                      .count());
  }
}

}  // namespace skydb::daemon
