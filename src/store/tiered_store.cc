#include "store/tiered_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <type_traits>
#include <variant>

namespace skydb::store {
namespace {

constexpr int kMaxLoadAttempts = 3;

// The shards of an operation's keys, locked in index order (so operations on overlapping
// shard sets never deadlock) and released together.
class ShardLocks {
 public:
  ShardLocks(MemoryTier& tier, const std::vector<std::string>& keys) NO_THREAD_SAFETY_ANALYSIS {
    for (const auto& key : keys) held_.push_back(ShardOf(KeyHash(key)));
    Lock(tier);
  }
  // Every shard (FLUSHALL).
  explicit ShardLocks(MemoryTier& tier) {
    for (int i = 0; i < kShardCount; ++i) held_.push_back(i);
    Lock(tier);
  }
  ~ShardLocks() { Unlock(); }
  ShardLocks(const ShardLocks&) = delete;
  ShardLocks& operator=(const ShardLocks&) = delete;

  void Unlock() NO_THREAD_SAFETY_ANALYSIS {
    if (!locked_) return;
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) tier_->ShardAt(*it).mu.Unlock();
    locked_ = false;
  }
  // The same shards again, after Unlock.
  void Relock() NO_THREAD_SAFETY_ANALYSIS {
    for (int index : held_) tier_->ShardAt(index).mu.Lock();
    locked_ = true;
  }

 private:
  void Lock(MemoryTier& tier) NO_THREAD_SAFETY_ANALYSIS {
    std::sort(held_.begin(), held_.end());
    held_.erase(std::unique(held_.begin(), held_.end()), held_.end());
    tier_ = &tier;
    Relock();
  }

  MemoryTier* tier_ = nullptr;
  std::vector<int> held_;
  bool locked_ = false;
};

TierOptions TierOptionsFor(const TieredOptions& o, bool durable) {
  TierOptions t;
  t.memory = o.memory;
  t.evictable = durable;
  t.retain_committed = !o.shared;
  return t;
}

Status CheckSizes(const SetRequest& r, const MemoryTierOptions& o) {
  if (r.key.size() > o.max_key_bytes) {
    return Error::InvalidArgument("key is " + std::to_string(r.key.size()) +
                                  " bytes; the limit is " + std::to_string(o.max_key_bytes));
  }
  if (r.value.size() > o.max_value_bytes) {
    return Error::InvalidArgument("value is " + std::to_string(r.value.size()) +
                                  " bytes; the limit (store.max_value_bytes) is " +
                                  std::to_string(o.max_value_bytes));
  }
  return Ok();
}

// A transaction's result: whether it applied, and each op's reply, delivered in order once
// the unit is acknowledged.
struct TxOutcome {
  bool applied = false;
  std::optional<Error> refused;  // nothing applied, and why
  std::vector<std::function<void()>> deliveries;
};

// The keys a transaction locks, those whose values it reads, and at most how many writes it
// queues.
void PlanTransaction(const std::vector<TxOp>& ops, const std::vector<WatchList::Key>& watch,
                     std::vector<std::string>* keys, std::vector<std::string>* reads,
                     size_t* max_writes) {
  for (const auto& op : ops) {
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, tx::Read>) {
            keys->push_back(o.key);
            reads->push_back(o.key);
            if (o.kind != ReadKind::kGet) ++*max_writes;
          } else if constexpr (std::is_same_v<T, tx::Set>) {
            keys->push_back(o.request.key);
            if (o.request.return_old) reads->push_back(o.request.key);
            ++*max_writes;
          } else if constexpr (std::is_same_v<T, tx::Delete> || std::is_same_v<T, tx::Exists>) {
            keys->insert(keys->end(), o.keys.begin(), o.keys.end());
            if (std::is_same_v<T, tx::Delete>) *max_writes += o.keys.size();
          } else if constexpr (std::is_same_v<T, tx::Increment>) {
            keys->push_back(o.request.key);
            reads->push_back(o.request.key);
            ++*max_writes;
          } else {
            keys->push_back(o.key);
            if (std::is_same_v<T, tx::Expire>) ++*max_writes;
          }
        },
        op);
  }
  for (const auto& w : watch) keys->push_back(w.key);
}

