// The session store: keys to values with absolute expiry, a memory tier in front and, for the
// tiered backend, PostgreSQL behind with group commit.
//
// Every operation completes through a callback, so the protocol server's event loop never
// blocks: memory hits and memory-only writes complete inline, before the call returns; durable
// writes complete on a writer thread after their batch's COMMIT ("sync" durability) or inline
// after enqueueing ("async"). A callback must not block; it may call back into the store.
//
// Guarantees: a successful write callback means the write is as durable as the configured
// durability promises; a failed one means it may or may not have been applied but was not
// acknowledged. Writes to one key are applied, committed and acknowledged in call order.
//
// Thread-safety: every method is safe to call from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/function_ref.h"
#include "skydb/histogram.h"
#include "skydb/mutex.h"
#include "skydb/result.h"

namespace skydb {

using UnixMillis = int64_t;  // milliseconds since the Unix epoch

// What a key holds; TYPE answers its name.
enum class ValueType : uint8_t { kString = 0, kHash = 1, kSet = 2 };
const char* ValueTypeName(ValueType type);  // "string", "hash", "set"

// What a write does to its key's deadline.
struct Expiry {
  enum class Kind {
    kDefault,  // the store's default TTL from now (store.default_ttl; 0 there = no expiry)
    kNone,     // no expiry (PERSIST, SET without EX when default_ttl = 0)
    kAt,       // absolute deadline `at`
    kKeep,     // keep the key's current deadline (KEEPTTL)
  };
  Kind kind = Kind::kDefault;
  UnixMillis at = 0;

  static Expiry Default() { return {}; }
  static Expiry None() { return {Kind::kNone, 0}; }
  static Expiry At(UnixMillis at) { return {Kind::kAt, at}; }
  static Expiry Keep() { return {Kind::kKeep, 0}; }
};

enum class SetCondition {
  kAlways,
  kIfAbsent,   // NX
  kIfPresent,  // XX
};

struct SetRequest {
  std::string key;
  std::string value;
  Expiry expiry;
  SetCondition condition = SetCondition::kAlways;
  bool return_old = false;  // SET ... GET
};

struct SetReply {
  bool applied = false;                  // false when NX/XX stopped it
  std::optional<std::string> old_value;  // only when return_old
};

// EXPIRE's NX/XX/GT/LT, judged against the key's current deadline atomically with the change.
// As in Redis, a key without a deadline has an infinite one: GT never applies to it, LT does.
struct ExpireCondition {
  bool if_none = false;     // NX: only when the key has no deadline
  bool if_any = false;      // XX: only when it has one
  bool if_later = false;    // GT: only when the new deadline is later
  bool if_earlier = false;  // LT: only when the new deadline is earlier
};

// INCR/INCRBY/DECR/DECRBY (integer) and INCRBYFLOAT (`by_float`): the key's value read as a
// number ("0" for a missing key), increased and written back. An existing key keeps its
// deadline; a new key gets the store's default TTL, as a SET without EX would. Errors are
// Redis's texts: "value is not an integer or out of range", "increment or decrement would
// overflow", "value is not a valid float", "increment would produce NaN or Infinity".
// APPEND (`append` set) is the same read-modify-write: the bytes are added to the value ("" for
// a missing key) and the reply's `integer` is the new length.
struct IncrRequest {
  std::string key;
  bool is_float = false;
  int64_t by = 0;
  long double by_float = 0;
  std::optional<std::string> append;

