#include "store/memory_tier.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace skydb::store {
namespace {

uint64_t EntryBytes(const std::string& key, const Entry& e) {
  return kEntryOverheadBytes + key.size() + e.value_bytes();
}

}  // namespace

uint64_t KeyHash(std::string_view key) {
  // Eight bytes a step (a session key is 16-64 bytes; byte-wise FNV-1a cost ~5 instructions a
  // byte on every GET), then a 64-bit finaliser, so the top bits (the shard) are well mixed.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = 1469598103934665603ULL ^ (key.size() * kMul);
  const char* p = key.data();
  size_t n = key.size();
  auto mix = [&h](uint64_t word) {
    h = (h ^ word) * kMul;
    h ^= h >> 29;
  };
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    mix(word);
  }
  if (n > 0) {
    uint64_t word = 0;
    for (size_t i = 0; i < n; ++i) word |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    mix(word);
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

MemoryTier::MemoryTier(const TierOptions& options, Clock& clock)
    : options_(options),
      max_memory_bytes_(options.memory.max_memory_bytes),
      clock_(clock),
      shards_(kShardCount) {}

UnixMillis MemoryTier::WallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.WallNow().time_since_epoch())
      .count();
}

int64_t MemoryTier::SteadyMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch())
      .count();
}

uint64_t MemoryTier::hits() const {
  uint64_t sum = counters_.hits.load(std::memory_order_relaxed);
  for (const Shard& shard : shards_) sum += shard.hits_in_place.load(std::memory_order_relaxed);
  return sum;
}

Found MemoryTier::Lookup(Shard& shard, const HashedKey& key, UnixMillis now) {
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) {
    if (!IsExpired(it->second, now)) return {&it->second, it->second.inflight};
    std::shared_ptr<Waiter> pending = it->second.inflight;
    ExpireLocked(shard, it);
    return {nullptr, std::move(pending)};
  }
  auto deleted = shard.pending_deletes.find(key);
  if (deleted != shard.pending_deletes.end()) return {nullptr, deleted->second.inflight};
  return {};
}

Found MemoryTier::LookupWithRow(Shard& shard, const std::string& key, UnixMillis now,
                                const Row& row) {
  auto it = shard.entries.find(key);
  if (it != shard.entries.end() && it->second.dirty_seq != 0) return Lookup(shard, key, now);
  // A clean copy may be older than the row just read: it is replaced, never trusted.
  if (it != shard.entries.end()) EraseLocked(shard, it);
  auto deleted = shard.pending_deletes.find(key);
  if (deleted != shard.pending_deletes.end()) return {nullptr, deleted->second.inflight};
  if (!row.has_value() || (row->expires_at != 0 && row->expires_at <= now)) return {};
  Entry& e = Insert(shard, key);
  SetDeadline(shard, e, row->expires_at);
  e.persisted_expires_at = row->expires_at;
  Install(shard, e, *row);
  return {&e, nullptr};
}

Entry& MemoryTier::Insert(Shard& shard, const std::string& key) {
  auto [it, inserted] = shard.entries.try_emplace(key);
  Entry& e = it->second;
  if (inserted) {
    e.key = &it->first;
    Changed(shard, e);
    memory_bytes_ += EntryBytes(it->first, e);
    ++count_;
  }
  return e;
}

void MemoryTier::Remove(Shard& shard, const std::string& key, uint64_t seq,
                        std::shared_ptr<Waiter> inflight) {
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) EraseLocked(shard, it);
  if (seq != 0) shard.pending_deletes[key] = {seq, std::move(inflight)};
}

void MemoryTier::SetDeadline(Shard& /*shard*/, Entry& e, UnixMillis deadline) {
  if ((e.expires_at != 0) != (deadline != 0)) expiring_ += deadline != 0 ? 1 : -1;
  e.expires_at = deadline;
}

void MemoryTier::SetValue(Shard& shard, Entry& e, SharedValue value) {
  memory_bytes_ -= EntryBytes(*e.key, e);
  if (!e.cached()) ++cached_values_;
  e.collection.reset();
  e.type = ValueType::kString;
  e.value = std::move(value);
  memory_bytes_ += EntryBytes(*e.key, e);
  Touch(shard, e);
}

void MemoryTier::SetCollection(Shard& shard, Entry& e, ValueType type,
                               std::unique_ptr<Collection> collection) {
  memory_bytes_ -= EntryBytes(*e.key, e);
  if (!e.cached()) ++cached_values_;
  e.value.reset();
  e.type = type;
  e.collection = std::move(collection);
  memory_bytes_ += EntryBytes(*e.key, e);
  Touch(shard, e);
}