// Values one transaction may read: its results are held until they are delivered together.
constexpr size_t kMaxTransactionReadBytes = size_t{64} << 20;

// At most the bytes the transaction's reads return: what its keys hold now plus what it
// writes (a GET after a SET in the same transaction returns the new value).
size_t ReadBytesBound(Scope& s, const std::vector<TxOp>& ops) {
  size_t bytes = 0;
  for (const auto& op : ops) {
    if (const auto* set = std::get_if<tx::Set>(&op)) bytes += set->request.value.size();
    const std::string* key = nullptr;
    if (const auto* read = std::get_if<tx::Read>(&op)) key = &read->key;
    if (const auto* set = std::get_if<tx::Set>(&op); set && set->request.return_old) {
      key = &set->request.key;
    }
    if (key == nullptr) continue;
    Shard& shard = s.ShardOf(*key);
    shard.mu.AssertHeld();
    Found found = s.Find(shard, *key);
    if (found.entry != nullptr && found.entry->value) bytes += found.entry->value->size();
  }
  return bytes;
}

const Row& RowOf(const RowSet& rows, const std::string& key) {
  static const Row kNoRow;
  for (const auto& [k, row] : rows.rows) {
    if (k == key) return row;
  }
  return kNoRow;
}

// Shared coherence: a row asked for before this store committed its key may be older than that
// commit, which memory no longer holds: such rows are read again (no lock held meanwhile)
// until none of `keys` was committed since its rows were asked for. `locks` hold `keys`.
Status EnsureRowsNewerThanOwnCommits(MemoryTier& tier, ShardLocks& locks, const RowSet& rows,
                                     const std::vector<std::string>& keys) {
  auto stale = [&] {
    for (const auto& [key, row] : rows.rows) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
      Shard& shard = tier.ShardFor(KeyHash(key));
      shard.mu.AssertHeld();
      if (tier.CommittedSince(shard, key, rows.asked_at)) return true;
    }
    return false;
  };
  for (int attempt = 1; stale(); ++attempt) {
    if (attempt >= kMaxLoadAttempts || !rows.reread) {
      return Error::Unavailable(
          "this daemon kept committing writes to a key while reading it from PostgreSQL; retry");
    }
    locks.Unlock();
    Status again = rows.reread();
    locks.Relock();
    if (!again.ok()) return again;
  }
  return Ok();
}

// True when a watched key was changed by any client of this store, deleted or expired since it
// was watched, or (shared coherence) its row in PostgreSQL is no longer the one it was.
bool WatchedKeyChanged(Scope& s, const std::vector<WatchList::Key>& watch, const RowSet* rows) {
  for (const auto& w : watch) {
    Shard& shard = s.ShardOf(w.key);
    shard.mu.AssertHeld();
    auto it = shard.watched.find(w.key);
    if (it == shard.watched.end() || it->second.version != w.version) return true;
    if (w.live && s.Find(shard, w.key).entry == nullptr) return true;
    if (rows != nullptr && RowFingerprint(RowOf(*rows, w.key)) != w.row) return true;
  }
  return false;
}

// Shared coherence: the watched rows, as WATCH read them, that the transaction's COMMIT checks
// again under lock (the last reading of a key watched twice).
std::shared_ptr<CommitGuard> GuardFor(const std::vector<WatchList::Key>& watch) {
  std::map<std::string, uint64_t> expected;
  for (const auto& w : watch) expected[w.key] = w.row;
  auto guard = std::make_shared<CommitGuard>();
  std::vector<uint64_t> rows;
  for (auto& [key, row] : expected) {
    guard->keys.push_back(key);
    rows.push_back(row);
  }
  guard->unchanged = [rows = std::move(rows)](const std::vector<Row>& now) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (RowFingerprint(now[i]) != rows[i]) return false;
    }
    return true;
  };
  return guard;
}