  static IncrRequest Integer(std::string key, int64_t by) {
    IncrRequest r;
    r.key = std::move(key);
    r.by = by;
    return r;
  }
  static IncrRequest Float(std::string key, long double by) {
    IncrRequest r;
    r.key = std::move(key);
    r.is_float = true;
    r.by_float = by;
    return r;
  }
  static IncrRequest Append(std::string key, std::string bytes) {
    IncrRequest r;
    r.key = std::move(key);
    r.append = std::move(bytes);
    return r;
  }
};

struct IncrReply {
  int64_t integer = 0;  // the new value, for integer increments
  std::string text;     // the new value as stored
};

struct TtlReply {
  enum class State { kMissing, kNoExpiry, kExpiring };
  State state = State::kMissing;
  int64_t remaining_ms = 0;  // kExpiring only; > 0
};

struct ScanReply {
  uint64_t next_cursor = 0;  // 0: the scan is complete
  std::vector<std::string> keys;
};

// TYPE and OBJECT ENCODING: what a key holds and how Redis would say it is encoded.
struct KeyInfo {
  ValueType type = ValueType::kString;
  std::string encoding;  // "embstr", "int", "raw", "listpack", "hashtable", "intset"
  // What the memory tier holds for it (MEMORY USAGE): its name and bookkeeping, and its value
  // while the value is in memory.
  uint64_t memory_bytes = 0;
};

// ---- Hashes and sets ------------------------------------------------------------------------

// A reply in Redis's shapes, for the commands whose reply depends on what they find (the
// hash and set commands): the protocol layer encodes it for RESP2 or RESP3.
struct StoreReply {
  enum class Type {
    kInteger,
    kBulk,
    kNull,
    kArray,
    kMap,     // pairs in `elements` (key, value, key, value...): an array in RESP2
    kPairs,   // the same, as an array of [key, value] arrays in RESP3 (HRANDFIELD WITHVALUES)
    kSet,     // a set's members: an array in RESP2
    kStatus,  // "+OK"
  };
  Type type = Type::kNull;
  int64_t integer = 0;
  std::string bulk;  // kBulk, kStatus
  std::vector<StoreReply> elements;

