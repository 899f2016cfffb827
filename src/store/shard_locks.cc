#include "store/shard_locks.h"

#include <algorithm>
#include <cstdlib>

#include "store/memory_tier.h"

namespace skydb::store {

ShardLocks::ShardLocks(MemoryTier& tier, const std::vector<std::string>& keys)
    : ShardLocks(tier, keys, false) {}

ShardLocks::ShardLocks(MemoryTier& tier, const std::vector<std::string>& keys, bool all)
    : tier_(tier) {
  if (!all) {
    for (const auto& key : keys) held_.push_back(ShardOf(KeyHash(key)));
    std::sort(held_.begin(), held_.end());
    held_.erase(std::unique(held_.begin(), held_.end()), held_.end());
  } else {
    held_.reserve(kShardCount);
    for (int i = 0; i < kShardCount; ++i) held_.push_back(i);
  }
  Lock();
}

ShardLocks::~ShardLocks() {
  for (auto it = held_.rbegin(); it != held_.rend(); ++it) tier_.ShardAt(*it).mu.native().unlock();
}

void ShardLocks::Lock() {
  for (int index : held_) tier_.ShardAt(index).mu.native().lock();
}

void ShardLocks::Holds(const Shard& shard) const {
  if (all()) return;
  for (int index : held_) {
    if (&tier_.ShardAt(index) == &shard) return;
  }
  std::abort();  // a store bug: a shard touched without its lock
}

}  // namespace skydb::store
