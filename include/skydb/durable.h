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

struct DurableWrite {
  enum class Kind {
    kUpsert,  // value and deadline
    kDelete,
    kTouch,  // deadline only; the value is not rewritten
  };
  Kind kind = Kind::kUpsert;
  std::string key;
  SharedValue value;          // kUpsert only
  UnixMillis expires_at = 0;  // 0: no expiry
};

struct DurableValue {
  std::string value;
  UnixMillis expires_at = 0;
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
  // inside the committing transaction with those rows locked.
  using RowCheck = std::function<bool(const std::vector<std::optional<DurableValue>>& rows)>;
  struct RowGuard {
    std::vector<std::string> keys;
    RowCheck unchanged;
  };
  // One batch, committed in one transaction: first every guard's rows are locked (an absent one
  // by an expired placeholder row that lives only as long as the transaction) and checked, and
  // the writes of a guard that fails are left out; then, with `delete_all` (FLUSHALL, always a
  // request of its own) and no failed guard, every row is deleted; then `writes` are applied (a
  // key appears at most once).
  struct CommitRequest {
    std::vector<DurableWrite> writes;
    std::vector<RowGuard> guards;
    // With guards, aligned with `writes`: the guard each write is under (-1: none).
    std::vector<int> guard_of;
    UnixMillis now = 0;  // what "expired" means to the guards
    bool delete_all = false;
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
  Status CommitBatch(int writer, std::vector<DurableWrite> writes) {
    CommitRequest request;
    request.writes = std::move(writes);
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
  // SCAN over the table (shared coherence): keys live at `now` in the order of a 60-bit hash
  // of the key, from `cursor`; next_cursor 0 when done. Keys sharing a hash come together.
  virtual Result<ScanReply> ScanKeys(int reader, uint64_t cursor, size_t count, UnixMillis now) = 0;
  // Calls `visit` for every key live at `now`, with its deadline and value size.
  virtual Status LoadIndex(UnixMillis now,
                           const std::function<void(std::string key, UnixMillis expires_at,
                                                    size_t value_bytes)>& visit) = 0;
  // Deletes up to `limit` rows expired at `now` if this process holds the sweeper lock;
  // returns how many were deleted (0 when another sweeper holds the lock).
  virtual Result<int64_t> SweepExpired(UnixMillis now, int limit) = 0;
};

// PostgreSQL behind the tiered store: `writers` connections (one per group-commit writer),
// `readers` for loading evicted values, one for the sweeper. Connections open lazily and are
// reopened after a failure; nothing connects here. `transaction_pooling` (store.pooler =
// "transaction"): no named prepared statements, and no sweeper lock (a session lock would stay
// on a pooled server connection): every daemon sweeps, which deleting expired rows tolerates.
std::unique_ptr<DurableBackend> NewPostgresDurable(const std::string& conninfo,
                                                   const std::string& description, int writers,
                                                   int readers, bool transaction_pooling = false);

}  // namespace skydb