void MemoryTier::CollectionResized(Entry& e, int64_t delta) {
  e.collection->bytes = static_cast<uint64_t>(static_cast<int64_t>(e.collection->bytes) + delta);
  memory_bytes_ += static_cast<uint64_t>(delta);  // wraps back for a negative delta
}

void MemoryTier::Install(Shard& shard, Entry& e, const DurableValue& row) {
  if (row.type == ValueType::kString) return SetValue(shard, e, row.value);
  auto collection = std::make_unique<Collection>();
  for (const auto& f : row.fields) {
    collection->bytes += f.name.size() + f.value.size() + kFieldOverheadBytes;
    collection->fields.emplace(f.name, CollectionField{SharedValue(f.value), f.expires_at});
    collection->NoteFieldDeadline(f.expires_at);
  }
  SetCollection(shard, e, row.type, std::move(collection));
}

void MemoryTier::Touch(Shard& shard, Entry& e) {
  // Coarse: idle eviction counts in seconds, and the LRU's order is its list's, not the stamps'.
  e.last_access_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.CoarseNow().time_since_epoch())
          .count();
  if (!options_.evictable || e.dirty_seq != 0 || !e.cached()) return;
  LruRemove(shard, e);
  LruPushNewest(shard, e);
}

void MemoryTier::MarkDirty(Shard& shard, Entry& e, uint64_t seq, std::shared_ptr<Waiter> inflight) {
  if (seq == 0) return;  // memory-only: nothing is ever queued
  LruRemove(shard, e);
  e.dirty_seq = seq;
  e.inflight = std::move(inflight);
}

bool MemoryTier::HasPendingDelete(Shard& shard, const std::string& key) {
  auto it = shard.entries.find(key);
  if (it != shard.entries.end() && it->second.dirty_seq != 0) return false;
  return shard.pending_deletes.count(key) != 0;
}

void MemoryTier::OnCommitted(const HashedKey& key, uint64_t seq) {
  Shard& shard = ShardFor(key.hash);
  MutexLock lock(shard.mu);
  auto deleted = shard.pending_deletes.find(key);
  if (deleted != shard.pending_deletes.end() && deleted->second.seq <= seq) {
    shard.pending_deletes.erase(deleted);
  }
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || it->second.dirty_seq != seq) return;
  if (!options_.retain_committed) return EraseLocked(shard, it);  // PostgreSQL is the truth
  it->second.dirty_seq = 0;
  it->second.inflight.reset();
  Touch(shard, it->second);
}

uint64_t MemoryTier::EvictedVersion(Shard& shard, const std::string& key, UnixMillis now) {
  Found found = Lookup(shard, key, now);
  if (found.entry == nullptr || found.entry->cached()) return 0;
  return found.entry->version;
}

void MemoryTier::Fill(Shard& shard, const std::string& key, uint64_t version, const Row& row) {
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || it->second.cached() || it->second.version != version) return;
  if (row.has_value()) {
    Install(shard, it->second, *row);
  } else if (it->second.dirty_seq == 0) {
    // The index said live, the durable copy is gone (swept elsewhere): it is gone. The key is
    // a credential and is not logged.
    spdlog::warn("store: a key in the index was not in PostgreSQL; dropping it");
    EraseLocked(shard, it);
  }
}

void MemoryTier::AddIndexed(std::string key, UnixMillis expires_at, ValueType type) {
  Shard& shard = ShardFor(KeyHash(key));
  MutexLock lock(shard.mu);
  if (shard.entries.count(key) != 0) return;
  Entry& e = Insert(shard, key);
  e.type = type;
  SetDeadline(shard, e, expires_at);
  e.persisted_expires_at = expires_at;
}

int64_t MemoryTier::ClearAll(const ShardLocks& all) {
  if (!all.all()) std::abort();  // a store bug: FLUSHALL without every shard
  int64_t before = count_.load();
  for (auto& shard : shards_) {
    all.Holds(shard);
    while (!shard.entries.empty()) EraseLocked(shard, shard.entries.begin());
    shard.pending_deletes.clear();
  }
  return before;
}

void MemoryTier::EraseLocked(Shard& shard, KeyMap<Entry>::iterator it) {
  if (it->second.expires_at != 0) --expiring_;
  LruRemove(shard, it->second);
  memory_bytes_ -= EntryBytes(it->first, it->second);
  if (it->second.cached()) --cached_values_;
  shard.entries.erase(it);
  --count_;
}

