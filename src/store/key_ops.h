// The session store's operations on one key, applied to the memory tier with the key's shard
// locked: what GET, SET, DEL, EXISTS, EXPIRE and TTL mean, decided in one place for every
// backend. An operation reads and changes memory through a Scope, which collects the writes
// to queue for the durable layer (one unit, committed in one transaction) and the uncommitted
// changes its reply reflects (which a sync reply waits for). No I/O, no threads: the driver
// (tiered_store.cc) locks, runs one or several of these, queues the unit and replies.
//
// Deadlines: every computation saturates at the largest representable time, so a deadline
// too far to represent means "expires at the maximum" (the key stays live). A change that
// makes a key end sooner is written exactly; only extensions are persisted coarsely (the
// deadline plus store.ttl_persist_slack, skipped while the durable copy already outlives it).
//
// Thread-safety: a Scope belongs to one operation on one thread; functions taking a Shard&
// require its mutex.
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

namespace skydb::store {

// Shared coherence: the rows of an operation's keys, just read from PostgreSQL.
struct RowSet {
  std::vector<std::pair<std::string, Row>> rows;
  uint64_t asked_at = 0;  // MemoryTier::CommitStamp() when they were asked for
  // Reads this set's rows again and stamps them anew; called with no shard lock held.
  std::function<Status()> reread;
};

struct ScopeConfig {
  std::chrono::milliseconds default_ttl{0};
  std::chrono::milliseconds persist_slack{0};
  bool durable = false;  // writes are queued for a durable layer
  bool sync = false;     // replies wait for the commits they reflect
};

// a + b for deadlines, saturating at the maximum instead of overflowing.
UnixMillis SaturatingAdd(UnixMillis a, int64_t b);

class Scope {
 public:
  // `next_seq` numbers queued writes (null when nothing is durable); `waits`: the unit's reply
  // waits for its commit (sync durability, or async under back-pressure).
  Scope(MemoryTier& tier, const ScopeConfig& config, UnixMillis now, Clock::TimePoint steady_now,
        const RowSet* rows, std::function<uint64_t()> next_seq, bool waits);

  UnixMillis now() const { return now_; }
  int64_t persist_slack_ms() const { return config_.persist_slack.count(); }
  MemoryTier& tier() { return tier_; }
  Shard& ShardOf(const std::string& key) { return tier_.ShardFor(KeyHash(key)); }

  // The key as this operation must see it (with shared coherence, against its row).
  Found Find(Shard& shard, const std::string& key) REQUIRES(shard.mu);
  // The reply reflects `found`'s state: in sync mode it waits for the pending change, if any.
  void Depend(const Found& found);
  UnixMillis ResolveDeadline(const Expiry& expiry, const Entry* existing) const;

  // Writes: each changes memory and queues the durable write in this operation's unit.
  void WriteValue(Shard& shard, Entry& e, const std::string& key, std::string value,
                  UnixMillis deadline) REQUIRES(shard.mu);
  void WriteDeadline(Shard& shard, Entry& e, const std::string& key, UnixMillis persisted)
      REQUIRES(shard.mu);
  void WriteDelete(Shard& shard, const std::string& key) REQUIRES(shard.mu);
  // Every change a client makes to a key, durable or not: what WATCH sees.
  void NoteChange(Shard& shard, const std::string& key) REQUIRES(shard.mu);

  std::vector<QueuedWrite>& writes() { return writes_; }
  size_t applied_writes() const { return applied_writes_; }  // durable or not
  const std::shared_ptr<Waiter>& waiter() const { return waiter_; }
  std::vector<std::shared_ptr<Waiter>>& depends() { return depends_; }

 private:
  uint64_t Queue(const std::string& key, DurableWrite write);

  MemoryTier& tier_;
  const ScopeConfig& config_;
  UnixMillis now_;
  Clock::TimePoint steady_now_;
  const RowSet* rows_;
  std::function<uint64_t()> next_seq_;
  bool waits_;
  std::vector<QueuedWrite> writes_;
  size_t applied_writes_ = 0;
  std::shared_ptr<Waiter> waiter_;  // the unit's, created with its first write when it waits
  std::vector<std::shared_ptr<Waiter>> depends_;
};

// What WATCH remembers of a row read from PostgreSQL (shared coherence): equal for the same
// value and deadline, 0 for no live row.
uint64_t RowFingerprint(const Row& row);

// The key's value must be in memory (the driver loads evicted values first).
std::optional<std::string> ReadKey(Scope& s, Shard& shard, const std::string& key, ReadKind kind,
                                   const std::optional<Expiry>& change) REQUIRES(shard.mu);
// NX/XX and SET ... GET; request.value is moved from when the write applies.
SetReply SetKey(Scope& s, Shard& shard, SetRequest& request) REQUIRES(shard.mu);
bool DeleteKey(Scope& s, Shard& shard, const std::string& key) REQUIRES(shard.mu);
bool ExistsKey(Scope& s, Shard& shard, const std::string& key) REQUIRES(shard.mu);
bool ExpireKey(Scope& s, Shard& shard, const std::string& key, const Expiry& expiry,
               const ExpireCondition& condition) REQUIRES(shard.mu);
// INCR family; `error` is Redis's text (empty: applied). The key's value must be in memory.
struct IncrOutcome {
  IncrReply reply;
  std::string error;
};
IncrOutcome IncrementKey(Scope& s, Shard& shard, const IncrRequest& request, size_t max_value_bytes)
    REQUIRES(shard.mu);
TtlReply TtlKey(Scope& s, Shard& shard, const std::string& key) REQUIRES(shard.mu);

}  // namespace skydb::store
