#include "store/tiered_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "store/collection_ops.h"
#include "store/key_ops.h"
#include "store/tx_ops.h"

namespace skydb::store {
namespace {

TierOptions TierOptionsFor(const TieredOptions& o, bool durable) {
  TierOptions t;
  t.memory = o.memory;
  t.evictable = durable;
  t.retain_committed = !o.shared;
  return t;
}

CommitterOptions CommitterOptionsFor(const TieredOptions& o) {
  CommitterOptions c;
  c.writers = std::max(1, o.writers);
  c.overlap_rows = o.commit_overlap_rows;
  c.overlap_bytes = o.commit_overlap_bytes;
  c.gather = o.durability == Durability::kAsync;
  c.flush_interval = o.flush_interval;
  c.write_timeout = o.write_timeout;
  c.queue_max_writes = o.queue_max_writes;
  c.batch_max_rows = o.batch_max_rows;
  c.batch_max_bytes = o.batch_max_bytes;
  return c;
}

RunnerOptions RunnerOptionsFor(const TieredOptions& o, bool durable) {
  RunnerOptions r;
  r.scope.version_salt = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  r.scope.default_ttl = o.memory.default_ttl;
  r.scope.persist_slack = o.ttl_persist_slack;
  r.scope.durable = durable;
  r.scope.sync = durable && o.durability == Durability::kSync;
  r.durability = o.durability;
  r.async_max_lag = o.async_max_lag;
  r.write_timeout = o.write_timeout;
  return r;
}

Status CheckSizes(const SetRequest& r, const MemoryTierOptions& o) {
  SKYDB_RETURN_IF_ERROR(CheckKey(r.key, o));
  if (r.value.size() > o.max_value_bytes) {
    return Error::InvalidArgument("value is " + std::to_string(r.value.size()) +
                                  " bytes; the limit (store.max_value_bytes) is " +
                                  std::to_string(o.max_value_bytes));
  }
  return Ok();
}

}  // namespace

Status CheckKey(const std::string& key, const MemoryTierOptions& o) {
  if (key.size() <= o.max_key_bytes) return Ok();
  return Error::InvalidArgument("key is " + std::to_string(key.size()) + " bytes; the limit is " +
                                std::to_string(o.max_key_bytes));
}

TieredStore::TieredStore(const TieredOptions& options, Clock& clock,
                         std::unique_ptr<DurableBackend> durable)
    : options_(options),
      clock_(clock),
      durable_(std::move(durable)),
      tier_(TierOptionsFor(options, durable_ != nullptr), clock) {
  if (durable_) {
    committer_ = std::make_unique<GroupCommitter>(CommitterOptionsFor(options_), clock_, *durable_,
                                                  static_cast<CommitListener&>(*this));
    loader_ = std::make_unique<Loader>(options_.readers, *durable_, clock_);
  }
  coherence_ = options_.shared && durable_
                   ? NewSharedCoherence(tier_, *loader_, *durable_)
                   : NewExclusiveCoherence(tier_, loader_.get(), durable_.get());
  runner_ = std::make_unique<OpRunner>(RunnerOptionsFor(options_, durable_ != nullptr), clock_,
                                       tier_, committer_.get(), *coherence_);
}

TieredStore::~TieredStore() {
  if (started_ && !closed_) (void)Close(std::chrono::milliseconds(0));
}

Status TieredStore::Start() {
  SKYDB_RETURN_IF_ERROR(coherence_->Start());
  if (committer_) committer_->Start();
  if (loader_) loader_->Start();
  auto first_durable_sweep = clock_.Now() + options_.durable_sweep_interval;
  maintenance_ = std::thread([this, first_durable_sweep] { MaintenanceLoop(first_durable_sweep); });
  started_ = true;
  return Ok();
}

void TieredStore::OnCommitted(const Batch& batch) {
  for (size_t i = 0; i < batch.keys.size(); ++i) {
    tier_.OnCommitted(HashedKey{batch.keys[i], batch.hashes[i]}, batch.seqs[i]);
  }
}

// Shared coherence keeps only uncommitted writes in memory: forgetting them leaves
// PostgreSQL's rows, which the refused unit never changed, as the truth.
void TieredStore::OnNotCommitted(const Batch& batch) { OnCommitted(batch); }

void TieredStore::Get(std::string key, StoreCallback<std::optional<std::string>> done) {
  Read(ReadKind::kGet, std::move(key), std::nullopt, std::move(done));
}

// The general path's answer for a plain GET (Run, ReadKey), taken without planning, claiming
// or a callback when nothing has to be loaded, waited for or ordered behind another operation.
bool TieredStore::GetInPlace(const std::string& key, FunctionRef<void(const std::string*)> visit) {
  if (!coherence_->ServesFromMemory()) return false;
  HashedKey hashed{key, KeyHash(key)};
  Shard& shard = tier_.ShardFor(hashed.hash);
  MutexLock lock(shard.mu);
  if (KeyGates::IsGated(shard, key)) return false;  // an earlier operation on it runs first
  Found found = tier_.Lookup(shard, hashed, tier_.WallMs());
  if (committer_ && options_.durability == Durability::kSync && found.pending) return false;
  // Evicted (Get loads it), or not a string (Get answers WRONGTYPE).
  if (found.entry != nullptr && !found.entry->value) return false;
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
  Read(kind, std::move(key), change, std::move(done));
}

void TieredStore::GetDel(std::string key, StoreCallback<std::optional<std::string>> done) {
  Read(ReadKind::kGetDel, std::move(key), std::nullopt, std::move(done));
}

void TieredStore::Read(ReadKind kind, std::string key, std::optional<Expiry> change,
                       StoreCallback<std::optional<std::string>> done) {
  OpPlan plan{{key}, {key}, kind == ReadKind::kGet ? size_t{0} : size_t{1}};
  runner_->Run<std::optional<std::string>>(
      std::move(plan),
      [key = std::move(key), kind, change](Scope& s) {
        Shard& shard = s.ShardOf(key);
        s.Holds(shard);
        return ReadKey(s, shard, key, kind, change);
      },
      std::move(done));
}

void TieredStore::Set(SetRequest request, StoreCallback<SetReply> done) {
  Status sizes = CheckSizes(request, options_.memory);
  if (!sizes.ok()) return done(std::move(sizes).error());
  OpPlan plan{{request.key}, {}, 1};
  if (request.return_old) plan.reads.push_back(request.key);
  plan.blind = request.condition == SetCondition::kAlways && !request.return_old &&
               request.expiry.kind != Expiry::Kind::kKeep;
  runner_->Run<SetReply>(
      std::move(plan),
      [args = SetArgs::From(std::move(request))](Scope& s) {
        Shard& shard = s.ShardOf(args.key);
        s.Holds(shard);
        return SetKey(s, shard, args);
      },
      std::move(done));
}

void TieredStore::Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  if (keys.empty()) return done(int64_t{0});
  OpPlan plan{keys, {}, keys.size()};
  MakeDistinct(plan.keys);
  runner_->Run<int64_t>(
      std::move(plan),
      [keys = std::move(keys)](Scope& s) {
        int64_t deleted = 0;
        for (const auto& key : keys) {
          Shard& shard = s.ShardOf(key);
          s.Holds(shard);
          if (DeleteKey(s, shard, key)) ++deleted;
        }
        return deleted;
      },
      std::move(done));
}

