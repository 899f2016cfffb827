#include "store/engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace skydb::store {
namespace {

constexpr int kMaxLoadAttempts = 3;

uint64_t EntryBytes(const std::string& key, const Entry& e) {
  return kEntryOverheadBytes + key.size() + (e.value ? e.value->size() : 0);
}

// Joins the replies of a multi-key operation: counts successes, keeps the first error.
struct CountJoin {
  std::mutex mu;
  size_t remaining = 0;
  int64_t count = 0;
  std::optional<Error> error;
  StoreCallback<int64_t> done;

  void Add(Result<bool> r) {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!r.ok() && !error) error = r.error();
      if (r.ok() && *r) ++count;
      last = --remaining == 0;
    }
    if (last) {
      if (error) {
        done(*error);
      } else {
        done(count);
      }
    }
  }
};

// Calls `each(key, one)` for every key; `done` gets how many `one` calls said true, or the
// first error, once all have answered.
void CountOverKeys(const std::vector<std::string>& keys, StoreCallback<int64_t> done,
                   const std::function<void(const std::string&, StoreCallback<bool>)>& each) {
  if (keys.empty()) return done(int64_t{0});
  auto join = std::make_shared<CountJoin>();
  join->remaining = keys.size();
  join->done = std::move(done);
  for (const auto& key : keys) each(key, [join](Result<bool> r) { join->Add(std::move(r)); });
}

}  // namespace

uint64_t KeyHash(std::string_view key) {
  // FNV-1a then a 64-bit finaliser, so the top bits (the shard) are well mixed.
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

Engine::Engine(const TieredOptions& options, Clock& clock,
               std::unique_ptr<DurableBackend> durable)
    : options_(options), clock_(clock), durable_(std::move(durable)), shards_(kShardCount) {
  int writers = durable_ ? std::max(1, options_.writers) : 0;
  for (int i = 0; i < writers; ++i) partitions_.push_back(std::make_unique<Partition>());
}

Engine::~Engine() {
  if (started_ && !closed_) (void)Close(std::chrono::milliseconds(0));
}

UnixMillis Engine::WallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             clock_.WallNow().time_since_epoch())
      .count();
}

int64_t Engine::SteadyMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch())
      .count();
}

Status Engine::Start() {
  if (shared()) {
    // Other daemons write this table: no index is loaded, every operation reads its row.
    SKYDB_RETURN_IF_ERROR(RefreshSharedCount());
    spdlog::info("store: shared coherence on {}: {} live sessions", durable_->Describe(),
                 shared_sessions_.load());
  } else if (durable_) {
    UnixMillis now = WallMs();
    int64_t loaded = 0;
    SKYDB_RETURN_IF_ERROR(durable_->LoadIndex(
        now, [&](std::string key, UnixMillis expires_at, size_t /*value_bytes*/) {
          uint64_t hash = KeyHash(key);
          Shard& shard = ShardFor(hash);
          std::lock_guard<std::mutex> lock(shard.mu);
          auto [it, inserted] = shard.entries.try_emplace(std::move(key));
          if (!inserted) return;
          it->second.key = &it->first;
          SetDeadlineLocked(it->second, expires_at);
          it->second.persisted_expires_at = expires_at;
          memory_bytes_ += EntryBytes(it->first, it->second);
          ++loaded;
        }));
    count_ = loaded;
    spdlog::info("store: loaded the index of {} live sessions from {}", loaded,
                 durable_->Describe());
  }
  if (durable_) {
    for (size_t i = 0; i < partitions_.size(); ++i) {
      partitions_[i]->thread = std::thread([this, i] { WriterLoop(static_cast<int>(i)); });
    }
    for (int i = 0; i < std::max(1, options_.readers); ++i) {
      loaders_.emplace_back([this, i] { LoaderLoop(i); });
    }
    deadline_watcher_ = std::thread([this] { DeadlineWatcherLoop(); });
  }
  auto first_durable_sweep = clock_.Now() + options_.durable_sweep_interval;
  sweeper_ = std::thread([this, first_durable_sweep] { SweeperLoop(first_durable_sweep); });
  started_ = true;
  return Ok();
}

