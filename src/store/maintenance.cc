// The store's maintenance thread: the memory sweep (expiry, idle and memory-cap eviction)
// every store sweep interval, and the expiry sweep in PostgreSQL in small statements.
#include <spdlog/spdlog.h>

#include "store/tiered_store.h"

namespace skydb::store {
namespace {

// Deleting rows this long after their persisted deadline leaves room for a queued deadline
// extension that PostgreSQL has not seen yet (an outage shorter than this loses nothing).
constexpr int64_t kDurableSweepGraceMs = 5 * 60 * 1000;
constexpr int kDurableSweepRoundsPerTick = 20;
// Expired keys announced per maintenance tick at most (shared coherence); more in one second
// than this are not announced.
constexpr int kExpiredPerTick = 10000;

}  // namespace

void TieredStore::MaintenanceLoop(Clock::TimePoint next_durable) {
  while (true) {
    {
      MutexLock lock(maintenance_mu_);
      if (!stopping_) maintenance_cv_.WaitFor(maintenance_mu_, options_.memory.sweep_interval);
      if (stopping_) return;
    }
    tier_.Sweep();
    tier_.AnnounceExpired(ExpiredInDurable());
    if (durable_ && clock_.Now() >= next_durable) {
      SweepDurable();
      coherence_->AfterDurableSweep();
      next_durable = clock_.Now() + options_.durable_sweep_interval;
    }
  }
}

std::vector<std::string> TieredStore::ExpiredInDurable() {
  if (!durable_ || !tier_.AnnouncesFromDurable()) {
    if (durable_) durable_->StopAnnouncing();
    announced_until_ = 0;  // the next announcer starts from its own now
    return {};
  }
  UnixMillis now = tier_.WallMs();
  if (announced_until_ == 0 || announced_until_ > now) announced_until_ = now;
  auto keys = durable_->ExpiredBetween(announced_until_, now, kExpiredPerTick);
  if (!keys.ok()) {
    spdlog::warn("store: reading expired keys for keyspace events failed: {}",
                 keys.error().message);
    return {};
  }
  announced_until_ = now;
  return std::move(keys).value();
}

void TieredStore::SweepDurable() {
  UnixMillis cutoff = tier_.WallMs() - kDurableSweepGraceMs;
  for (int round = 0; round < kDurableSweepRoundsPerTick; ++round) {
    {
      MutexLock lock(maintenance_mu_);
      if (stopping_) return;
    }
    auto deleted = durable_->SweepExpired(cutoff, options_.durable_sweep_batch);
    if (!deleted.ok()) {
      spdlog::warn("store: expiry sweep in PostgreSQL failed: {}", deleted.error().message);
      return;
    }
    if (*deleted < options_.durable_sweep_batch) return;
  }
}

}  // namespace skydb::store
