// The memory tier's side of keyspace notifications: which expired keys are collected, and
// handing them to the ExpiryListener outside every shard lock.
//
// With exclusive coherence memory holds every live key, so a key expires exactly once, here
// (lazily on access or in the sweep). With shared coherence memory holds only this daemon's
// uncommitted writes; a key's expiry is then announced by the database's one sweeper from the
// rows whose deadline passed (TieredStore::ExpiredInDurable), once between the daemons.
#include "store/memory_tier.h"

namespace skydb::store {

void MemoryTier::SetExpiryListener(std::shared_ptr<ExpiryListener> listener) {
  MutexLock lock(listener_mu_);  // waits for an announcement in progress
  listener_ = std::move(listener);
}

bool MemoryTier::CollectsExpired() const {
  if (!options_.retain_committed) return false;
  MutexLock lock(listener_mu_);
  return listener_ != nullptr && listener_->WantsExpired();
}

bool MemoryTier::AnnouncesFromDurable() const {
  if (options_.retain_committed) return false;
  MutexLock lock(listener_mu_);
  return listener_ != nullptr && listener_->WantsExpired();
}

void MemoryTier::AnnounceExpired(std::vector<std::string> swept) {
  std::vector<std::string> keys = std::move(swept);
  for (Shard& shard : shards_) {
    MutexLock lock(shard.mu);
    if (shard.expired.empty()) continue;
    keys.insert(keys.end(), std::make_move_iterator(shard.expired.begin()),
                std::make_move_iterator(shard.expired.end()));
    shard.expired.clear();
  }
  if (keys.empty()) return;
  MutexLock lock(listener_mu_);
  if (listener_ != nullptr) listener_->Expired(keys);
}

}  // namespace skydb::store