void MemoryTier::ExpireLocked(Shard& shard, KeyMap<Entry>::iterator it) {
  if (it->second.dirty_seq != 0) {
    shard.pending_deletes[it->first] = {it->second.dirty_seq, it->second.inflight};
  }
  if (CollectsExpired()) shard.expired.push_back(it->first);
  EraseLocked(shard, it);
  ++counters_.expirations;
}

void MemoryTier::LruRemove(Shard& shard, Entry& e) {
  if (!e.in_lru) return;
  (e.lru_prev ? e.lru_prev->lru_next : shard.lru_oldest) = e.lru_next;
  (e.lru_next ? e.lru_next->lru_prev : shard.lru_newest) = e.lru_prev;
  e.lru_prev = e.lru_next = nullptr;
  e.in_lru = false;
}

void MemoryTier::LruPushNewest(Shard& shard, Entry& e) {
  e.lru_prev = shard.lru_newest;
  e.lru_next = nullptr;
  (shard.lru_newest ? shard.lru_newest->lru_next : shard.lru_oldest) = &e;
  shard.lru_newest = &e;
  e.in_lru = true;
}

void MemoryTier::DropValueLocked(Shard& shard, Entry& e) {
  LruRemove(shard, e);
  memory_bytes_ -= e.value_bytes();
  e.value.reset();
  e.collection.reset();
  --cached_values_;
}

void MemoryTier::Sweep() {
  UnixMillis now = WallMs();
  int64_t idle_before = SteadyMs() - options_.memory.idle_evict.count();
  bool idle_eviction = options_.evictable && options_.memory.idle_evict.count() > 0;
  for (auto& shard : shards_) {
    MutexLock lock(shard.mu);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      auto next = std::next(it);
      Entry& e = it->second;
      if (IsExpired(e, now)) {
        ExpireLocked(shard, it);
      } else if (e.collection != nullptr && !options_.evictable) {
        DropExpiredFields(shard, e, now);  // a memory-only store announces them from here
      } else if (!options_.retain_committed && it->second.dirty_seq == 0) {
        EraseLocked(shard, it);  // memory keeps only this store's uncommitted writes
      }
      it = next;
    }
    while (idle_eviction && shard.lru_oldest != nullptr) {
      Entry& e = *shard.lru_oldest;
      if (e.last_access_ms > idle_before) break;
      DropValueLocked(shard, e);
      ++counters_.evictions_idle;
    }
  }
  if (OverMemoryCap()) EvictForMemory();
}

bool MemoryTier::OverMemoryCap() const {
  uint64_t cap = max_memory_bytes();
  return options_.evictable && cap != 0 && memory_bytes_.load() > cap;
}

void MemoryTier::EvictForMemory() {
  // Approximate LRU: the least recent clean value of each shard in turn.
  size_t idle_shards = 0;
  while (OverMemoryCap() && idle_shards < shards_.size()) {
    Shard& shard = shards_[evict_cursor_++ % shards_.size()];
    MutexLock lock(shard.mu);
    if (shard.lru_oldest == nullptr) {
      ++idle_shards;
      continue;
    }
    idle_shards = 0;
    DropValueLocked(shard, *shard.lru_oldest);
    ++counters_.evictions_memory;
  }
}

ScanReply MemoryTier::Scan(uint64_t cursor, const std::string& pattern, size_t count,
                           std::optional<ValueType> type) {
  // Walks the key space in hash order; the cursor is the next hash to visit. Keys sharing a
  // hash are returned together, so a live key is never skipped.
  UnixMillis now = WallMs();
  ScanReply reply;
  size_t examined = 0;
  uint64_t pos = cursor;
  std::optional<uint64_t> last_hash;
  for (int s = ShardOf(pos); s < kShardCount; ++s) {
    std::vector<std::pair<uint64_t, std::string>> found;
    {
      MutexLock lock(shards_[s].mu);
      for (const auto& [key, entry] : shards_[s].entries) {
        uint64_t h = KeyHash(key);
        if (h >= pos && !IsExpired(entry, now) && (!type || entry.type == *type)) {
          found.emplace_back(h, key);
        }
      }
    }
    std::sort(found.begin(), found.end());
    for (auto& [hash, key] : found) {
      if (examined >= count && hash != last_hash) {
        reply.next_cursor = hash;
        return reply;
      }
      ++examined;
      last_hash = hash;
      if (pattern.empty() || GlobMatch(pattern, key)) reply.keys.push_back(std::move(key));
    }
    if (s + 1 < kShardCount) pos = static_cast<uint64_t>(s + 1) << (64 - kShardBits);
  }
  reply.next_cursor = 0;
  return reply;
}

}  // namespace skydb::store