  static StoreReply Integer(int64_t n) { return {Type::kInteger, n, {}, {}}; }
  static StoreReply Bulk(std::string s) { return {Type::kBulk, 0, std::move(s), {}}; }
  static StoreReply Null() { return {}; }
  static StoreReply Status(std::string s) { return {Type::kStatus, 0, std::move(s), {}}; }
  static StoreReply Array(std::vector<StoreReply> e) { return {Type::kArray, 0, {}, std::move(e)}; }
  static StoreReply Map(std::vector<StoreReply> e) { return {Type::kMap, 0, {}, std::move(e)}; }
  static StoreReply Pairs(std::vector<StoreReply> e) { return {Type::kPairs, 0, {}, std::move(e)}; }
  static StoreReply Set(std::vector<StoreReply> e) { return {Type::kSet, 0, {}, std::move(e)}; }
};

// One hash or set command, parsed (the protocol layer checks arity, numbers and options with
// Redis's errors; the store decides what it does to the keys). A command on a key of another
// type fails with Redis's "WRONGTYPE Operation against a key holding the wrong kind of value".
struct CollectionOp {
  enum class Kind {
    // Hashes.
    kHSet,
    kHSetNx,
    kHGet,
    kHMGet,
    kHGetAll,
    kHDel,
    kHLen,
    kHExists,
    kHKeys,
    kHVals,
    kHStrLen,
    kHIncrBy,
    kHIncrByFloat,
    kHScan,
    kHRandField,
    kHExpire,
    kHTtl,
    kHPersist,
    kHGetEx,
    kHSetEx,
    kHGetDel,
    // Sets.
    kSAdd,
    kSRem,
    kSMembers,
    kSIsMember,
    kSMIsMember,
    kSCard,
    kSPop,
    kSRandMember,
    kSScan,
    kSMove,
    kSInter,
    kSUnion,
    kSDiff,
    kSInterStore,
    kSUnionStore,
    kSDiffStore,
    kSInterCard,
  };
  Kind kind = Kind::kHGet;
  std::vector<std::string> keys;    // the first is the key written (STORE: the destination)
  std::vector<std::string> fields;  // fields or members
  std::vector<std::string> values;  // HSET/HSETEX's values, aligned with `fields`
  int64_t integer = 0;       // HINCRBY's increment; SPOP/SRANDMEMBER/HRANDFIELD's count; a limit
  bool has_count = false;    // SPOP/SRANDMEMBER/HRANDFIELD were given a count
  long double real = 0;      // HINCRBYFLOAT's increment
  bool with_values = false;  // HRANDFIELD WITHVALUES, HSCAN (NOVALUES clears it)
  uint64_t cursor = 0;       // HSCAN/SSCAN
  std::string pattern;       // HSCAN/SSCAN MATCH ("" matches all)
  size_t count = 10;         // HSCAN/SSCAN COUNT
  // Field deadlines (HEXPIRE family, HGETEX, HSETEX): the new deadline and its condition; HTTL
  // and HPTTL answer in `millis`.
  std::optional<Expiry> expiry;
  ExpireCondition condition;
  bool millis = false;
  // HSETEX's FNX / FXX: only if none / all of the fields exist.
  SetCondition fields_condition = SetCondition::kAlways;
};

// Counters and gauges for INFO, /metrics and /status.
struct StoreStats {
  std::string kind;        // "memory" or "tiered"
  std::string durability;  // "sync", "async", or "none" for memory
  int64_t sessions = 0;    // live keys, exact
  int64_t expiring = 0;    // live keys with a deadline, exact
  uint64_t cached_values = 0;
  uint64_t memory_bytes = 0;      // bytes held by cached values and keys (accounted, not RSS)
  uint64_t max_memory_bytes = 0;  // store.max_memory; 0: no cap
  uint64_t queue_depth = 0;       // writes enqueued, not yet committed
  uint64_t writes = 0;            // write operations accepted
  uint64_t commits = 0;           // durable batches committed
  uint64_t committed_rows = 0;
  uint64_t failed_commits = 0;
  uint64_t write_timeouts = 0;
  uint64_t queue_full_rejections = 0;
  double last_commit_seconds = 0;
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
  uint64_t evictions_idle = 0;
  uint64_t evictions_memory = 0;
  uint64_t expirations = 0;
  HistogramSnapshot commit_batch_rows;  // distinct keys per committed batch
  HistogramSnapshot commit_seconds;     // time of each successful batch COMMIT
  // PostgreSQL connections the store holds (writers, readers, sweeper): configured, open,
  // running a statement now; loads of evicted values waiting for a reader.
  uint64_t pool_size = 0;
  uint64_t pool_open = 0;
  uint64_t pool_busy = 0;
  uint64_t pool_waiters = 0;
};

template <typename T>
using StoreCallback = std::function<void(Result<T>)>;

// ---- Transactions (MULTI/EXEC) and WATCH ----------------------------------------------------

enum class ReadKind { kGet, kGetEx, kGetDel };

// The commands a transaction may hold, each with the callback its result goes to: the same
// operations as SessionStore's methods of the same names.
namespace tx {
struct Read {
  ReadKind kind = ReadKind::kGet;
  std::string key;
  std::optional<Expiry> change;  // kGetEx
  StoreCallback<std::optional<std::string>> done;
};
struct Set {
  SetRequest request;
  StoreCallback<SetReply> done;
};
struct Delete {
  std::vector<std::string> keys;
  StoreCallback<int64_t> done;
};
struct Exists {
  std::vector<std::string> keys;
  StoreCallback<int64_t> done;
};
struct Expire {
  std::string key;
  Expiry expiry;
  ExpireCondition condition;
  StoreCallback<bool> done;
};
struct Increment {
  IncrRequest request;
  StoreCallback<IncrReply> done;
};
struct Ttl {
  std::string key;
  StoreCallback<TtlReply> done;
};
struct Collection {
  CollectionOp op;
  StoreCallback<StoreReply> done;
};
struct Type {
  std::string key;
  StoreCallback<std::optional<KeyInfo>> done;
};
struct Rename {
  std::string from, to;
  bool if_absent = false;  // RENAMENX
  StoreCallback<bool> done;
};
// FLUSHALL: what comes before it in the transaction is deleted with every other key; what comes
// after it stays.
struct DeleteAll {
  StoreCallback<int64_t> done;
};
}  // namespace tx
class ScriptScope;
namespace tx {
// EVAL: a script run under the locks of the keys it declares, once they are loaded. `run` gets
// a ScriptScope through which it applies ops at once, as part of its transaction; it may be
// called more than once (an attempt refused by shared coherence's guard runs again on fresh
// rows), so it must keep its outcome where the last call leaves it. done(true) is delivered,
// like every op's result, once the unit is as durable as promised.
struct Script {
  std::vector<std::string> keys;
  std::function<void(ScriptScope&)> run;
  StoreCallback<bool> done;
};
}  // namespace tx
using TxOp = std::variant<tx::Read, tx::Set, tx::Delete, tx::Exists, tx::Expire, tx::Increment,
                          tx::Ttl, tx::DeleteAll, tx::Collection, tx::Type, tx::Rename, tx::Script>;

// What a script (tx::Script) runs its commands through, on the store's thread with its keys
// locked. Apply applies `ops` (one command's: several for MSET) now, in order, and calls their
// callbacks before returning. Ops that touch a key the script did not declare, FLUSHALL, a
// script, a value over the size limit, or writes when the write queue is full, are refused
// whole: each callback gets the error, nothing is applied, and the error is returned.
class ScriptScope {
 public:
  virtual ~ScriptScope() = default;
  virtual Status Apply(std::vector<TxOp> ops) = 0;
};

// EXEC's reply budget: told, before anything is applied, the most bytes the transaction's
// replies may take; an error refuses the transaction whole.
using ReplyAdmission = std::function<Status(size_t reply_bytes)>;

// The keys one client WATCHes and what they were when it did. Watch fills it (possibly on a
// store thread), Transact checks it, Unwatch forgets it. One client uses a list at a time.
class WatchList {
 public:
  struct Key {
    std::string key;
    uint64_t version = 0;  // the key's change count while watched by this store
    bool live = false;
    uint64_t row = 0;  // shared coherence: a fingerprint of its row in PostgreSQL
  };
  // The names are known at once; what they were may be read later (a WATCH that waits for its
  // keys). Returns the list's epoch, which Add must be given.
  uint64_t AddNames(const std::vector<std::string>& names) {
    MutexLock lock(mu_);
    names_.insert(names_.end(), names.begin(), names.end());
    return epoch_;
  }
  std::vector<std::string> names() const {
    MutexLock lock(mu_);
    return names_;
  }
  // false, adding nothing, when the list was emptied (Take) since AddNames gave `epoch`: the
  // WATCH came too late for it.
  bool Add(uint64_t epoch, Key key) {
    MutexLock lock(mu_);
    if (epoch != epoch_) return false;
    keys_.push_back(std::move(key));
    return true;
  }
  void Fail(Error error) {
    MutexLock lock(mu_);
    if (!failure_) failure_ = std::move(error);
  }
  std::vector<Key> keys() const {
    MutexLock lock(mu_);
    return keys_;
  }
  std::optional<Error> failure() const {
    MutexLock lock(mu_);
    return failure_;
  }
  // Empties the list, returning what it held (for Unwatch).
  std::vector<Key> Take() {
    MutexLock lock(mu_);
    failure_.reset();
    names_.clear();
    ++epoch_;
    return std::exchange(keys_, {});
  }