// Applies one op (its keys' shards are locked); returns the delivery of its result.
std::function<void()> ApplyOp(Scope& s, TxOp& op, size_t max_value_bytes) {
  return std::visit(
      [&s, max_value_bytes](auto& o) -> std::function<void()> {
        using T = std::decay_t<decltype(o)>;
        auto deliver = [done = o.done](auto result) {
          return [done, result = std::move(result)] { done(result); };
        };
        if constexpr (std::is_same_v<T, tx::Read>) {
          Shard& shard = s.ShardOf(o.key);
          shard.mu.AssertHeld();
          return deliver(ReadKey(s, shard, o.key, o.kind, o.change));
        } else if constexpr (std::is_same_v<T, tx::Set>) {
          Shard& shard = s.ShardOf(o.request.key);
          shard.mu.AssertHeld();
          return deliver(SetKey(s, shard, o.request));
        } else if constexpr (std::is_same_v<T, tx::Delete> || std::is_same_v<T, tx::Exists>) {
          int64_t n = 0;
          for (const auto& key : o.keys) {
            Shard& shard = s.ShardOf(key);
            shard.mu.AssertHeld();
            if (std::is_same_v<T, tx::Delete> ? DeleteKey(s, shard, key)
                                              : ExistsKey(s, shard, key)) {
              ++n;
            }
          }
          return deliver(n);
        } else if constexpr (std::is_same_v<T, tx::Expire>) {
          Shard& shard = s.ShardOf(o.key);
          shard.mu.AssertHeld();
          return deliver(ExpireKey(s, shard, o.key, o.expiry, o.condition));
        } else if constexpr (std::is_same_v<T, tx::Increment>) {
          Shard& shard = s.ShardOf(o.request.key);
          shard.mu.AssertHeld();
          IncrOutcome outcome = IncrementKey(s, shard, o.request, max_value_bytes);
          if (!outcome.error.empty()) {
            return [done = o.done, error = std::move(outcome.error)] {
              done(Error::InvalidArgument(error));
            };
          }
          return deliver(std::move(outcome.reply));
        } else {
          Shard& shard = s.ShardOf(o.key);
          shard.mu.AssertHeld();
          return deliver(TtlKey(s, shard, o.key));
        }
      },
      op);
}

}  // namespace

TieredStore::TieredStore(const TieredOptions& options, Clock& clock,
                         std::unique_ptr<DurableBackend> durable)
    : options_(options),
      clock_(clock),
      durable_(std::move(durable)),
      tier_(TierOptionsFor(options, durable_ != nullptr), clock) {
  scope_config_.default_ttl = options_.memory.default_ttl;
  scope_config_.persist_slack = options_.ttl_persist_slack;
  scope_config_.durable = durable_ != nullptr;
  scope_config_.sync = durable_ != nullptr && options_.durability == Durability::kSync;
  if (!durable_) return;
  CommitterOptions c;
  c.writers = std::max(1, options_.writers);
  c.overlap_rows = options_.commit_overlap_rows;
  c.gather = options_.durability == Durability::kAsync;
  c.flush_interval = options_.flush_interval;
  c.write_timeout = options_.write_timeout;
  c.queue_max_writes = options_.queue_max_writes;
  c.batch_max_rows = options_.batch_max_rows;
  c.batch_max_bytes = options_.batch_max_bytes;
  committer_ =
      std::make_unique<GroupCommitter>(c, clock_, *durable_, static_cast<CommitListener&>(*this));
  // Shared coherence runs each operation once its rows are read: one reader completes the reads
  // in the order they were issued, so a client's pipelined commands apply in its order (two
  // readers let a GET overtake the SET before it).
  loader_ = std::make_unique<Loader>(options_.shared ? 1 : options_.readers, *durable_, clock_);
}

TieredStore::~TieredStore() {
  if (started_ && !closed_) (void)Close(std::chrono::milliseconds(0));
}

Status TieredStore::Start(bool load_index) {
  if (durable_ && load_index) SKYDB_RETURN_IF_ERROR(LoadIndex());
  if (committer_) committer_->Start();
  if (loader_) loader_->Start();
  auto first_durable_sweep = clock_.Now() + options_.durable_sweep_interval;
  maintenance_ = std::thread([this, first_durable_sweep] { MaintenanceLoop(first_durable_sweep); });
  started_ = true;
  return Ok();
}

Status TieredStore::LoadIndex() {
  int64_t before = tier_.count();
  SKYDB_RETURN_IF_ERROR(durable_->LoadIndex(
      tier_.WallMs(), [&](std::string key, UnixMillis expires_at, size_t /*value_bytes*/) {
        tier_.AddIndexed(std::move(key), expires_at);
      }));
  spdlog::info("store: loaded the index of {} live sessions from {}", tier_.count() - before,
               durable_->Describe());
  return Ok();
}

