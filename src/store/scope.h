// Scope: one operation's view of the memory tier while its shards are locked. The key
// operations (key_ops.h) read and change memory through it; it collects the writes to queue
// for the durable layer (one unit, committed in one transaction) and the uncommitted changes
// the reply reflects (which a sync reply waits for). No I/O, no threads.
//
// Deadlines: every computation saturates at the largest representable time, so a deadline
// too far to represent means "expires at the maximum" (the key stays live). A change that
// makes a key end sooner is written exactly; only extensions are persisted coarsely (the
// deadline plus store.ttl_persist_slack, skipped while the durable copy already outlives it).
//
// Thread-safety: a Scope belongs to one operation on one thread, which holds its ShardLocks.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skydb/store.h"
#include "store/batch.h"
#include "store/memory_tier.h"
#include "store/shard_locks.h"

namespace skydb::store {

// Shared coherence: the rows of an operation's keys, just read from PostgreSQL.
struct RowSet {
  std::vector<std::pair<std::string, Row>> rows;
};

struct ScopeConfig {
  std::chrono::milliseconds default_ttl{0};
  std::chrono::milliseconds persist_slack{0};
  bool durable = false;  // writes are queued for a durable layer
  bool sync = false;     // replies wait for the commits they reflect
  // Entries keep the waiter of their uncommitted write even when no reply waits for it: with
  // shared coherence an operation reads a key's row only once this store's own write committed.
  bool track_inflight = false;
  uint64_t version_salt = 0;  // random per store: the row versions it writes are its own
};

// a + b for deadlines, saturating at the maximum instead of overflowing.
UnixMillis SaturatingAdd(UnixMillis a, int64_t b);

class Scope {
 public:
  // `next_seq` numbers queued writes (null when nothing is durable); `waits`: the unit's reply
  // waits for its commit (sync durability, or async under back-pressure).
  Scope(MemoryTier& tier, const ShardLocks& locks, const ScopeConfig& config, UnixMillis now,
        Clock::TimePoint steady_now, const RowSet* rows, std::function<uint64_t()> next_seq,
        bool waits) REQUIRES(locks);

  UnixMillis now() const { return now_; }
  int64_t persist_slack_ms() const { return config_.persist_slack.count(); }
  MemoryTier& tier() { return tier_; }
  // The rows the operation runs against (shared coherence), or null.
  const RowSet* rows() const { return rows_; }
  Shard& ShardOf(const std::string& key) { return tier_.ShardFor(KeyHash(key)); }
  // `shard` is one of the operation's (checked): the analysis takes its mutex as held.
  void Holds(const Shard& shard) const ASSERT_CAPABILITY(shard.mu) { locks_.Holds(shard); }

  // The key as this operation must see it (with shared coherence, against its row).
  Found Find(Shard& shard, const std::string& key) REQUIRES(shard.mu);
  // The reply reflects `found`'s state: in sync mode it waits for the pending change, if any.
  void Depend(const Found& found);
  UnixMillis ResolveDeadline(const Expiry& expiry, const Entry* existing) const;

  // Writes: each changes memory and queues the durable write in this operation's unit.
  void WriteValue(Shard& shard, Entry& e, const std::string& key, SharedValue value,
                  UnixMillis deadline) REQUIRES(shard.mu);
  void WriteDeadline(Shard& shard, Entry& e, const std::string& key, UnixMillis persisted)
      REQUIRES(shard.mu);
  void WriteDelete(Shard& shard, const std::string& key) REQUIRES(shard.mu);
  // A hash field (set member) written or deleted in `e`'s collection (memory already changed):
  // the field write, and the key's own row (type, deadline, new version) once per operation.
  void WriteField(Shard& shard, Entry& e, const std::string& key, const std::string& field,
                  SharedValue value, UnixMillis field_expires_at) REQUIRES(shard.mu);
  void WriteFieldDelete(Shard& shard, Entry& e, const std::string& key, const std::string& field)
      REQUIRES(shard.mu);
  // More queue room, for an operation that learns how much it writes as it goes (SINTERSTORE);
  // false, reserving nothing, when the queue is full: the operation must then write nothing.
  bool ReserveMore(size_t writes);
  size_t reserved_more() const { return reserved_more_; }
  void set_reserve_more(std::function<bool(size_t)> reserve) { reserve_more_ = std::move(reserve); }
  // Every change a client makes to a key, durable or not: what WATCH sees.
  void NoteChange(Shard& shard, const std::string& key) REQUIRES(shard.mu);
  // FLUSHALL inside a transaction: memory is cleared now, the durable delete of every row goes
  // first in the unit (the writes queued before it are dropped). Requires every shard.
  int64_t ClearAll();

  std::vector<QueuedWrite>& writes() { return writes_; }
  size_t applied_writes() const { return applied_writes_; }  // durable or not
  bool delete_all() const { return delete_all_; }
  const std::shared_ptr<Waiter>& waiter() const { return waiter_; }
  bool waits() const { return waits_; }
  std::vector<std::shared_ptr<Waiter>>& depends() { return depends_; }

 private:
  uint64_t Queue(const std::string& key, DurableWrite write);
  // The collection's own row, once per operation and key.
  void WriteCollectionRow(Shard& shard, Entry& e, const std::string& key) REQUIRES(shard.mu);
  std::shared_ptr<Waiter> Tracked() const {
    return config_.sync || config_.track_inflight ? waiter_ : nullptr;
  }

  MemoryTier& tier_;
  const ShardLocks& locks_;
  const ScopeConfig& config_;
  UnixMillis now_;
  Clock::TimePoint steady_now_;
  const RowSet* rows_;
  std::function<uint64_t()> next_seq_;
  bool waits_;
  std::vector<QueuedWrite> writes_;
  size_t applied_writes_ = 0;
  bool delete_all_ = false;
  // Collections whose row this operation queued since it last deleted them.
  std::vector<std::string> rows_written_;
  std::function<bool(size_t)> reserve_more_;
  size_t reserved_more_ = 0;
  std::shared_ptr<Waiter> waiter_;  // the unit's, created with its first write when tracked
  std::vector<std::shared_ptr<Waiter>> depends_;
};

// What WATCH remembers of a row read from PostgreSQL (shared coherence): equal for the same
// value and deadline, 0 for no live row.
uint64_t RowFingerprint(const Row& row);

}  // namespace skydb::store