Entry* Engine::FindLive(Shard& shard, const std::string& key, UnixMillis now) {
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return nullptr;
  if (IsExpired(it->second, now)) {
    EraseLocked(shard, it);
    ++expirations_;
    return nullptr;
  }
  return &it->second;
}

Entry* Engine::LookupLocked(Shard& shard, const std::string& key, UnixMillis now,
                            const Row* row) {
  if (!shared() || row == nullptr) return FindLive(shard, key, now);
  auto it = shard.entries.find(key);
  if (it != shard.entries.end() && it->second.dirty_seq != 0) return FindLive(shard, key, now);
  // A clean copy may be older than the row just read: it is replaced, never trusted.
  if (it != shard.entries.end()) EraseLocked(shard, it);
  if (shard.pending_deletes.count(key) != 0) return nullptr;
  if (!row->has_value() || ((*row)->expires_at != 0 && (*row)->expires_at <= now)) return nullptr;
  auto [fresh, inserted] = shard.entries.try_emplace(key);
  Entry& e = fresh->second;
  e.key = &fresh->first;
  memory_bytes_ += EntryBytes(fresh->first, e);
  ++count_;
  SetDeadlineLocked(e, (*row)->expires_at);
  e.persisted_expires_at = (*row)->expires_at;
  SetValueLocked(shard, e, (*row)->value);
  return &e;
}

template <typename T, typename Op>
void Engine::WithRow(const std::string& key, const StoreCallback<T>& done, Op op) {
  if (!shared()) return op(nullptr);
  Fetch(key, [done, op = std::move(op)](Result<Row> row) mutable {
    if (!row.ok()) return done(std::move(row).error());
    op(&*row);
  });
}

void Engine::SetDeadlineLocked(Entry& e, UnixMillis deadline) {
  if ((e.expires_at != 0) != (deadline != 0)) expiring_ += deadline != 0 ? 1 : -1;
  e.expires_at = deadline;
}

void Engine::EraseLocked(Shard& shard, std::unordered_map<std::string, Entry>::iterator it) {
  if (it->second.expires_at != 0) --expiring_;
  LruRemove(shard, it->second);
  memory_bytes_ -= EntryBytes(it->first, it->second);
  if (it->second.value) --cached_values_;
  shard.entries.erase(it);
  --count_;
}

void Engine::LruRemove(Shard& shard, Entry& e) {
  if (!e.in_lru) return;
  shard.lru.erase(e.lru_pos);
  e.in_lru = false;
}

void Engine::LruTouch(Shard& shard, Entry& e) {
  e.last_access_ms = SteadyMs();
  // Only clean cached values of a tiered store are evictable.
  if (!durable() || e.dirty_seq != 0 || !e.value) return;
  LruRemove(shard, e);
  shard.lru.push_back(e.key);
  e.lru_pos = std::prev(shard.lru.end());
  e.in_lru = true;
}

void Engine::SetValueLocked(Shard& shard, Entry& e, std::string value) {
  memory_bytes_ -= EntryBytes(*e.key, e);
  if (!e.value) ++cached_values_;
  e.value = std::move(value);
  memory_bytes_ += EntryBytes(*e.key, e);
  LruTouch(shard, e);
}

UnixMillis Engine::ResolveDeadline(const Expiry& expiry, const Entry* existing,
                                   UnixMillis now) const {
  switch (expiry.kind) {
    case Expiry::Kind::kDefault:
      return options_.memory.default_ttl.count() > 0 ? now + options_.memory.default_ttl.count()
                                                     : 0;
    case Expiry::Kind::kNone: return 0;
    case Expiry::Kind::kAt: return expiry.at;
    case Expiry::Kind::kKeep: return existing != nullptr ? existing->expires_at : 0;
  }
  return 0;
}

UnixMillis Engine::PersistedDeadline(UnixMillis deadline) const {
  return deadline == 0 ? 0 : deadline + options_.ttl_persist_slack.count();
}

