// Loaders (evicted values back from PostgreSQL), sweepers (expiry in memory and in PostgreSQL,
// idle and memory-cap eviction), SCAN and shutdown.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>

#include "store/engine.h"

namespace skydb::store {
namespace {

// Deleting rows this long after their persisted deadline leaves room for a queued deadline
// extension that PostgreSQL has not seen yet (an outage shorter than this loses nothing).
constexpr int64_t kDurableSweepGraceMs = 5 * 60 * 1000;
constexpr int kDurableSweepRoundsPerTick = 20;

}  // namespace

void Engine::Enqueue(LoadRequest request) {
  {
    std::lock_guard<std::mutex> lock(load_mu_);
    if (!stopping_.load()) {
      loads_.push_back(std::move(request));
      load_cv_.notify_one();
      return;
    }
  }
  // The loaders are stopping: fail the request rather than leave its caller waiting.
  Error closed = Error::Unavailable("the store is shutting down; retry on the next daemon");
  if (request.then) request.then(closed);
  if (request.fetched) request.fetched(closed);
  if (request.task) request.task(-1);
}

void Engine::Load(std::string key, std::function<void(Result<bool>)> then) {
  LoadRequest request;
  request.key = std::move(key);
  request.then = std::move(then);
  Enqueue(std::move(request));
}

void Engine::Fetch(std::string key, std::function<void(Result<Row>)> then) {
  ++misses_;
  LoadRequest request;
  request.key = std::move(key);
  request.fetched = std::move(then);
  Enqueue(std::move(request));
}

void Engine::RunOnLoader(std::function<void(int reader)> task) {
  LoadRequest request;
  request.task = std::move(task);
  Enqueue(std::move(request));
}

void Engine::ApplyLoaded(const std::string& key, Row row) {
  Shard& shard = ShardFor(KeyHash(key));
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || it->second.value) return;
  if (row.has_value()) {
    SetValueLocked(shard, it->second, std::move(row->value));
  } else if (it->second.dirty_seq == 0) {
    // The index said live, the durable copy is gone (swept elsewhere): it is gone.
    spdlog::warn("store: '{}' was in the index but not in PostgreSQL; dropping it", key);
    EraseLocked(shard, it);
  }
}

void Engine::LoaderLoop(int index) {
  // Reads waiting together go to PostgreSQL as one statement.
  constexpr size_t kMaxReadBatch = 256;
  while (true) {
    std::vector<LoadRequest> batch;
    {
      std::unique_lock<std::mutex> lock(load_mu_);
      load_cv_.wait(lock, [&] { return !loads_.empty() || stopping_.load(); });
      if (loads_.empty()) return;
      if (loads_.front().task) {
        batch.push_back(std::move(loads_.front()));
        loads_.pop_front();
      } else {
        while (!loads_.empty() && !loads_.front().task && batch.size() < kMaxReadBatch) {
          batch.push_back(std::move(loads_.front()));
          loads_.pop_front();
        }
      }
    }
    if (batch.front().task) {
      batch.front().task(index);
      continue;
    }
    std::vector<std::string> keys;
    std::unordered_map<std::string, size_t> slot_of;
    for (const auto& r : batch) {
      if (slot_of.emplace(r.key, keys.size()).second) keys.push_back(r.key);
    }
    auto rows = durable_->ReadMany(index, keys, WallMs());
    for (auto& r : batch) {
      if (!rows.ok()) {
        Error failed = Error::Unavailable("cannot read '" + r.key + "' from PostgreSQL: " +
                                          rows.error().message);
        if (r.fetched) {
          r.fetched(failed);
        } else {
          r.then(failed);
        }
        continue;
      }
      const Row& row = (*rows)[slot_of[r.key]];
      if (r.fetched) {
        r.fetched(row);
      } else {
        ApplyLoaded(r.key, row);
        r.then(true);
      }
    }
  }
}

Status Engine::RefreshSharedCount() {
  auto count = durable_->CountLive(WallMs());
  if (!count.ok()) return std::move(count).error().Within("count sessions");
  shared_sessions_ = count->sessions;
  shared_expiring_ = count->expiring;
  return Ok();
}

void Engine::SweeperLoop(Clock::TimePoint next_durable) {
  while (!stopping_.load()) {
    {
      std::unique_lock<std::mutex> lock(sweep_mu_);
      sweep_cv_.wait_for(lock, options_.memory.sweep_interval, [&] { return stopping_.load(); });
    }
    if (stopping_.load()) return;
    SweepMemory();
    if (durable() && clock_.Now() >= next_durable) {
      SweepDurable();
      if (shared()) {
        Status counted = RefreshSharedCount();
        if (!counted.ok()) spdlog::warn("store: {}", counted.error().message);
      }
      next_durable = clock_.Now() + options_.durable_sweep_interval;
    }
  }
}

void Engine::SweepMemory() {
  UnixMillis now = WallMs();
  int64_t idle_before = SteadyMs() - options_.memory.idle_evict.count();
  for (auto& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (auto it = shard.entries.begin(); it != shard.entries.end();) {
      auto next = std::next(it);
      if (IsExpired(it->second, now)) {
        EraseLocked(shard, it);
        ++expirations_;
      } else if (shared() && it->second.dirty_seq == 0) {
        EraseLocked(shard, it);  // shared: memory keeps only this daemon's uncommitted writes
      }
      it = next;
    }
    if (!durable() || options_.memory.idle_evict.count() <= 0) continue;
    while (!shard.lru.empty()) {
      auto it = shard.entries.find(*shard.lru.front());
      if (it->second.last_access_ms > idle_before) break;
      LruRemove(shard, it->second);
      memory_bytes_ -= it->second.value->size();
      it->second.value.reset();
      --cached_values_;
      ++evict_idle_;
    }
  }
  if (durable() && options_.memory.max_memory_bytes != 0) EvictForMemory();
}

