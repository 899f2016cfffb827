// The durable layer behind the tiered store: what the store needs from PostgreSQL, as an
// interface so the store's logic is unit-tested against an in-memory fake.
//
// Thread-safety: Commit for one writer index is only ever called from that writer's
// thread; different writers, Read and Sweep run concurrently and must not share a connection.
// Failure: every method returns an Error naming the operation; the store retries commits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/result.h"
#include "skydb/store.h"

namespace skydb {

// A session's value, shared by the memory tier's entry and the write queued for it: a SET
// copies its bytes into neither. The bytes never change; a new value is a new SharedValue.
class SharedValue {
 public:
  SharedValue() = default;        // the empty string
  SharedValue(std::string value)  // NOLINT(google-explicit-constructor): takes the bytes over
      : bytes_(std::make_shared<const std::string>(std::move(value))) {}
  SharedValue(const char* value) : SharedValue(std::string(value)) {}  // NOLINT: as above

  const std::string& str() const { return bytes_ != nullptr ? *bytes_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as the string
  size_t size() const { return str().size(); }
  friend bool operator==(const SharedValue& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const SharedValue& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SharedValue& a, const char* b) { return a.str() == b; }
  friend bool operator==(const SharedValue& a, const SharedValue& b) { return a.str() == b.str(); }

 private:
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }
  std::shared_ptr<const std::string> bytes_;
};

// One write to the durable layer. A string is one row; a hash or a set is a row of its own
// (type, deadline, version) and one row per field or member, so that a field write costs one
// small row whatever the size of the hash (docs/storage.md).
struct DurableWrite {
  enum class Kind {
    kUpsert,       // a string's value and deadline
    kDelete,       // the key, with every field of it
    kTouch,        // the deadline only; nothing else is rewritten
    kCollection,   // a hash's or set's own row: its type and deadline
    kFieldUpsert,  // one field of a hash (`field`, `value`, `expires_at`), one member of a set
    kFieldDelete,  // one field or member
    kFieldsClear,  // every field of the key goes, before the batch's field upserts
  };
  Kind kind = Kind::kUpsert;
  std::string key;
  SharedValue value;                    // kUpsert, kFieldUpsert
  UnixMillis expires_at = 0;            // 0: no expiry
  ValueType type = ValueType::kString;  // kUpsert (string), kCollection (hash or set)
  std::string field;                    // field writes
  uint64_t version = 0;  // row writes: the key's new version (what shared coherence compares)

  static DurableWrite Of(Kind kind, std::string key, SharedValue value = {},
                         UnixMillis expires_at = 0) {
    DurableWrite w;
    w.kind = kind;
    w.key = std::move(key);
    w.value = std::move(value);
    w.expires_at = expires_at;
    return w;
  }
};

struct DurableField {
  std::string name;
  std::string value;          // empty for a set's member
  UnixMillis expires_at = 0;  // a hash field's own deadline; 0: none
};

struct DurableValue {
  std::string value;  // a string's
  UnixMillis expires_at = 0;
  ValueType type = ValueType::kString;
  uint64_t version = 0;              // 0: a row written before versions existed
  std::vector<DurableField> fields;  // a hash's or set's, live at the read's moment