void TieredStore::Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  if (keys.empty()) return done(int64_t{0});
  OpPlan plan{keys, {}, 0};
  MakeDistinct(plan.keys);
  runner_->Run<int64_t>(
      std::move(plan),
      [keys = std::move(keys)](Scope& s) {
        int64_t found = 0;
        for (const auto& key : keys) {
          Shard& shard = s.ShardOf(key);
          s.Holds(shard);
          if (ExistsKey(s, shard, key)) ++found;
        }
        return found;
      },
      std::move(done));
}

void TieredStore::Expire(std::string key, Expiry expiry, ExpireCondition condition,
                         StoreCallback<bool> done) {
  OpPlan plan{{key}, {}, 1};
  runner_->Run<bool>(
      std::move(plan),
      [key = std::move(key), expiry, condition](Scope& s) {
        Shard& shard = s.ShardOf(key);
        s.Holds(shard);
        return ExpireKey(s, shard, key, expiry, condition);
      },
      std::move(done));
}

void TieredStore::Increment(IncrRequest request, StoreCallback<IncrReply> done) {
  Status key = CheckKey(request.key, options_.memory);
  if (!key.ok()) return done(std::move(key).error());
  OpPlan plan{{request.key}, {request.key}, 1};
  runner_->Run<IncrOutcome>(
      std::move(plan),
      [request = std::move(request), max = options_.memory.max_value_bytes](Scope& s) {
        Shard& shard = s.ShardOf(request.key);
        s.Holds(shard);
        return IncrementKey(s, shard, request, max);
      },
      [done = std::move(done)](Result<IncrOutcome> outcome) {
        if (!outcome.ok()) return done(std::move(outcome).error());
        if (!outcome->error.empty()) return done(Error::InvalidArgument(outcome->error));
        done(std::move(outcome->reply));
      });
}