void Engine::EvictForMemory() {
  // Approximate LRU: the least recent clean value of each shard in turn.
  size_t idle_shards = 0;
  while (memory_bytes_.load() > options_.memory.max_memory_bytes &&
         idle_shards < shards_.size()) {
    Shard& shard = shards_[evict_cursor_++ % shards_.size()];
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shard.lru.empty()) {
      ++idle_shards;
      continue;
    }
    idle_shards = 0;
    auto it = shard.entries.find(*shard.lru.front());
    LruRemove(shard, it->second);
    memory_bytes_ -= it->second.value->size();
    it->second.value.reset();
    --cached_values_;
    ++evict_memory_;
  }
}

void Engine::SweepDurable() {
  UnixMillis cutoff = WallMs() - kDurableSweepGraceMs;
  for (int round = 0; round < kDurableSweepRoundsPerTick && !stopping_.load(); ++round) {
    auto deleted = durable_->SweepExpired(cutoff, options_.durable_sweep_batch);
    if (!deleted.ok()) {
      spdlog::warn("store: expiry sweep in PostgreSQL failed: {}", deleted.error().message);
      return;
    }
    if (*deleted < options_.durable_sweep_batch) return;
  }
}

void Engine::Scan(uint64_t cursor, std::string pattern, size_t count,
                  StoreCallback<ScanReply> done) {
  // Walks the key space in hash order; the cursor is the next hash to visit. Keys sharing a
  // hash are returned together, so a live key is never skipped.
  count = std::max<size_t>(count, 1);
  if (shared()) return ScanShared(cursor, std::move(pattern), count, std::move(done));
  UnixMillis now = WallMs();
  ScanReply reply;
  size_t examined = 0;
  uint64_t pos = cursor;
  std::optional<uint64_t> last_hash;
  for (int s = ShardOf(pos); s < kShardCount; ++s) {
    std::vector<std::pair<uint64_t, std::string>> found;
    {
      std::lock_guard<std::mutex> lock(shards_[s].mu);
      for (const auto& [key, entry] : shards_[s].entries) {
        uint64_t h = KeyHash(key);
        if (h >= pos && !IsExpired(entry, now)) found.emplace_back(h, key);
      }
    }
    std::sort(found.begin(), found.end());
    for (size_t i = 0; i < found.size(); ++i) {
      if (examined >= count && found[i].first != last_hash) {
        reply.next_cursor = found[i].first;
        return done(std::move(reply));
      }
      ++examined;
      last_hash = found[i].first;
      if (pattern.empty() || GlobMatch(pattern, found[i].second)) {
        reply.keys.push_back(std::move(found[i].second));
      }
    }
    if (s + 1 < kShardCount) pos = static_cast<uint64_t>(s + 1) << (64 - kShardBits);
  }
  reply.next_cursor = 0;
  done(std::move(reply));
}

void Engine::ScanShared(uint64_t cursor, std::string pattern, size_t count,
                        StoreCallback<ScanReply> done) {
  RunOnLoader([this, cursor, pattern = std::move(pattern), count, done](int reader) {
    if (reader < 0) return done(Error::Unavailable("the store is shutting down"));
    auto page = durable_->ScanKeys(reader, cursor, count, WallMs());
    if (!page.ok()) return done(std::move(page).error().Within("SCAN"));
    ScanReply reply;
    reply.next_cursor = page->next_cursor;
    for (auto& key : page->keys) {
      Shard& shard = ShardFor(KeyHash(key));
      {
        // Deleted here, not committed yet: already gone for this daemon's clients.
        std::lock_guard<std::mutex> lock(shard.mu);
        auto it = shard.entries.find(key);
        bool own_write = it != shard.entries.end() && it->second.dirty_seq != 0;
        if (!own_write && shard.pending_deletes.count(key) != 0) continue;
      }
      if (pattern.empty() || GlobMatch(pattern, key)) reply.keys.push_back(std::move(key));
    }
    done(std::move(reply));
  });
}

Status Engine::Close(std::chrono::milliseconds timeout) {
  if (closed_) return Ok();
  closed_ = true;
  closing_ = true;
  close_deadline_ = clock_.Now() + timeout;
  stopping_ = true;
  for (auto& p : partitions_) {
    { std::lock_guard<std::mutex> lock(p->mu); }
    p->cv.notify_all();
  }
  for (auto& p : partitions_) {
    if (p->thread.joinable()) p->thread.join();
  }
  {
    std::lock_guard<std::mutex> lock(load_mu_);
  }
  load_cv_.notify_all();
  for (auto& t : loaders_) t.join();
  loaders_.clear();
  {
    std::lock_guard<std::mutex> lock(sweep_mu_);
  }
  sweep_cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
  if (deadline_watcher_.joinable()) deadline_watcher_.join();
  uint64_t left = queued_.load();
  if (left != 0) {
    return Error::Timeout(std::to_string(left) + " writes were not committed before shutdown");
  }
  return Ok();
}

}  // namespace skydb::store