 private:
  mutable Mutex mu_;
  uint64_t epoch_ GUARDED_BY(mu_) = 0;
  std::vector<std::string> names_ GUARDED_BY(mu_);
  std::vector<Key> keys_ GUARDED_BY(mu_);
  std::optional<Error> failure_ GUARDED_BY(mu_);
};

// Told the keys whose deadline passed, each once, after the store dropped them: from memory (a
// read that found the key expired, or the sweep) or, with shared coherence, from PostgreSQL by
// the one sweeper of the database. For keyspace notifications ("expired").
// Thread-safety: called from the store's maintenance thread, never under a store lock; it must
// not block.
// A hash some of whose fields passed their own deadlines (Redis's "hexpired"); `emptied`: no
// field is left, so the hash is gone too ("del").
struct ExpiredFields {
  std::string key;
  bool emptied = false;
  bool operator==(const ExpiredFields&) const = default;
};

class ExpiryListener {
 public:
  virtual ~ExpiryListener() = default;
  // Whether expired keys are wanted now: when not, the store does not collect them.
  virtual bool WantsExpired() const = 0;
  virtual void Expired(const std::vector<std::string>& keys) = 0;
  // The same for hash fields past their own deadlines: each such field's hash once, from
  // PostgreSQL's rows by the database's announcer or, in a memory-only store, from memory.
  virtual bool WantsExpiredFields() const { return false; }
  virtual void FieldsExpired(const std::vector<ExpiredFields>& hashes) { (void)hashes; }
};

class SessionStore {
 public:
  virtual ~SessionStore() = default;