bool Engine::TouchNeedsPersist(const Entry& e, UnixMillis deadline) const {
  if (deadline == 0) return e.persisted_expires_at != 0;
  if (e.persisted_expires_at == 0) return true;  // durable copy would never expire
  if (deadline > e.persisted_expires_at) return true;  // durable copy would expire early
  // Shortened by more than the slack: a crash would let it live too long.
  return deadline + options_.ttl_persist_slack.count() < e.persisted_expires_at;
}

Status Engine::CheckWritable(size_t new_writes) const {
  if (closing_) return Error::Unavailable("the store is shutting down; retry on the next daemon");
  if (durable() && queued_.load() + new_writes > options_.queue_max_writes) {
    return Error::Unavailable("write queue full (" + std::to_string(options_.queue_max_writes) +
                              " writes waiting for PostgreSQL); retry later");
  }
  if (!durable() && options_.memory.max_memory_bytes != 0 &&
      memory_bytes_.load() > options_.memory.max_memory_bytes) {
    return Error::Unavailable("OOM command not allowed when used memory > 'maxmemory' "
                              "(memory-only store at store.max_memory)");
  }
  return Ok();
}

uint64_t Engine::EnqueueLocked(uint64_t hash, DurableWrite write, DurableDone done) {
  uint64_t seq = ++seq_;
  ++writes_;
  if (!durable()) return seq;
  if (shared() && write.kind == DurableWrite::Kind::kDelete) {
    ShardFor(hash).pending_deletes[write.key] = seq;
  }
  Partition& p = *partitions_[PartitionFor(hash)];
  auto now = clock_.Now();
  std::shared_ptr<Waiter> waiter;
  if (done) {
    waiter = std::make_shared<Waiter>();
    waiter->done = std::move(done);
    waiter->enqueued = now;
  }
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.queue.push_back({std::move(write), seq, now, waiter});
    if (waiter) p.waiters.push_back(std::move(waiter));
  }
  ++queued_;
  p.cv.notify_one();
  return seq;
}

void Engine::Get(std::string key, StoreCallback<std::optional<std::string>> done) {
  GetEx(std::move(key), std::nullopt, std::move(done));
}

void Engine::GetEx(std::string key, std::optional<Expiry> change,
                   StoreCallback<std::optional<std::string>> done) {
  ReadKind kind = change ? ReadKind::kGetEx : ReadKind::kGet;
  WithRow(key, done, [this, kind, key, change, done](const Row* row) {
    ReadOp(kind, key, change, done, 0, row);
  });
}

void Engine::GetDel(std::string key, StoreCallback<std::optional<std::string>> done) {
  WithRow(key, done, [this, key, done](const Row* row) {
    ReadOp(ReadKind::kGetDel, key, std::nullopt, done, 0, row);
  });
}

void Engine::ReadOp(ReadKind kind, std::string key, std::optional<Expiry> change,
                    StoreCallback<std::optional<std::string>> done, int attempt, const Row* row) {
  uint64_t hash = KeyHash(key);
  Shard& shard = ShardFor(hash);
  UnixMillis now = WallMs();
  std::optional<std::string> value;
  {
    std::unique_lock<std::mutex> lock(shard.mu);
    Entry* e = LookupLocked(shard, key, now, row);
    if (e == nullptr) {
      lock.unlock();
      done(std::optional<std::string>());
      return;
    }
    if (!e->value) {
      lock.unlock();
      ++misses_;
      if (attempt >= kMaxLoadAttempts) {
        done(Error::Unavailable("value of '" + key + "' was evicted again while loading; "
                                "raise store.max_memory"));
        return;
      }
      Load(key, [this, kind, key, change, done, attempt](Result<bool> loaded) {
        if (!loaded.ok()) return done(std::move(loaded).error());
        ReadOp(kind, key, change, done, attempt + 1, nullptr);
      });
      return;
    }
    if (attempt == 0 && !shared()) ++hits_;
    bool needs_write = kind == ReadKind::kGetDel || (kind == ReadKind::kGetEx && change);
    if (needs_write) {
      Status writable = CheckWritable(1);
      if (!writable.ok()) {
        lock.unlock();
        done(std::move(writable).error());
        return;
      }
    }
    value = e->value;
    DurableDone on_durable = WaiterFor(value, done);
    bool waits = on_durable != nullptr;
    bool enqueued = false;
    if (kind == ReadKind::kGetDel) {
      EraseLocked(shard, shard.entries.find(key));
      EnqueueLocked(hash, {DurableWrite::Kind::kDelete, key, {}, 0}, std::move(on_durable));
      enqueued = true;
    } else if (kind == ReadKind::kGetEx && change) {
      enqueued = ApplyDeadlineLocked(shard, hash, key, *e, *change, now, on_durable);
    } else {
      LruTouch(shard, *e);
    }
    if (waits && enqueued) return;  // the writer replies after COMMIT
  }
  done(std::move(value));
}

