// MemoryTier: the store's memory — the sharded key index, cached values and their LRU,
// deadlines, the session count, and eviction. It does no I/O and owns no thread: operations
// call it under a shard's lock, the committer's results arrive through OnCommitted, and the
// store's maintenance thread calls Sweep.
//
// Invariants it keeps: count() is the number of live entries; expiring() those with a
// deadline; an entry with an uncommitted write (dirty) is never evicted; a key whose delete is
// not committed reads as absent and names the delete's waiter, so a sync reply can wait for it.
//
// Thread-safety: methods taking a Shard& require that shard's mutex; the others take the locks
// they need. No callback is ever run under a shard lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/sliced_counters.h"
#include "skydb/durable.h"
#include "skydb/env.h"
#include "skydb/store.h"
#include "store/shard.h"
#include "store/shard_locks.h"

namespace skydb::store {

using Row = std::optional<DurableValue>;

struct TierOptions {
  MemoryTierOptions memory;
  bool evictable = false;        // values may leave memory: a durable layer holds them
  bool retain_committed = true;  // false (shared coherence): committed entries leave memory
};

// What a lookup found, for an operation about to report on or change a key.
struct Found {
  Entry* entry = nullptr;  // the live entry; null: the key is absent
  // The waiter of an uncommitted change the answer reflects (a dirty entry's write, a queued
  // delete, a write whose deadline already passed); null when the key's state is committed.
  std::shared_ptr<Waiter> pending;
};

struct TierCounters {
  std::atomic<uint64_t> hits{0}, misses{0}, evictions_idle{0}, evictions_memory{0};
  std::atomic<uint64_t> expirations{0};
};

class MemoryTier {
 public:
  MemoryTier(const TierOptions& options, Clock& clock);

  const TierOptions& options() const { return options_; }
  // store.max_memory (0: no cap), which CONFIG SET maxmemory may change while the store runs.
  uint64_t max_memory_bytes() const { return max_memory_bytes_.load(std::memory_order_relaxed); }
  void set_max_memory_bytes(uint64_t bytes) {
    max_memory_bytes_.store(bytes, std::memory_order_relaxed);
  }
  Shard& ShardFor(uint64_t hash) { return shards_[ShardOf(hash)]; }
  Shard& ShardAt(int index) { return shards_[index]; }
  UnixMillis WallMs() const;
  int64_t SteadyMs() const;

  // --- under the shard's lock ---
  Found Lookup(Shard& shard, const std::string& key, UnixMillis now) REQUIRES(shard.mu) {
    return Lookup(shard, HashedKey{key, KeyHash(key)}, now);
  }
  Found Lookup(Shard& shard, const HashedKey& key, UnixMillis now) REQUIRES(shard.mu);
  void CountHitInPlace(Shard& shard) REQUIRES(shard.mu) { AddAsOnlyWriter(shard.hits_in_place, 1); }
  uint64_t hits() const;  // counters().hits and every shard's hits_in_place
  // Shared coherence: `row` was just read from PostgreSQL. This store's own uncommitted write
  // or queued delete wins (it is newer); otherwise the row replaces any older copy in memory.
  Found LookupWithRow(Shard& shard, const std::string& key, UnixMillis now, const Row& row)
      REQUIRES(shard.mu);
  Entry& Insert(Shard& shard, const std::string& key) REQUIRES(shard.mu);
  // Removes the live entry of `key`; with `seq` != 0 the delete is queued for the durable layer
  // and the key stays a pending delete until it commits.
  void Remove(Shard& shard, const std::string& key, uint64_t seq, std::shared_ptr<Waiter> inflight)
      REQUIRES(shard.mu);
  void SetDeadline(Shard& shard, Entry& e, UnixMillis deadline) REQUIRES(shard.mu);
  // A string's value, or a hash's or set's fields: the entry becomes that type, cached.
  void SetValue(Shard& shard, Entry& e, SharedValue value) REQUIRES(shard.mu);
  void SetCollection(Shard& shard, Entry& e, ValueType type, std::unique_ptr<Collection> collection)
      REQUIRES(shard.mu);
  // A cached collection grew or shrank by `delta` bytes (a field written or removed).
  void CollectionResized(Entry& e, int64_t delta);
  // A value read from PostgreSQL, whatever its type.
  void Install(Shard& shard, Entry& e, const DurableValue& row) REQUIRES(shard.mu);
  // An access: refreshes idleness and, for clean cached values, the LRU position.
  void Touch(Shard& shard, Entry& e) REQUIRES(shard.mu);
  // A write with `seq` is queued: the value may not leave memory until it commits.
  void MarkDirty(Shard& shard, Entry& e, uint64_t seq, std::shared_ptr<Waiter> inflight)
      REQUIRES(shard.mu);
  bool HasPendingDelete(Shard& shard, const std::string& key) REQUIRES(shard.mu);
  // A new version for `e` (a write, or a new entry for its key).
  void Changed(Shard& shard, Entry& e) REQUIRES(shard.mu) { e.version = ++shard.last_version; }
  // The version a load of `key`'s evicted value is asked at; 0 when there is nothing to load
  // (absent, or its value is in memory).
  uint64_t EvictedVersion(Shard& shard, const std::string& key, UnixMillis now) REQUIRES(shard.mu);
  // A load of an evicted value, asked at `version`, came back with `row`: the value is cached if
  // the entry is still at that version with its value evicted (a fill never replaces a newer
  // committed or in-flight value); a key PostgreSQL no longer has is dropped.
  void Fill(Shard& shard, const std::string& key, uint64_t version, const Row& row)
      REQUIRES(shard.mu);
  // FLUSHALL: every entry and pending delete leaves memory; returns how many keys were live.
  int64_t ClearAll(const ShardLocks& all);