bool TieredStore::ReplyWaitsForCommit() const {
  if (!committer_) return false;
  if (options_.durability == Durability::kSync) return true;
  return committer_->OldestPendingAge() > options_.async_max_lag;
}

Status TieredStore::Reserve(size_t writes) {
  if (closing_) return Error::Unavailable("the store is shutting down; retry on the next daemon");
  if (committer_) {
    if (committer_->Reserve(writes)) return Ok();
    ++queue_full_;
    return Error::Unavailable(committer_->QueueFullMessage());
  }
  if (options_.memory.max_memory_bytes != 0 &&
      tier_.memory_bytes() > options_.memory.max_memory_bytes) {
    return Error::Unavailable(
        "OOM command not allowed when used memory > 'maxmemory' "
        "(memory-only store at store.max_memory)");
  }
  return Ok();
}

std::vector<std::string> TieredStore::EvictedAmong(const std::vector<std::string>& reads,
                                                   UnixMillis now) {
  std::vector<std::string> evicted;
  for (const auto& key : reads) {
    Shard& shard = tier_.ShardFor(KeyHash(key));
    shard.mu.AssertHeld();
    Found found = tier_.Lookup(shard, key, now);
    if (found.entry != nullptr && !found.entry->value) evicted.push_back(key);
  }
  return evicted;
}

template <typename T, typename Apply>
void TieredStore::Run(OpPlan plan, Apply apply, StoreCallback<T> done, const RowSet* rows,
                      int attempt) {
  ShardLocks locks(tier_, plan.keys);
  if (rows != nullptr) {
    Status fresh = EnsureRowsNewerThanOwnCommits(tier_, locks, *rows, plan.keys);
    if (!fresh.ok()) {
      locks.Unlock();
      return done(std::move(fresh).error());
    }
  }
  UnixMillis now = tier_.WallMs();
  // With rows (shared coherence) every value read comes with its row: nothing to load.
  if (rows == nullptr && !plan.reads.empty()) {
    std::vector<std::string> evicted = EvictedAmong(plan.reads, now);
    if (!evicted.empty()) {
      locks.Unlock();
      tier_.counters().misses += evicted.size();
      if (attempt >= kMaxLoadAttempts) {
        return done(
            Error::Unavailable("a value was evicted again while loading; raise "
                               "store.max_memory"));
      }
      return Load(std::move(evicted), [this, plan = std::move(plan), apply = std::move(apply), done,
                                       attempt](Status loaded) mutable {
        if (!loaded.ok()) return done(std::move(loaded).error());
        Run<T>(std::move(plan), std::move(apply), std::move(done), nullptr, attempt + 1);
      });
    }
    if (attempt == 0) tier_.counters().hits += plan.reads.size();
  }
  if (plan.max_writes > 0) {
    Status room = Reserve(plan.max_writes);
    if (!room.ok()) {
      locks.Unlock();
      return done(std::move(room).error());
    }
  }
  // A guarded transaction's reply always waits: its guard may still refuse it.
  Scope scope(tier_, scope_config_, now, clock_.Now(), rows,
              committer_
                  ? std::function<uint64_t()>([c = committer_.get()] { return c->NextSeq(); })
                  : nullptr,
              plan.guard != nullptr || ReplyWaitsForCommit());
  T result = apply(scope);
  std::vector<std::shared_ptr<Waiter>>& waits = scope.depends();
  size_t queued = scope.writes().size();
  if (committer_ && plan.max_writes > queued) committer_->Release(plan.max_writes - queued);
  writes_ += scope.applied_writes();
  if (queued > 0) {
    if (scope.waiter()) waits.push_back(scope.waiter());
    WriteUnit unit{std::move(scope.writes()), scope.waiter()};
    if (plan.guard) {
      unit.guard = plan.guard;
      HoldWrittenKeys(unit);
    }
    committer_->Enqueue(std::move(unit));
  }
  locks.Unlock();
  if (queued > 0 && tier_.OverMemoryCap()) tier_.EvictForMemory();
  if (waits.empty()) return done(std::move(result));
  AfterAll(waits, [done = std::move(done), result = std::move(result)](const Status& s) {
    if (s.ok()) return done(result);
    done(s.error());
  });
}