// Sync durability: a callback that replies `reply` after COMMIT; otherwise null.
template <typename T>
DurableDone Engine::WaiterFor(T reply, const StoreCallback<T>& done) const {
  if (!durable() || options_.durability != Durability::kSync) return nullptr;
  return [reply = std::move(reply), done](Status s) {
    if (s.ok()) {
      done(reply);
    } else {
      done(std::move(s).error());
    }
  };
}

bool Engine::ApplyDeadlineLocked(Shard& shard, uint64_t hash, const std::string& key, Entry& e,
                                 const Expiry& expiry, UnixMillis now, DurableDone& on_durable) {
  UnixMillis deadline = ResolveDeadline(expiry, &e, now);
  if (expiry.kind == Expiry::Kind::kAt && deadline <= now) {
    EraseLocked(shard, shard.entries.find(key));
    EnqueueLocked(hash, {DurableWrite::Kind::kDelete, key, {}, 0}, std::move(on_durable));
    return true;
  }
  SetDeadlineLocked(e, deadline);
  bool enqueued = false;
  if (TouchNeedsPersist(e, deadline)) {
    e.persisted_expires_at = PersistedDeadline(deadline);
    LruRemove(shard, e);
    uint64_t seq = EnqueueLocked(
        hash, {DurableWrite::Kind::kTouch, key, {}, e.persisted_expires_at}, std::move(on_durable));
    e.dirty_seq = durable() ? seq : 0;
    enqueued = true;
  }
  LruTouch(shard, e);
  return enqueued;
}

void Engine::Set(SetRequest request, StoreCallback<SetReply> done) {
  if (request.key.size() > options_.memory.max_key_bytes) {
    return done(Error::InvalidArgument("key is " + std::to_string(request.key.size()) +
                                       " bytes; the limit is " +
                                       std::to_string(options_.memory.max_key_bytes)));
  }
  if (request.value.size() > options_.memory.max_value_bytes) {
    return done(Error::InvalidArgument("value is " + std::to_string(request.value.size()) +
                                       " bytes; the limit (store.max_value_bytes) is " +
                                       std::to_string(options_.memory.max_value_bytes)));
  }
  // A plain SET's outcome does not depend on the key's current row, so even a shared store
  // need not read it first: the write becomes this daemon's newest state for the key at once.
  bool plain = request.condition == SetCondition::kAlways && !request.return_old &&
               request.expiry.kind != Expiry::Kind::kKeep;
  if (!shared() || plain) return SetOp(std::move(request), std::move(done), 0, nullptr);
  std::string key = request.key;
  WithRow(key, done, [this, request = std::move(request), done](const Row* row) mutable {
    SetOp(std::move(request), done, 0, row);
  });
}