  virtual void Get(std::string key, StoreCallback<std::optional<std::string>> done) = 0;
  // A GET answered at once when memory holds its final answer: `visit` gets the value (null:
  // no such key) while the key is locked, to build the reply from it in place, and must not call
  // into the store. false, nothing visited: the answer must be loaded, waits for a commit, or
  // this store cannot tell at once; use Get.
  virtual bool GetInPlace(const std::string& key, FunctionRef<void(const std::string*)> visit) {
    (void)key, (void)visit;
    return false;
  }
  // GETEX / get-and-touch: returns the value and, if `change` is set, applies it to the TTL
  // without rewriting the value.
  virtual void GetEx(std::string key, std::optional<Expiry> change,
                     StoreCallback<std::optional<std::string>> done) = 0;
  virtual void GetDel(std::string key, StoreCallback<std::optional<std::string>> done) = 0;
  virtual void Set(SetRequest request, StoreCallback<SetReply> done) = 0;
  // Number of keys that existed and were deleted.
  virtual void Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) = 0;
  // Number of the given keys that exist (a key named twice counts twice, as in Redis).
  virtual void Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) = 0;
  // EXPIRE/PEXPIRE/EXPIREAT/PERSIST: true if the key exists, `condition` holds and its
  // deadline was changed. An absolute deadline in the past deletes the key.
  virtual void Expire(std::string key, Expiry expiry, ExpireCondition condition,
                      StoreCallback<bool> done) = 0;
  // INCR family: read-modify-write of one key under its lock, durable like any write.
  virtual void Increment(IncrRequest request, StoreCallback<IncrReply> done) = 0;
  // FLUSHALL: deletes every key; answers how many were live in memory. Durable like any write:
  // queued behind every write before it on every writer, so none of them brings a key back,
  // and, in sync durability, answered after its COMMIT.
  virtual void DeleteAll(StoreCallback<int64_t> done) = 0;
  virtual void Ttl(std::string key, StoreCallback<TtlReply> done) = 0;
  // SCAN: a cursor over every live key; a key live for the whole scan is returned at least
  // once. `pattern` is a Redis glob ("" matches all); `type`, if given, keeps keys of it only.
  virtual void Scan(uint64_t cursor, std::string pattern, size_t count,
                    std::optional<ValueType> type, StoreCallback<ScanReply> done) = 0;
  // TYPE and OBJECT ENCODING: nullopt for a missing key.
  virtual void Type(std::string key, StoreCallback<std::optional<KeyInfo>> done) {
    (void)key;
    done(Error::Unavailable("this store has no types"));
  }
  // RENAME / RENAMENX: false when `if_absent` and `to` exists; an error when `from` is missing
  // ("no such key"). The value, its type and its deadline move; `to`'s old value goes.
  virtual void Rename(std::string from, std::string to, bool if_absent, StoreCallback<bool> done) {
    (void)from, (void)to, (void)if_absent;
    done(Error::Unavailable("this store cannot rename"));
  }
  // A hash or set command (CollectionOp).
  virtual void Collection(CollectionOp op, StoreCallback<StoreReply> done) {
    (void)op;
    done(Error::Unavailable("this store has no hashes or sets"));
  }

  // WATCH: records `keys` as they are now in `into`. A Transact given the list applies nothing
  // if one of them was written, deleted or expired since.
  virtual void Watch(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
                     StoreCallback<bool> done) {
    (void)keys, (void)into;
    done(Error::Unavailable("this store has no transactions"));
  }
  // Forgets the list's keys (UNWATCH, EXEC, DISCARD, a closed connection).
  virtual void Unwatch(WatchList& list) { list.Take(); }
  // EXEC: applies `ops` in order as one unit, atomically — no other operation sees part of it
  // — and queues their writes as one unit (one COMMIT). done(false): a watched key changed and
  // nothing was applied. done(true): each op's callback has had its result, in order.
  // done(error): nothing is acknowledged (as for a failed write); a write the store would refuse
  // alone (a value over the size limit), or replies `admit` refuses, refuse the whole
  // transaction, applying nothing.
  virtual void Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                        StoreCallback<bool> done, ReplyAdmission admit = nullptr) {
    (void)ops, (void)watched, (void)admit;
    done(Error::Unavailable("this store has no transactions"));
  }

  // Installs (nullptr: removes) the listener of expired keys, which the store keeps alive.
  virtual void SetExpiryListener(std::shared_ptr<ExpiryListener> listener) { (void)listener; }

  // CONFIG SET maxmemory: the memory cap (store.max_memory; 0: none) from now until a restart;
  // values over it leave memory at the next sweep.
  virtual Status SetMaxMemory(uint64_t bytes) {
    (void)bytes;
    return Error::Unavailable("this store has no memory cap");
  }

  // Live sessions, exact, without scanning.
  virtual int64_t Count() const = 0;
  virtual StoreStats Stats() const = 0;

  // Stops accepting writes, commits everything queued (bounded by `timeout`), stops threads.
  // Writes that could not be committed in time fail their callbacks.
  virtual Status Close(std::chrono::milliseconds timeout) = 0;
};