void TieredStore::Load(std::vector<std::string> keys, std::function<void(Status)> then) {
  std::vector<std::string> asked = keys;
  loader_->Read(std::move(keys), [this, asked = std::move(asked),
                                  then = std::move(then)](Result<std::vector<Row>> rows) {
    if (!rows.ok()) return then(std::move(rows).error());
    for (size_t i = 0; i < asked.size(); ++i) tier_.ApplyLoaded(asked[i], (*rows)[i]);
    then(Ok());
  });
}

void TieredStore::OnCommitted(const Batch& batch) {
  for (size_t i = 0; i < batch.rows.size(); ++i) {
    tier_.OnCommitted(HashedKey{batch.rows[i].key, batch.hashes[i]}, batch.seqs[i]);
  }
}

// Shared coherence keeps only uncommitted writes in memory: forgetting them leaves
// PostgreSQL's rows, which the refused unit never changed, as the truth.
void TieredStore::OnNotCommitted(const Batch& batch) { OnCommitted(batch); }

void TieredStore::HoldWrittenKeys(WriteUnit& unit) {
  auto hold = std::make_shared<TxHold>();
  std::vector<std::string> keys;
  for (const auto& w : unit.writes) {
    Shard& shard = tier_.ShardFor(w.hash);
    shard.mu.AssertHeld();
    shard.held[w.write.key] = hold;
    keys.push_back(w.write.key);
  }
  ++holds_;
  unit.guard->decided = [this, hold, keys = std::move(keys)] { LiftHold(hold, keys); };
  // Not fired yet: the unit is not queued.
  DurableDone time_out = [hold](const Status& s) {
    if (!s.ok()) hold->TimeOut(s.error());
  };
  (void)unit.waiter->Follow(time_out);
}

void TieredStore::LiftHold(const std::shared_ptr<TxHold>& hold,
                           const std::vector<std::string>& keys) {
  {
    ShardLocks locks(tier_, keys);
    for (const auto& key : keys) {
      Shard& shard = tier_.ShardFor(KeyHash(key));
      shard.mu.AssertHeld();
      auto it = shard.held.find(key);
      if (it != shard.held.end() && it->second == hold) shard.held.erase(it);
    }
  }
  --holds_;
  hold->Lift();
}

std::shared_ptr<TxHold> TieredStore::HoldOn(const std::vector<std::string>& keys) {
  if (holds_.load() == 0) return nullptr;
  ShardLocks locks(tier_, keys);
  for (const auto& key : keys) {
    Shard& shard = tier_.ShardFor(KeyHash(key));
    shard.mu.AssertHeld();
    auto it = shard.held.find(key);
    if (it != shard.held.end()) return it->second;
  }
  return nullptr;
}

void TieredStore::Get(std::string key, StoreCallback<std::optional<std::string>> done) {
  ReadWith(ReadKind::kGet, std::move(key), std::nullopt, std::move(done), nullptr);
}

// The general path's answer for a plain GET (Run, ReadKey), taken without planning, claiming
// or a callback when nothing has to be loaded or waited for.
bool TieredStore::GetInPlace(const std::string& key, FunctionRef<void(const std::string*)> visit) {
  if (options_.shared) return false;  // the row must be read first
  HashedKey hashed{key, KeyHash(key)};
  Shard& shard = tier_.ShardFor(hashed.hash);
  MutexLock lock(shard.mu);
  Found found = tier_.Lookup(shard, hashed, tier_.WallMs());
  if (scope_config_.sync && found.pending) return false;  // the reply waits for that commit
  if (found.entry != nullptr && !found.entry->value) return false;  // evicted: Get loads it
  tier_.CountHitInPlace(shard);
  if (found.entry == nullptr) {
    visit(nullptr);
    return true;
  }
  tier_.Touch(shard, *found.entry);
  visit(&found.entry->value->str());
  return true;
}

void TieredStore::GetEx(std::string key, std::optional<Expiry> change,
                        StoreCallback<std::optional<std::string>> done) {
  ReadKind kind = change ? ReadKind::kGetEx : ReadKind::kGet;
  ReadWith(kind, std::move(key), change, std::move(done), nullptr);
}