void Engine::SetOp(SetRequest request, StoreCallback<SetReply> done, int attempt,
                   const Row* row) {
  uint64_t hash = KeyHash(request.key);
  Shard& shard = ShardFor(hash);
  UnixMillis now = WallMs();
  SetReply reply;
  std::unique_lock<std::mutex> lock(shard.mu);
  Entry* e = LookupLocked(shard, request.key, now, row);
  if (request.return_old && e != nullptr && !e->value) {
    lock.unlock();
    if (attempt >= kMaxLoadAttempts) {
      return done(Error::Unavailable("old value was evicted again while loading; raise "
                                     "store.max_memory"));
    }
    std::string key = request.key;
    return Load(key, [this, request = std::move(request), done, attempt](
                         Result<bool> loaded) mutable {
      if (!loaded.ok()) return done(std::move(loaded).error());
      SetOp(std::move(request), done, attempt + 1, nullptr);
    });
  }
  if (request.return_old && e != nullptr) reply.old_value = e->value;
  bool blocked = (request.condition == SetCondition::kIfAbsent && e != nullptr) ||
                 (request.condition == SetCondition::kIfPresent && e == nullptr);
  if (blocked) {
    lock.unlock();
    return done(reply);
  }
  Status writable = CheckWritable(1);
  if (!writable.ok()) {
    lock.unlock();
    if (durable()) ++queue_full_;
    return done(std::move(writable).error());
  }
  UnixMillis deadline = ResolveDeadline(request.expiry, e, now);
  reply.applied = true;
  if (request.expiry.kind == Expiry::Kind::kAt && deadline <= now) {
    // A deadline already past: the key ends now, as in Redis.
    if (e != nullptr) EraseLocked(shard, shard.entries.find(request.key));
    DurableDone on_durable = WaiterFor(reply, done);
    bool waits = on_durable != nullptr;
    EnqueueLocked(hash, {DurableWrite::Kind::kDelete, request.key, {}, 0}, std::move(on_durable));
    lock.unlock();
    if (!waits) done(reply);
    return;
  }
  if (e == nullptr) {
    auto [it, inserted] = shard.entries.try_emplace(request.key);
    e = &it->second;
    e->key = &it->first;
    memory_bytes_ += EntryBytes(it->first, *e);
    ++count_;
  }
  SetDeadlineLocked(*e, deadline);
  // A value write persists the exact deadline; only deadline-only changes add the slack.
  e->persisted_expires_at = deadline;
  LruRemove(shard, *e);
  DurableWrite write{DurableWrite::Kind::kUpsert, request.key, request.value,
                     e->persisted_expires_at};
  DurableDone on_durable = WaiterFor(reply, done);
  bool waits = on_durable != nullptr;
  uint64_t seq = EnqueueLocked(hash, std::move(write), std::move(on_durable));
  e->dirty_seq = durable() ? seq : 0;
  SetValueLocked(shard, *e, std::move(request.value));
  lock.unlock();
  if (durable() && options_.memory.max_memory_bytes != 0 &&
      memory_bytes_.load() > options_.memory.max_memory_bytes) {
    EvictForMemory();
  }
  if (!waits) done(reply);
}

void Engine::Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  CountOverKeys(keys, std::move(done), [this](const std::string& key, StoreCallback<bool> one) {
    WithRow(key, one, [this, key, one](const Row* row) { DeleteKey(key, one, row); });
  });
}

void Engine::DeleteKey(const std::string& key, const StoreCallback<bool>& done, const Row* row) {
  uint64_t hash = KeyHash(key);
  Shard& shard = ShardFor(hash);
  std::unique_lock<std::mutex> lock(shard.mu);
  Entry* e = LookupLocked(shard, key, WallMs(), row);
  if (e == nullptr) {
    lock.unlock();
    return done(false);
  }
  Status writable = CheckWritable(1);
  if (!writable.ok()) {
    lock.unlock();
    return done(std::move(writable).error());
  }
  EraseLocked(shard, shard.entries.find(key));
  DurableDone on_durable = WaiterFor(true, done);
  bool waits = on_durable != nullptr;
  EnqueueLocked(hash, {DurableWrite::Kind::kDelete, key, {}, 0}, std::move(on_durable));
  lock.unlock();
  if (!waits) done(true);
}