  static DurableValue String(std::string value, UnixMillis expires_at = 0) {
    DurableValue v;
    v.value = std::move(value);
    v.expires_at = expires_at;
    return v;
  }
};

// The backend's connections, for metrics.
struct DurablePoolStats {
  uint64_t size = 0;  // connections it may hold
  uint64_t open = 0;  // connected now
  uint64_t busy = 0;  // running a statement now
};

class DurableBackend {
 public:
  virtual ~DurableBackend() = default;
  virtual DurablePoolStats PoolStats() const { return {}; }
  virtual std::string Describe() const = 0;  // for logs and INFO: "postgres (socket ...)"
  // A guarded unit's condition (shared coherence): its writes commit only if the rows of `keys`
  // (sorted, distinct; aligned with them, absent or expired: nullopt) pass `unchanged`, decided
  // inside the committing transaction with those rows locked. `owns`: the keys its unit
  // writes, whose writes are left out when it fails (no other unit of a batch writes them).
  using RowCheck = std::function<bool(const std::vector<std::optional<DurableValue>>& rows)>;
  struct RowGuard {
    std::vector<std::string> keys;
    RowCheck unchanged;
    std::vector<std::string> owns;
  };
  // One batch, committed in one transaction: first every guard's rows are locked (an absent one
  // by an expired placeholder row that lives only as long as the transaction) and checked, and
  // the writes of a guard that fails are left out; then, with `delete_all` (FLUSHALL, always a
  // request of its own) and no failed guard, every row is deleted; then the `rows` are written
  // (a key at most once; a delete takes the key's fields along), the `cleared` keys' fields
  // deleted, and the `fields` written (a (key, field) at most once).
  struct CommitRequest {
    std::vector<DurableWrite> rows;
    std::vector<std::string> cleared;
    std::vector<DurableWrite> fields;
    std::vector<RowGuard> guards;
    UnixMillis now = 0;  // what "expired" means to the guards
    bool delete_all = false;
    // Called once the guards are checked, before the writes, if any failed (per guard, as in
    // CommitResult::refused): a failed guard saw another transaction's committed write, so it
    // stays failed whatever becomes of this transaction. Its unit can start again at once
    // instead of after this COMMIT. May be left uncalled (CommitResult has them too).
    std::function<void(const std::vector<bool>& refused)> on_refused;
  };
  struct CommitResult {
    std::vector<bool> refused;  // per guard: its check failed and its writes were left out
    // The connection was lost during COMMIT: it may or may not have committed. Only reported
    // for a request with guards (a retry would find its own rows and refuse them); a request
    // without guards is simply retried, as its writes are idempotent.
    bool unknown = false;
  };
  // An error: nothing committed (retry).
  virtual Result<CommitResult> Commit(int writer, const CommitRequest& request) = 0;
  // Commits string rows alone (tests and tools).
  Status CommitBatch(int writer, std::vector<DurableWrite> rows) {
    CommitRequest request;
    request.rows = std::move(rows);
    auto committed = Commit(writer, request);
    if (!committed.ok()) return std::move(committed).error();
    return Ok();
  }
  // The row for `key` if present and not expired at `now`.
  virtual Result<std::optional<DurableValue>> Read(int reader, const std::string& key,
                                                   UnixMillis now) = 0;
  // Read for several keys in one round trip; the result is aligned with `keys`. The default
  // reads them one by one.
  virtual Result<std::vector<std::optional<DurableValue>>> ReadMany(
      int reader, const std::vector<std::string>& keys, UnixMillis now) {
    std::vector<std::optional<DurableValue>> rows;
    for (const auto& key : keys) {
      auto row = Read(reader, key, now);
      if (!row.ok()) return std::move(row).error();
      rows.push_back(std::move(row).value());
    }
    return rows;
  }
  // Live rows at `now` and how many of them have a deadline (shared coherence's DBSIZE).
  struct LiveCount {
    int64_t sessions = 0;
    int64_t expiring = 0;
  };
  virtual Result<LiveCount> CountLive(UnixMillis now) = 0;
  // SCAN over the table (shared coherence): keys live at `now` (of `type` only, if given) in
  // the order of a 60-bit hash of the key, from `cursor`; next_cursor 0 when done. Keys sharing
  // a hash come together.
  virtual Result<ScanReply> ScanKeys(int reader, uint64_t cursor, size_t count, UnixMillis now,
                                     std::optional<ValueType> type) = 0;
  // Calls `visit` for every key live at `now`, with its deadline, value size and type.
  struct IndexEntry {
    std::string key;
    UnixMillis expires_at = 0;
    size_t value_bytes = 0;
    ValueType type = ValueType::kString;
  };
  virtual Status LoadIndex(UnixMillis now, const std::function<void(IndexEntry entry)>& visit) = 0;
  // Deletes up to `limit` rows expired at `now` (and up to `limit` hash fields past their own
  // deadlines) if this process holds the sweeper lock; returns how many rows were deleted (0
  // when another sweeper holds the lock).
  virtual Result<int64_t> SweepExpired(UnixMillis now, int limit) = 0;
  // The keys whose deadline fell in (after, upto] (at most `limit`), for the "expired" keyspace
  // event under shared coherence: answered by the holder of the announcer lock only (others get
  // none), so across daemons each expiry is announced once. Only a daemon that wants the event
  // asks, so the announcer is always one that does. Nothing is deleted.
  virtual Result<std::vector<std::string>> ExpiredBetween(UnixMillis after, UnixMillis upto,
                                                          int limit) {
    (void)after, (void)upto, (void)limit;
    return std::vector<std::string>{};
  }
  // The hashes with a field whose own deadline fell in (after, upto] while the hash lived (at
  // most `limit`), for the "hexpired" event: from its announcer lock's holder only, as above.
  virtual Result<std::vector<ExpiredFields>> FieldsExpiredBetween(UnixMillis after, UnixMillis upto,
                                                                  int limit) {
    (void)after, (void)upto, (void)limit;
    return std::vector<ExpiredFields>{};
  }
  // This daemon no longer wants the "expired" (kExpiredKeys) or the "hexpired"
  // (kExpiredFields) event: it lets go of that announcer lock, so a daemon that does can take
  // it. Each has its own lock, so a daemon that wants one does not keep the other from one
  // that wants it.
  enum class Announcing { kExpiredKeys, kExpiredFields };
  virtual void StopAnnouncing(Announcing what) { (void)what; }
};

// PostgreSQL behind the tiered store: `writers` connections (one per group-commit writer),
// `readers` for loading evicted values, one for the sweeper. Connections open lazily and are
// reopened after a failure; nothing connects here. `transaction_pooling` (store.pooler =
// "transaction"): no named prepared statements; the sweeper and its session lock (one sweeper
// per database, the one that announces `expired`) go over `direct_conninfo`, a connection that
// bypasses the pooler; without it there is no lock (it would stay on a pooled server
// connection): every daemon sweeps, which deleting expired rows tolerates, and none announces.
std::unique_ptr<DurableBackend> NewPostgresDurable(const std::string& conninfo,
                                                   const std::string& description, int writers,
                                                   int readers, bool transaction_pooling = false,
                                                   const std::string& direct_conninfo = "");

}  // namespace skydb