void TieredStore::GetDel(std::string key, StoreCallback<std::optional<std::string>> done) {
  ReadWith(ReadKind::kGetDel, std::move(key), std::nullopt, std::move(done), nullptr);
}

void TieredStore::ReadWith(ReadKind kind, std::string key, std::optional<Expiry> change,
                           StoreCallback<std::optional<std::string>> done, const RowSet* rows) {
  OpPlan plan{{key}, {key}, kind == ReadKind::kGet ? size_t{0} : size_t{1}};
  Run<std::optional<std::string>>(
      std::move(plan),
      [key = std::move(key), kind, change](Scope& s) {
        Shard& shard = s.ShardOf(key);
        shard.mu.AssertHeld();
        return ReadKey(s, shard, key, kind, change);
      },
      std::move(done), rows, 0);
}

void TieredStore::Set(SetRequest request, StoreCallback<SetReply> done) {
  SetWith(std::move(request), std::move(done), nullptr);
}

void TieredStore::SetWith(SetRequest request, StoreCallback<SetReply> done, const RowSet* rows) {
  Status sizes = CheckSizes(request, options_.memory);
  if (!sizes.ok()) return done(std::move(sizes).error());
  OpPlan plan{{request.key}, {}, 1};
  if (request.return_old) plan.reads.push_back(request.key);
  Run<SetReply>(
      std::move(plan),
      [request = std::move(request)](Scope& s) mutable {
        Shard& shard = s.ShardOf(request.key);
        shard.mu.AssertHeld();
        return SetKey(s, shard, request);
      },
      std::move(done), rows, 0);
}

void TieredStore::Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  DeleteWith(std::move(keys), std::move(done), nullptr);
}

void TieredStore::DeleteWith(std::vector<std::string> keys, StoreCallback<int64_t> done,
                             const RowSet* rows) {
  if (keys.empty()) return done(int64_t{0});
  size_t n = keys.size();
  OpPlan plan{keys, {}, n};
  Run<int64_t>(
      std::move(plan),
      [keys = std::move(keys)](Scope& s) {
        int64_t deleted = 0;
        for (const auto& key : keys) {
          Shard& shard = s.ShardOf(key);
          shard.mu.AssertHeld();
          if (DeleteKey(s, shard, key)) ++deleted;
        }
        return deleted;
      },
      std::move(done), rows, 0);
}

void TieredStore::Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  ExistsWith(std::move(keys), std::move(done), nullptr);
}

void TieredStore::ExistsWith(std::vector<std::string> keys, StoreCallback<int64_t> done,
                             const RowSet* rows) {
  if (keys.empty()) return done(int64_t{0});
  OpPlan plan{keys, {}, 0};
  Run<int64_t>(
      std::move(plan),
      [keys = std::move(keys)](Scope& s) {
        int64_t found = 0;
        for (const auto& key : keys) {
          Shard& shard = s.ShardOf(key);
          shard.mu.AssertHeld();
          if (ExistsKey(s, shard, key)) ++found;
        }
        return found;
      },
      std::move(done), rows, 0);
}

void TieredStore::Expire(std::string key, Expiry expiry, ExpireCondition condition,
                         StoreCallback<bool> done) {
  ExpireWith(std::move(key), expiry, condition, std::move(done), nullptr);
}

void TieredStore::ExpireWith(std::string key, Expiry expiry, ExpireCondition condition,
                             StoreCallback<bool> done, const RowSet* rows) {
  OpPlan plan{{key}, {}, 1};
  Run<bool>(
      std::move(plan),
      [key = std::move(key), expiry, condition](Scope& s) {
        Shard& shard = s.ShardOf(key);
        shard.mu.AssertHeld();
        return ExpireKey(s, shard, key, expiry, condition);
      },
      std::move(done), rows, 0);
}

void TieredStore::Increment(IncrRequest request, StoreCallback<IncrReply> done) {
  IncrementWith(std::move(request), std::move(done), nullptr);
}

