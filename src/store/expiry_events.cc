// The memory tier's side of keyspace notifications: which expired keys (and, in a memory-only
// store, hashes with expired fields) are collected, and handing them to the ExpiryListener
// outside every shard lock.
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

bool MemoryTier::WantsExpiredFields() const {
  MutexLock lock(listener_mu_);
  return listener_ != nullptr && listener_->WantsExpiredFields();
}

void MemoryTier::DropExpiredFields(Shard& shard, Entry& e, UnixMillis now) {
  Collection& c = *e.collection;
  if (c.next_field_deadline == 0 || c.next_field_deadline > now) return;
  c.next_field_deadline = 0;
  bool dropped = false;
  for (auto it = c.fields.begin(); it != c.fields.end();) {
    UnixMillis deadline = it->second.expires_at;
    if (deadline != 0 && deadline <= now) {
      CollectionResized(e, -static_cast<int64_t>(it->first.size() + it->second.value.size() +
                                                 kFieldOverheadBytes));
      it = c.fields.erase(it);
      dropped = true;
    } else {
      c.NoteFieldDeadline(deadline);
      ++it;
    }
  }
  if (dropped && !options_.evictable && WantsExpiredFields()) {
    shard.expired_fields.push_back(ExpiredFields{*e.key, c.fields.empty()});
  }
}

void MemoryTier::AnnounceExpired(std::vector<std::string> swept,
                                 std::vector<ExpiredFields> swept_fields) {
  std::vector<std::string> keys = std::move(swept);
  std::vector<ExpiredFields> hashes = std::move(swept_fields);
  for (Shard& shard : shards_) {
    MutexLock lock(shard.mu);
    keys.insert(keys.end(), std::make_move_iterator(shard.expired.begin()),
                std::make_move_iterator(shard.expired.end()));
    shard.expired.clear();
    hashes.insert(hashes.end(), std::make_move_iterator(shard.expired_fields.begin()),
                  std::make_move_iterator(shard.expired_fields.end()));
    shard.expired_fields.clear();
  }
  if (keys.empty() && hashes.empty()) return;
  MutexLock lock(listener_mu_);
  if (listener_ == nullptr) return;
  if (!keys.empty()) listener_->Expired(keys);
  if (!hashes.empty()) listener_->FieldsExpired(hashes);
}

}  // namespace skydb::store