void Engine::Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  if (shared()) {
    return CountOverKeys(keys, std::move(done), [this](const std::string& key,
                                                       StoreCallback<bool> one) {
      WithRow(key, one, [this, key, one](const Row* row) {
        Shard& shard = ShardFor(KeyHash(key));
        bool found = false;
        {
          std::lock_guard<std::mutex> lock(shard.mu);
          found = LookupLocked(shard, key, WallMs(), row) != nullptr;
        }
        one(found);
      });
    });
  }
  UnixMillis now = WallMs();
  int64_t found = 0;
  for (const auto& key : keys) {
    Shard& shard = ShardFor(KeyHash(key));
    std::lock_guard<std::mutex> lock(shard.mu);
    if (FindLive(shard, key, now) != nullptr) ++found;
  }
  done(found);
}

void Engine::Expire(std::string key, Expiry expiry, StoreCallback<bool> done) {
  WithRow(key, done, [this, key, expiry, done](const Row* row) {
    ExpireKey(key, expiry, done, row);
  });
}

void Engine::ExpireKey(const std::string& key, Expiry expiry, StoreCallback<bool> done,
                       const Row* row) {
  uint64_t hash = KeyHash(key);
  Shard& shard = ShardFor(hash);
  UnixMillis now = WallMs();
  std::unique_lock<std::mutex> lock(shard.mu);
  Entry* e = LookupLocked(shard, key, now, row);
  if (e == nullptr || (expiry.kind == Expiry::Kind::kNone && e->expires_at == 0)) {
    lock.unlock();
    return done(false);  // missing, or PERSIST of a key without a deadline
  }
  Status writable = CheckWritable(1);
  if (!writable.ok()) {
    lock.unlock();
    return done(std::move(writable).error());
  }
  DurableDone on_durable = WaiterFor(true, done);
  bool waits = on_durable != nullptr;
  bool enqueued = ApplyDeadlineLocked(shard, hash, key, *e, expiry, now, on_durable);
  lock.unlock();
  if (!(waits && enqueued)) done(true);
}

void Engine::Ttl(std::string key, StoreCallback<TtlReply> done) {
  WithRow(key, done, [this, key, done](const Row* row) { TtlOp(key, done, row); });
}

void Engine::TtlOp(const std::string& key, const StoreCallback<TtlReply>& done,
                   const Row* row) {
  Shard& shard = ShardFor(KeyHash(key));
  UnixMillis now = WallMs();
  TtlReply reply;
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    Entry* e = LookupLocked(shard, key, now, row);
    if (e != nullptr && e->expires_at == 0) {
      reply.state = TtlReply::State::kNoExpiry;
    } else if (e != nullptr) {
      reply.state = TtlReply::State::kExpiring;
      reply.remaining_ms = e->expires_at - now;
    }
  }
  done(reply);
}

StoreStats Engine::Stats() const {
  StoreStats s;
  s.kind = durable() ? "tiered" : "memory";
  s.durability = !durable() ? "none"
                 : options_.durability == Durability::kSync ? "sync"
                                                           : "async";
  s.sessions = shared() ? shared_sessions_.load() : count_.load();
  s.expiring = shared() ? shared_expiring_.load() : expiring_.load();
  s.cached_values = cached_values_.load();
  s.memory_bytes = memory_bytes_.load();
  s.queue_depth = queued_.load();
  s.writes = writes_.load();
  s.commits = commits_.load();
  s.committed_rows = committed_rows_.load();
  s.failed_commits = failed_commits_.load();
  s.write_timeouts = write_timeouts_.load();
  s.queue_full_rejections = queue_full_.load();
  s.last_commit_seconds = static_cast<double>(last_commit_ns_.load()) / 1e9;
  s.cache_hits = hits_.load();
  s.cache_misses = misses_.load();
  s.evictions_idle = evict_idle_.load();
  s.evictions_memory = evict_memory_.load();
  s.expirations = expirations_.load();
  s.commit_batch_rows = batch_rows_hist_.Snapshot();
  s.commit_seconds = commit_seconds_hist_.Snapshot();
  if (durable()) {
    DurablePoolStats pool = durable_->PoolStats();
    s.pool_size = pool.size;
    s.pool_open = pool.open;
    s.pool_busy = pool.busy;
    std::lock_guard<std::mutex> lock(load_mu_);
    s.pool_waiters = loads_.size();
  }
  return s;
}

}  // namespace skydb::store
