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
// Expired keys (shared coherence) and hashes with expired fields announced per maintenance
// tick at most; more in one second than this are not announced.
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
    AnnounceExpiries();
    if (durable_ && clock_.Now() >= next_durable) {
      SweepDurable();
      coherence_->AfterDurableSweep();
      next_durable = clock_.Now() + options_.durable_sweep_interval;
    }
  }
}

namespace {

// What `read` finds in (since, now], advancing `since`; `since` 0 (or ahead of this clock)
// starts the window now. A failure is logged and its window read again at the next tick.
template <typename T, typename Read>
std::vector<T> ReadWindow(UnixMillis& since, UnixMillis now, const char* what, Read read) {
  if (since == 0 || since > now) since = now;
  Result<std::vector<T>> found = read(since, now);
  if (!found.ok()) {
    spdlog::warn("store: reading {} for keyspace events failed: {}", what, found.error().message);
    return {};
  }
  since = now;
  return std::move(found).value();
}

}  // namespace

void TieredStore::AnnounceExpiries() {
  bool keys = durable_ && tier_.AnnouncesFromDurable();
  bool fields = durable_ && tier_.WantsExpiredFields();
  // One that stops lets go of its lock; the next announcer starts from its own now.
  if (!keys) announced_until_ = 0;
  if (!fields) fields_announced_until_ = 0;
  if (durable_ && !keys) durable_->StopAnnouncing(DurableBackend::Announcing::kExpiredKeys);
  if (durable_ && !fields) durable_->StopAnnouncing(DurableBackend::Announcing::kExpiredFields);
  UnixMillis now = tier_.WallMs();
  std::vector<std::string> expired;
  std::vector<ExpiredFields> hashes;
  if (keys) {
    expired = ReadWindow<std::string>(
        announced_until_, now, "expired keys", [&](UnixMillis after, UnixMillis upto) {
          return durable_->ExpiredBetween(after, upto, kExpiredPerTick);
        });
  }
  if (fields) {
    hashes = ReadWindow<ExpiredFields>(fields_announced_until_, now, "expired hash fields",
                                       [&](UnixMillis after, UnixMillis upto) {
                                         return durable_->FieldsExpiredBetween(after, upto,
                                                                               kExpiredPerTick);
                                       });
  }
  tier_.AnnounceExpired(std::move(expired), std::move(hashes));
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