void TieredStore::IncrementWith(IncrRequest request, StoreCallback<IncrReply> done,
                                const RowSet* rows) {
  if (request.key.size() > options_.memory.max_key_bytes) {
    return done(Error::InvalidArgument("key is " + std::to_string(request.key.size()) +
                                       " bytes; the limit is " +
                                       std::to_string(options_.memory.max_key_bytes)));
  }
  OpPlan plan{{request.key}, {request.key}, 1};
  Run<IncrOutcome>(
      std::move(plan),
      [request = std::move(request), max = options_.memory.max_value_bytes](Scope& s) {
        Shard& shard = s.ShardOf(request.key);
        shard.mu.AssertHeld();
        return IncrementKey(s, shard, request, max);
      },
      [done = std::move(done)](Result<IncrOutcome> outcome) {
        if (!outcome.ok()) return done(std::move(outcome).error());
        if (!outcome->error.empty()) return done(Error::InvalidArgument(outcome->error));
        done(std::move(outcome->reply));
      },
      rows, 0);
}

// Memory is cleared and the durable delete queued under every shard's lock, so no operation
// sees one without the other, and every write before it is queued ahead of it.
void TieredStore::DeleteAll(StoreCallback<int64_t> done) {
  if (closing_)
    return done(Error::Unavailable("the store is shutting down; retry on the next daemon"));
  ShardLocks locks(tier_);
  int64_t removed = tier_.ClearAllLocked();
  std::shared_ptr<Waiter> waiter;
  if (committer_) {
    if (ReplyWaitsForCommit()) waiter = std::make_shared<Waiter>(clock_.Now(), nullptr);
    committer_->EnqueueDeleteAll(waiter);
  }
  ++writes_;
  locks.Unlock();
  spdlog::info("store: FLUSHALL: {} sessions deleted from memory{}", removed,
               committer_ ? "; deleting every row in PostgreSQL" : "");
  if (!waiter) return done(removed);
  AfterAll({waiter}, [done = std::move(done), removed](const Status& s) {
    if (s.ok()) return done(removed);
    done(s.error());
  });
}

void TieredStore::Ttl(std::string key, StoreCallback<TtlReply> done) {
  TtlWith(std::move(key), std::move(done), nullptr);
}

void TieredStore::TtlWith(std::string key, StoreCallback<TtlReply> done, const RowSet* rows) {
  OpPlan plan{{key}, {}, 0};
  Run<TtlReply>(
      std::move(plan),
      [key = std::move(key)](Scope& s) {
        Shard& shard = s.ShardOf(key);
        shard.mu.AssertHeld();
        return TtlKey(s, shard, key);
      },
      std::move(done), rows, 0);
}

void TieredStore::Watch(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
                        StoreCallback<bool> done) {
  WatchWith(std::move(keys), std::move(into), std::move(done), nullptr);
}

void TieredStore::WatchWith(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
                            StoreCallback<bool> done, const RowSet* rows) {
  if (rows == nullptr) into->AddNames(keys);
  ShardLocks locks(tier_, keys);
  if (rows != nullptr) {
    Status fresh = EnsureRowsNewerThanOwnCommits(tier_, locks, *rows, keys);
    if (!fresh.ok()) {
      locks.Unlock();
      return done(std::move(fresh).error());
    }
  }
  Scope scope(tier_, scope_config_, tier_.WallMs(), clock_.Now(), rows, nullptr, false);
  for (auto& key : keys) {
    Shard& shard = scope.ShardOf(key);
    shard.mu.AssertHeld();
    Watched& watched = shard.watched[key];
    ++watched.watchers;
    bool live = scope.Find(shard, key).entry != nullptr;
    uint64_t row = rows != nullptr ? RowFingerprint(RowOf(*rows, key)) : 0;
    into->Add({std::move(key), watched.version, live, row});
  }
  locks.Unlock();
  done(true);
}

void TieredStore::Unwatch(WatchList& list) {
  std::vector<WatchList::Key> watched = list.Take();
  std::vector<std::string> keys;
  for (const auto& w : watched) keys.push_back(w.key);
  ShardLocks locks(tier_, keys);
  for (const auto& key : keys) {
    Shard& shard = tier_.ShardFor(KeyHash(key));
    shard.mu.AssertHeld();
    auto it = shard.watched.find(key);
    if (it != shard.watched.end() && --it->second.watchers == 0) shard.watched.erase(it);
  }
}

