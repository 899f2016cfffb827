// ShardLocks: the shards of the memory tier one operation holds, locked in index order (so
// operations on overlapping shard sets never deadlock) and released together when it goes out
// of scope.
//
// The thread-safety analysis cannot count a set of mutexes sized at run time, so the set is a
// capability of its own: a function that works on a held set requires it (REQUIRES(locks)),
// and code proves a shard's mutex with Holds(shard), which checks at run time that the shard is
// one of the set's (a set holds its shards from construction to destruction, never less). The
// member mutexes are taken through Mutex::native() for that reason only.
//
// Thread-safety: a ShardLocks belongs to the thread that made it. Internal to src/store.
#pragma once

#include <string>
#include <vector>

#include "store/shard.h"

namespace skydb::store {

class MemoryTier;

class CAPABILITY("shard set") ShardLocks {
 public:
  // The shards of `keys`.
  ShardLocks(MemoryTier& tier, const std::vector<std::string>& keys) ACQUIRE();
  // Every shard (FLUSHALL) when `all`, else the shards of `keys`.
  ShardLocks(MemoryTier& tier, const std::vector<std::string>& keys, bool all) ACQUIRE();
  ~ShardLocks() RELEASE();
  ShardLocks(const ShardLocks&) = delete;
  ShardLocks& operator=(const ShardLocks&) = delete;

  // `shard` is one of the set's (aborts otherwise), so its mutex is held for as long as this
  // set lives: the analysis takes it as held.
  void Holds(const Shard& shard) const ASSERT_CAPABILITY(shard.mu);
  bool all() const { return held_.size() == kShardCount; }

 private:
  void Lock();

  MemoryTier& tier_;
  std::vector<int> held_;  // shard indexes, ascending
};

}  // namespace skydb::store
