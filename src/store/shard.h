// The memory tier's shards: every live key's metadata, the values that are cached, and the
// keys whose delete is queued but not yet committed.
//
// A key lives in shard (hash >> 56): 256 shards, each with its own mutex, so SCAN can walk the
// key space in hash order one shard at a time. An entry whose value was evicted keeps its
// metadata (the key index is complete in memory), so existence, TTL, NX/XX and the session
// count never need PostgreSQL. Internal to src/store.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "skydb/durable.h"
#include "skydb/mutex.h"
#include "skydb/store.h"
#include "store/waiter.h"

namespace skydb::store {

inline constexpr int kShardBits = 8;
inline constexpr int kShardCount = 1 << kShardBits;
// Bytes an entry costs besides its key and value, for accounting: its map node, which holds the
// entry and its LRU links (a 160-byte heap chunk), and its bucket.
inline constexpr uint64_t kEntryOverheadBytes = 168;

uint64_t KeyHash(std::string_view key);
inline int ShardOf(uint64_t hash) { return static_cast<int>(hash >> (64 - kShardBits)); }

// A key with its KeyHash, for a lookup whose caller has hashed the key already.
struct HashedKey {
  std::string_view key;
  uint64_t hash;
};

// The shard maps' hash. Being cheap and noexcept, libstdc++ does not store it in each node: a
// lookup then reads the node's key, not a hash on another cache line of the node.
struct KeyHasher {
  using is_transparent = void;
  size_t operator()(std::string_view key) const noexcept { return KeyHash(key); }
  size_t operator()(const HashedKey& k) const noexcept { return k.hash; }
};
struct KeyEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
  bool operator()(const HashedKey& a, std::string_view b) const noexcept { return a.key == b; }
  bool operator()(std::string_view a, const HashedKey& b) const noexcept { return a == b.key; }
};
template <typename Value>
using KeyMap = std::unordered_map<std::string, Value, KeyHasher, KeyEqual>;

// One field of a hash (a member of a set: `value` empty), as memory holds it.
struct CollectionField {
  SharedValue value;          // shared with the field write queued for it
  UnixMillis expires_at = 0;  // a hash field's own deadline (HEXPIRE); 0: none
};

// A hash's fields or a set's members.
struct Collection {
  std::unordered_map<std::string, CollectionField> fields;
  // No field's own deadline comes before this (0: none has one); it may be earlier than the
  // earliest, never later, so fields are looked at for expiry only once it passed.
  UnixMillis next_field_deadline = 0;
  void NoteFieldDeadline(UnixMillis when) {
    if (when != 0 && (next_field_deadline == 0 || when < next_field_deadline)) {
      next_field_deadline = when;
    }
  }
  // Bytes it is accounted for: names, values and a map node each (kFieldOverheadBytes).
  uint64_t bytes = 0;
};
inline constexpr uint64_t kFieldOverheadBytes = 64;

// Lives in its map's node and is never copied or moved: the shard's LRU links point at it.
struct Entry {
  Entry() = default;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  const std::string* key = nullptr;        // the map's own key (stable while the entry lives)
  ValueType type = ValueType::kString;     // known whether or not the value is in memory
  std::optional<SharedValue> value;        // a string's; nullopt: evicted, PostgreSQL holds it
  std::unique_ptr<Collection> collection;  // a hash's or set's; null: evicted
  UnixMillis expires_at = 0;               // true deadline; 0 = none
  UnixMillis persisted_expires_at = 0;     // deadline last sent to the durable layer
  int64_t last_access_ms = 0;              // steady-clock ms, for idle eviction
  uint64_t dirty_seq = 0;                  // seq of the last write not yet committed; 0 = clean
  // Changes with every write and with a new entry for the key (never with an eviction): a load
  // asked at one version is installed only at the same one (MemoryTier::Fill).
  uint64_t version = 0;
  // The waiter of the write `dirty_seq` names: sync replies that reflect this entry wait for
  // it, and shared coherence reads the key's row only once it fired. Null when clean, or in
  // async durability with exclusive coherence (nobody waits).
  std::shared_ptr<Waiter> inflight;
  // The shard's LRU of clean cached values, linked through the entries (no node to allocate).
  bool in_lru = false;
  Entry* lru_prev = nullptr;  // towards the least recent
  Entry* lru_next = nullptr;

  // Its value is in memory.
  bool cached() const {
    return type == ValueType::kString ? value.has_value() : collection != nullptr;
  }
  uint64_t value_bytes() const {
    return type == ValueType::kString ? (value ? value->size() : 0)
                                      : (collection ? collection->bytes : 0);
  }
};

// A delete queued for the durable layer and not committed yet: until it commits, PostgreSQL
// still holds the row, so the key reads as gone — and, in sync mode, a reply saying so waits.
struct PendingDelete {
  uint64_t seq = 0;
  std::shared_ptr<Waiter> inflight;
};

// A key some client WATCHes: how many do, and how often it changed since the first did.
struct Watched {
  uint32_t watchers = 0;
  uint64_t version = 0;
};

class GatedOp;

// The operations waiting for a key, in the order they were called (key_gates.h): the head runs
// (loading what it needs, or, with shared coherence, until its guarded commit is decided); the
// others wait their turn. A key without a gate has nothing waiting.
struct Gate {
  std::deque<std::shared_ptr<GatedOp>> ops;
  // The head's commit passed store.write_timeout undecided: what waits for the key fails.
  std::optional<Error> stalled;
};

struct Shard {
  Mutex mu;
  KeyMap<Gate> gates GUARDED_BY(mu);
  KeyMap<Watched> watched GUARDED_BY(mu);
  KeyMap<Entry> entries GUARDED_BY(mu);
  uint64_t last_version GUARDED_BY(mu) = 0;    // the latest Entry::version given out
  Entry* lru_oldest GUARDED_BY(mu) = nullptr;  // clean cached values, least recent first
  Entry* lru_newest GUARDED_BY(mu) = nullptr;
  KeyMap<PendingDelete> pending_deletes GUARDED_BY(mu);
  // Keys that expired here since the maintenance thread last announced them (only while an
  // ExpiryListener wants them).
  std::vector<std::string> expired GUARDED_BY(mu);
  // The same for hashes whose fields passed their own deadlines (a memory-only store's).
  std::vector<ExpiredFields> expired_fields GUARDED_BY(mu);
  // Reads served in place (TieredStore::GetInPlace). Written under `mu` with a plain load and
  // store (no locked instruction on every GET); read without it, summed over the shards.
  std::atomic<uint64_t> hits_in_place{0};
};

}  // namespace skydb::store