void TieredStore::Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                           StoreCallback<bool> done) {
  TransactWith(std::move(ops), std::move(watched), std::move(done), nullptr);
}

void TieredStore::TransactWith(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                               StoreCallback<bool> done, const RowSet* rows) {
  std::vector<WatchList::Key> watch;
  if (watched) {
    if (auto failure = watched->failure()) return done(*failure);
    watch = watched->keys();
  }
  OpPlan plan;
  PlanTransaction(ops, watch, &plan.keys, &plan.reads, &plan.max_writes);
  if (rows != nullptr && !watch.empty() && committer_) plan.guard = GuardFor(watch);
  std::shared_ptr<CommitGuard> guard = plan.guard;
  // A write the store would refuse alone (sizes) refuses the whole transaction: no failure
  // applies part of one.
  for (const auto& op : ops) {
    if (const auto* set = std::get_if<tx::Set>(&op)) {
      Status sizes = CheckSizes(set->request, options_.memory);
      if (!sizes.ok()) {
        return done(std::move(sizes).error().Within("the transaction applied nothing"));
      }
    }
  }
  Run<TxOutcome>(
      std::move(plan),
      [ops = std::move(ops), watch = std::move(watch), rows,
       max_value = options_.memory.max_value_bytes](Scope& s) mutable {
        TxOutcome out;
        if (WatchedKeyChanged(s, watch, rows)) return out;
        if (ReadBytesBound(s, ops) > kMaxTransactionReadBytes) {
          out.refused = Error::InvalidArgument("the transaction would read more than " +
                                               std::to_string(kMaxTransactionReadBytes >> 20) +
                                               " MiB of values; it applied nothing: split it");
          return out;
        }
        out.applied = true;
        for (auto& op : ops) out.deliveries.push_back(ApplyOp(s, op, max_value));
        return out;
      },
      StoreCallback<TxOutcome>([done = std::move(done), guard](Result<TxOutcome> outcome) {
        if (!outcome.ok() && guard && guard->refused) return done(false);
        if (!outcome.ok()) return done(std::move(outcome).error());
        if (outcome->refused) return done(*outcome->refused);
        if (!outcome->applied) return done(false);
        for (auto& deliver : outcome->deliveries) deliver();
        done(true);
      }),
      rows, 0);
}

void TieredStore::Scan(uint64_t cursor, std::string pattern, size_t count,
                       StoreCallback<ScanReply> done) {
  done(tier_.Scan(cursor, pattern, std::max<size_t>(count, 1)));
}

StoreStats TieredStore::Stats() const {
  StoreStats s;
  s.kind = durable_ ? "tiered" : "memory";
  s.durability = !durable_ ? "none" : options_.durability == Durability::kSync ? "sync" : "async";
  s.sessions = tier_.count();
  s.expiring = tier_.expiring();
  s.cached_values = tier_.cached_values();
  s.memory_bytes = tier_.memory_bytes();
  s.max_memory_bytes = options_.memory.max_memory_bytes;
  s.writes = writes_.load();
  s.queue_full_rejections = queue_full_.load();
  const TierCounters& c = tier_.counters();
  s.cache_hits = tier_.hits();
  s.cache_misses = c.misses.load();
  s.evictions_idle = c.evictions_idle.load();
  s.evictions_memory = c.evictions_memory.load();
  s.expirations = c.expirations.load();
  if (committer_) committer_->FillStats(s);
  if (durable_) {
    DurablePoolStats pool = durable_->PoolStats();
    s.pool_size = pool.size;
    s.pool_open = pool.open;
    s.pool_busy = pool.busy;
    s.pool_waiters = loader_->waiting();
  }
  return s;
}

Status TieredStore::Close(std::chrono::milliseconds timeout) {
  if (closed_) return Ok();
  closed_ = true;
  closing_ = true;
  uint64_t left = committer_ ? committer_->Stop(clock_.Now() + timeout) : 0;
  if (loader_) loader_->Stop();
  {
    MutexLock lock(maintenance_mu_);
    stopping_ = true;
  }
  maintenance_cv_.NotifyAll();
  if (maintenance_.joinable()) maintenance_.join();
  if (left != 0) {
    return Error::Timeout(std::to_string(left) + " writes were not committed before shutdown");
  }
  return Ok();
}

}  // namespace skydb::store