  // --- taking the locks themselves ---
  // The durable layer committed `key` up to `seq`.
  void OnCommitted(const HashedKey& key, uint64_t seq);
  // At start: a key of the durable index (value not loaded).
  void AddIndexed(std::string key, UnixMillis expires_at, ValueType type);
  // Expired entries, idle values (evictable tiers) and, past the memory cap, LRU values.
  void Sweep();
  void EvictForMemory();
  bool OverMemoryCap() const;
  ScanReply Scan(uint64_t cursor, const std::string& pattern, size_t count,
                 std::optional<ValueType> type = std::nullopt);

  // Keyspace notifications (expiry_events.cc): the listener of expired keys; with exclusive
  // coherence the keys that expire in memory are collected while it wants them, and
  // AnnounceExpired (the maintenance thread) hands them over, with `swept` (with shared
  // coherence, the keys PostgreSQL's rows say expired). Never called under a shard lock.
  void SetExpiryListener(std::shared_ptr<ExpiryListener> listener);
  void AnnounceExpired(std::vector<std::string> swept, std::vector<ExpiredFields> swept_fields);
  // Shared coherence, with a listener that wants expired keys: they come from PostgreSQL.
  bool AnnouncesFromDurable() const;
  // The listener wants hashes whose fields expired (from PostgreSQL when there is a durable
  // layer; a memory-only store collects them in DropExpiredFields).
  bool WantsExpiredFields() const;
  // Drops `e`'s (a hash's or set's, in memory) fields whose own deadline passed: durably they
  // are past it too, so nothing is written.
  void DropExpiredFields(Shard& shard, Entry& e, UnixMillis now) REQUIRES(shard.mu);

  int64_t count() const { return count_.load(); }
  int64_t expiring() const { return expiring_.load(); }
  uint64_t memory_bytes() const { return memory_bytes_.load(); }
  uint64_t cached_values() const { return cached_values_.load(); }
  TierCounters& counters() { return counters_; }
  const TierCounters& counters() const { return counters_; }

 private:
  bool IsExpired(const Entry& e, UnixMillis now) const {
    return e.expires_at != 0 && e.expires_at <= now;
  }
  void EraseLocked(Shard& shard, KeyMap<Entry>::iterator it) REQUIRES(shard.mu);
  // An expired entry leaves memory; if its write is still queued it becomes a pending delete.
  void ExpireLocked(Shard& shard, KeyMap<Entry>::iterator it) REQUIRES(shard.mu);
  void LruRemove(Shard& shard, Entry& e) REQUIRES(shard.mu);
  void LruPushNewest(Shard& shard, Entry& e) REQUIRES(shard.mu);
  void DropValueLocked(Shard& shard, Entry& e) REQUIRES(shard.mu);
  bool CollectsExpired() const;

  TierOptions options_;
  std::atomic<uint64_t> max_memory_bytes_;
  Clock& clock_;
  std::vector<Shard> shards_;
  std::atomic<int64_t> count_{0};
  std::atomic<int64_t> expiring_{0};
  std::atomic<uint64_t> memory_bytes_{0};
  std::atomic<uint64_t> cached_values_{0};
  std::atomic<size_t> evict_cursor_{0};
  TierCounters counters_;
  mutable Mutex listener_mu_;  // a leaf: taken under shard locks, takes none
  std::shared_ptr<ExpiryListener> listener_ GUARDED_BY(listener_mu_);
};

}  // namespace skydb::store