struct MemoryTierOptions {
  std::chrono::milliseconds default_ttl{30 * 60 * 1000};  // 0: writes without a TTL never expire
  size_t max_key_bytes = 512;
  size_t max_value_bytes = 1 << 20;
  std::chrono::milliseconds idle_evict{5 * 60 * 1000};  // clean values idle this long leave memory
  uint64_t max_memory_bytes = 0;                        // 0: no cap
  std::chrono::milliseconds sweep_interval{1000};       // memory expiry sweep period
};

struct TieredOptions {
  MemoryTierOptions memory;
  Durability durability = Durability::kSync;
  std::chrono::milliseconds flush_interval{10};  // async: longest a write waits to be batched
  // Async: while the oldest uncommitted write is older than this, writes are acknowledged
  // only after their commit (back-pressure), so a crash loses at most this much.
  std::chrono::milliseconds async_max_lag{100};
  std::chrono::milliseconds write_timeout{10000};  // sync: longest a write waits for COMMIT
  size_t queue_max_writes = 100000;                // more queued: writes fail fast
  size_t batch_max_rows = 1000;
  size_t batch_max_bytes = 8 << 20;
  int writers = 2;  // writer threads/connections; a key is in one commit at a time
  // While a commit runs, a second one starts only when this many writes, or this many bytes of
  // values, wait (docs/store.md).
  size_t commit_overlap_rows = 64;
  size_t commit_overlap_bytes = 512 << 10;
  int readers = 2;  // threads loading evicted values
  // TTL-only changes persist the deadline plus this slack, so touches within it write nothing;
  // after a crash a session may live up to this much longer, never shorter.
  std::chrono::milliseconds ttl_persist_slack{60000};
  std::chrono::milliseconds durable_sweep_interval{10000};
  int durable_sweep_batch = 500;
  // Coherence across daemons sharing one database (store.coherence). Exclusive: this daemon
  // owns the table, memory is authoritative. Shared: every key operation first reads the row
  // from PostgreSQL (batched), and this daemon's own uncommitted writes win over it; memory
  // keeps only those writes, deadlines persist exactly (no slack), and the session count is
  // PostgreSQL's, refreshed every durable_sweep_interval.
  bool shared = false;
};

class DurableBackend;

// A memory-only store: nothing survives the process. For tests and demos; says so in Stats.
std::unique_ptr<SessionStore> NewMemoryStore(const MemoryTierOptions& options, Clock& clock);

// Memory tier in front of `durable`. Loads the key index from it before returning.
Result<std::unique_ptr<SessionStore>> NewTieredStore(const TieredOptions& options, Clock& clock,
                                                     std::unique_ptr<DurableBackend> durable);

// Opening a store from configuration (store.* keys). `conninfo` is unused for kind "memory".
struct StoreOpenRequest {
  StoreConfig config;
  std::string conninfo;
  std::string description;  // for logs and INFO: "private cluster at DIR/run"
  int store_pool = 6;       // connections the store may hold (from tuning)
  int store_writers = 0;    // group-commit writers (from tuning); 0: store_pool − 2
  bool shared = false;      // store.coherence resolved: true for "shared"
};
MemoryTierOptions MemoryOptionsFrom(const StoreConfig& config);
// store.coherence resolved: "shared", or "auto" with a database URL.
bool SharedCoherence(const StoreConfig& config);
TieredOptions TieredOptionsFrom(const StoreConfig& config, int store_pool, int store_writers = 0,
                                bool shared = false);
// Loads the key index before returning; an error names the database and the reason.
Result<std::unique_ptr<SessionStore>> OpenSessionStore(const StoreOpenRequest& request,
                                                       Clock& clock);

// Redis glob matching for SCAN MATCH / KEYS: *, ?, [abc], [^a-z], \x escapes.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace skydb
