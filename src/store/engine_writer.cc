// The group-commit writers: one thread (and one durable connection) per partition. A key always
// hashes to the same partition, so its writes commit in order; a batch takes everything queued
// (bounded by rows and bytes), keeps the latest write per key, and commits it in one
// transaction. A failed commit is retried (reconnecting) until it succeeds; waiters whose
// write_timeout passes meanwhile — or while a commit hangs on a PostgreSQL that does not
// answer — are failed by the deadline watcher, and the write stays queued so memory and
// PostgreSQL converge once PostgreSQL is back.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>

#include "store/engine.h"

namespace skydb::store {
namespace {

size_t WriteBytes(const DurableWrite& w) { return w.key.size() + w.value.size() + 32; }

// Folds `next` into `into` for the same key: the later write wins, except that a deadline-only
// change after an upsert keeps the upsert's value. `into.key` is left alone: the batch's index
// holds views of it, and reassigning a heap-allocated string would leave them dangling.
void Fold(DurableWrite& into, DurableWrite next) {
  into.expires_at = next.expires_at;
  if (next.kind == DurableWrite::Kind::kTouch && into.kind == DurableWrite::Kind::kUpsert) return;
  into.kind = next.kind;
  into.value = std::move(next.value);
}

}  // namespace

std::vector<PendingWrite> Engine::TakeBatch(Partition& p) {
  std::unique_lock<std::mutex> lock(p.mu);
  p.cv.wait(lock, [&] { return !p.queue.empty() || stopping_.load(); });
  if (options_.durability == Durability::kAsync && !stopping_.load()) {
    // Async: let writes gather for up to flush_interval after the oldest one arrived.
    // The injected clock says how long the oldest write has waited; the wait itself is real.
    auto waited = clock_.Now() - p.queue.front().enqueued;
    auto left = options_.flush_interval - std::chrono::duration_cast<std::chrono::milliseconds>(waited);
    if (left.count() > 0) {
      p.cv.wait_for(lock, left, [&] {
        return p.queue.size() >= options_.batch_max_rows || stopping_.load();
      });
    }
  }
  std::vector<PendingWrite> batch;
  size_t bytes = 0;
  while (!p.queue.empty() && batch.size() < options_.batch_max_rows &&
         (batch.empty() || bytes + WriteBytes(p.queue.front().write) <= options_.batch_max_bytes)) {
    bytes += WriteBytes(p.queue.front().write);
    batch.push_back(std::move(p.queue.front()));
    p.queue.pop_front();
  }
  return batch;
}

void Engine::WriterLoop(int index) {
  Partition& p = *partitions_[index];
  while (true) {
    std::vector<PendingWrite> batch = TakeBatch(p);
    if (batch.empty()) {
      if (stopping_.load()) return;
      continue;
    }
    CommitWithRetry(index, batch);
  }
}

void Engine::CommitWithRetry(int index, std::vector<PendingWrite>& batch) {
  std::vector<DurableWrite> rows;
  std::vector<uint64_t> seqs;
  std::unordered_map<std::string_view, size_t> row_of;  // views into rows[i].key
  rows.reserve(batch.size());  // no reallocation: the views must stay valid
  seqs.reserve(batch.size());
  for (auto& pending : batch) {
    auto found = row_of.find(pending.write.key);
    if (found == row_of.end()) {
      rows.push_back(std::move(pending.write));
      seqs.push_back(pending.seq);
      row_of.emplace(rows.back().key, rows.size() - 1);
    } else {
      Fold(rows[found->second], std::move(pending.write));
      seqs[found->second] = pending.seq;
    }
  }
  auto backoff = std::chrono::milliseconds(20);
  for (int attempt = 0;; ++attempt) {
    auto started = clock_.Now();
    Status committed = durable_->CommitBatch(index, rows);
    if (committed.ok()) {
      last_commit_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            clock_.Now() - started).count();
      commit_seconds_hist_.Observe(static_cast<double>(last_commit_ns_.load()) / 1e9);
      batch_rows_hist_.Observe(static_cast<double>(rows.size()));
      ++commits_;
      committed_rows_ += rows.size();
      MarkClean(rows, seqs);
      queued_ -= batch.size();
      if (attempt > 0) {
        Partition& p = *partitions_[index];
        std::lock_guard<std::mutex> lock(p.mu);
        p.last_error.clear();
      }
      for (auto& pending : batch) {
        if (pending.waiter) pending.waiter->Fire(Ok());
      }
      return;
    }
    ++failed_commits_;
    if (attempt == 0 || attempt % 50 == 0) {
      spdlog::warn("store: commit of {} writes failed (attempt {}), retrying: {}", rows.size(),
                   attempt + 1, committed.error().message);
    }
    {
      Partition& p = *partitions_[index];
      std::lock_guard<std::mutex> lock(p.mu);
      p.last_error = committed.error().message;
    }
    auto now = clock_.Now();
    bool giving_up = stopping_.load() && now >= close_deadline_;
    for (auto& pending : batch) {
      if (!pending.waiter) continue;
      if (giving_up || now - pending.enqueued >= options_.write_timeout) {
        pending.waiter->Fire(Error::Timeout(TimeoutMessage(committed.error().message)),
                             &write_timeouts_);
        pending.waiter.reset();
      }
    }
    if (giving_up) {
      spdlog::error("store: shutting down with {} writes not committed: {}", rows.size(),
                    committed.error().message);
      queued_ -= batch.size();
      return;
    }
    {
      // A real wait (not the injected clock): backoff paces retries. Close cuts the wait in
      // progress short once; after that, retries stay paced until the close deadline (no spin).
      Partition& p = *partitions_[index];
      bool was_stopping = stopping_.load();
      auto wait = backoff;
      if (was_stopping) {
        wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(
                                  close_deadline_ - now));
      }
      std::unique_lock<std::mutex> lock(p.mu);
      p.cv.wait_for(lock, wait, [&] { return !was_stopping && stopping_.load(); });
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

std::string Engine::TimeoutMessage(const std::string& cause) const {
  return "write not committed within store.write_timeout (" +
         std::to_string(options_.write_timeout.count()) + " ms): " + cause;
}

void Engine::DeadlineWatcherLoop() {
  constexpr auto kTick = std::chrono::milliseconds(50);
  while (!stopping_.load()) {
    for (auto& p : partitions_) {
      std::vector<std::shared_ptr<Waiter>> expired;
      std::string cause;
      {
        std::lock_guard<std::mutex> lock(p->mu);
        auto now = clock_.Now();
        while (!p->waiters.empty()) {
          auto& front = p->waiters.front();
          if (!front->fired.load() && now - front->enqueued < options_.write_timeout) break;
          if (!front->fired.load()) expired.push_back(front);
          p->waiters.pop_front();
        }
        if (!expired.empty()) {
          cause = p->last_error.empty() ? "PostgreSQL has not answered the commit yet"
                                        : p->last_error;
        }
      }
      for (auto& w : expired) {
        w->Fire(Error::Timeout(TimeoutMessage(cause)), &write_timeouts_);
      }
    }
    std::unique_lock<std::mutex> lock(sweep_mu_);
    sweep_cv_.wait_for(lock, kTick, [&] { return stopping_.load(); });
  }
}

void Engine::MarkClean(const std::vector<DurableWrite>& rows, const std::vector<uint64_t>& seqs) {
  for (size_t i = 0; i < rows.size(); ++i) {
    Shard& shard = ShardFor(KeyHash(rows[i].key));
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shared()) {
      auto deleted = shard.pending_deletes.find(rows[i].key);
      if (deleted != shard.pending_deletes.end() && deleted->second <= seqs[i]) {
        shard.pending_deletes.erase(deleted);
      }
    }
    auto it = shard.entries.find(rows[i].key);
    if (it == shard.entries.end() || it->second.dirty_seq != seqs[i]) continue;
    if (shared()) {
      EraseLocked(shard, it);  // committed: from now on PostgreSQL's row is the truth
      continue;
    }
    it->second.dirty_seq = 0;
    it->second.last_access_ms = SteadyMs();
    LruTouch(shard, it->second);
  }
}

}  // namespace skydb::store