// Memory is cleared and the durable delete queued under every shard's lock, so no operation
// sees one without the other, and every write before it is queued ahead of it.
void TieredStore::DeleteAll(StoreCallback<int64_t> done) {
  OpPlan plan;
  plan.all_shards = true;
  plan.blind = true;
  runner_->Run<int64_t>(
      std::move(plan), [](Scope& s) { return s.ClearAll(); },
      [this, done = std::move(done)](Result<int64_t> removed) {
        if (!removed.ok()) return done(std::move(removed).error());
        spdlog::info("store: FLUSHALL: {} sessions deleted{}", *removed,
                     committer_ ? " from memory and PostgreSQL" : "");
        done(coherence_->Flushed(*removed));
      });
}

void TieredStore::Ttl(std::string key, StoreCallback<TtlReply> done) {
  OpPlan plan{{key}, {}, 0};
  runner_->Run<TtlReply>(
      std::move(plan),
      [key = std::move(key)](Scope& s) {
        Shard& shard = s.ShardOf(key);
        s.Holds(shard);
        return TtlKey(s, shard, key);
      },
      std::move(done));
}

void TieredStore::Watch(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
                        StoreCallback<bool> done) {
  uint64_t epoch = into->AddNames(keys);
  OpPlan plan{keys, {}, 0};
  MakeDistinct(plan.keys);
  runner_->Run<bool>(
      std::move(plan),
      [keys = std::move(keys), into = std::move(into), epoch](Scope& s) {
        WatchKeys(s, keys, *into, epoch, s.rows());
        return true;
      },
      std::move(done));
}

void TieredStore::Unwatch(WatchList& list) {
  std::vector<std::string> keys;
  for (auto& w : list.Take()) keys.push_back(std::move(w.key));
  ShardLocks locks(tier_, keys);
  UnwatchKeys(locks, tier_, keys);
}

void TieredStore::Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                           StoreCallback<bool> done, ReplyAdmission admit) {
  // A write the store would refuse alone (sizes) refuses the whole transaction: no failure
  // applies part of one.
  for (const auto& op : ops) {
    Status sizes = Ok();
    if (const auto* set = std::get_if<tx::Set>(&op))
      sizes = CheckSizes(set->request, options_.memory);
    if (const auto* script = std::get_if<tx::Script>(&op)) {
      for (const auto& key : script->keys) {
        if (sizes.ok()) sizes = CheckKey(key, options_.memory);
      }
    }
    if (!sizes.ok())
      return done(std::move(sizes).error().Within("the transaction applied nothing"));
  }
  OpPlan plan;
  auto tx = std::make_shared<PlannedTx>(PlanTransaction(std::move(ops), std::move(watched), &plan));
  runner_->Run<TxOutcome>(
      std::move(plan),
      [tx, admit = std::move(admit), max_value = options_.memory.max_value_bytes](Scope& s) {
        return ApplyTransaction(s, *tx, s.rows(), max_value, admit);
      },
      [done = std::move(done)](Result<TxOutcome> outcome) {
        if (!outcome.ok()) return done(std::move(outcome).error());
        if (outcome->refused) return done(*outcome->refused);
        if (!outcome->applied) return done(false);
        for (auto& deliver : outcome->deliveries) deliver();
        done(true);
      });
}

void TieredStore::Scan(uint64_t cursor, std::string pattern, size_t count,
                       std::optional<ValueType> type, StoreCallback<ScanReply> done) {
  coherence_->Scan(cursor, std::move(pattern), count, type, std::move(done));
}

StoreStats TieredStore::Stats() const {
  StoreStats s;
  s.kind = durable_ ? "tiered" : "memory";
  s.durability = !durable_ ? "none" : options_.durability == Durability::kSync ? "sync" : "async";
  coherence_->FillCounts(s);
  s.cached_values = tier_.cached_values();
  s.memory_bytes = tier_.memory_bytes();
  s.max_memory_bytes = tier_.max_memory_bytes();
  s.writes = runner_->writes();
  s.queue_full_rejections = runner_->queue_full();
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
  runner_->Close();
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
