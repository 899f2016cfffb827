#include "store/committer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace skydb::store {
namespace {

int64_t SteadyNs(Clock::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

size_t ItemBytes(const std::vector<QueuedWrite>& writes) {
  size_t bytes = 0;
  for (const auto& w : writes) bytes += WriteBytes(w.write);
  return bytes;
}

}  // namespace

// A unit spanning several partitions: each of them stops at it; the last to arrive commits it.
struct GroupCommitter::Barrier {
  WriteUnit unit;
  Clock::TimePoint enqueued{};
  int parties = 0;
  Mutex mu;
  CondVar cv;
  int arrived GUARDED_BY(mu) = 0;
  bool done GUARDED_BY(mu) = false;
};

GroupCommitter::GroupCommitter(const CommitterOptions& options, Clock& clock,
                               DurableBackend& durable, CommitListener& listener)
    : options_(options), clock_(clock), durable_(durable), listener_(listener) {
  for (int i = 0; i < std::max(1, options_.partitions); ++i) {
    partitions_.push_back(std::make_unique<Partition>());
  }
}

GroupCommitter::~GroupCommitter() {
  if (started_ && !stopped_) (void)Stop(clock_.Now());
}

void GroupCommitter::Start() {
  for (size_t i = 0; i < partitions_.size(); ++i) {
    partitions_[i]->thread = std::thread([this, i] { WriterLoop(static_cast<int>(i)); });
  }
  watcher_ = std::thread([this] { DeadlineWatcherLoop(); });
  started_ = true;
}

uint64_t GroupCommitter::Stop(Clock::TimePoint deadline) {
  if (!started_ || stopped_) return queued_.load();
  stopped_ = true;
  give_up_at_ns_ = SteadyNs(deadline);
  stopping_ = true;
  for (auto& p : partitions_) {
    { MutexLock lock(p->mu); }
    p->cv.NotifyAll();
  }
  for (auto& p : partitions_) {
    if (p->thread.joinable()) p->thread.join();
  }
  { MutexLock lock(watcher_mu_); }
  watcher_cv_.NotifyAll();
  if (watcher_.joinable()) watcher_.join();
  return queued_.load();
}

bool GroupCommitter::Reserve(size_t n) {
  uint64_t now = queued_.load();
  do {
    if (now + n > options_.queue_max_writes) return false;
  } while (!queued_.compare_exchange_weak(now, now + n));
  return true;
}

void GroupCommitter::Release(size_t n) { queued_ -= n; }

std::string GroupCommitter::QueueFullMessage() const {
  return "write queue full (" + std::to_string(options_.queue_max_writes) +
         " writes waiting for PostgreSQL); nothing was applied; retry later";
}

std::string GroupCommitter::TimeoutMessage(const std::string& cause) const {
  return "write not committed within store.write_timeout (" +
         std::to_string(options_.write_timeout.count()) + " ms): " + cause;
}

void GroupCommitter::Enqueue(WriteUnit unit) {
  if (unit.writes.empty()) {
    if (unit.waiter) unit.waiter->Fire(Ok());
    return;
  }
  auto partition_of = [&](uint64_t hash) {
    return static_cast<int>(hash % static_cast<uint64_t>(partitions_.size()));
  };
  std::vector<int> parts;
  for (const auto& w : unit.writes) parts.push_back(partition_of(w.hash));
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  // A guarded unit commits alone, after what its partitions queued before it.
  if (parts.size() > 1 || unit.guard) return EnqueueBarrier(std::move(unit), std::move(parts));
  Partition& p = *partitions_[parts.front()];
  {
    MutexLock lock(p.mu);
    QueueItem item{std::move(unit.writes), unit.waiter, nullptr, clock_.Now()};
    p.queue.push_back(std::move(item));
    if (unit.waiter) p.waiters.push_back(std::move(unit.waiter));
    UpdateOldest(p);
  }
  p.cv.NotifyOne();
}

void GroupCommitter::EnqueueDeleteAll(std::shared_ptr<Waiter> waiter) {
  std::vector<int> parts(partitions_.size());
  for (size_t i = 0; i < parts.size(); ++i) parts[i] = static_cast<int>(i);
  EnqueueBarrier(WriteUnit{{}, std::move(waiter), true}, std::move(parts));
}

// The partitions' locks are taken together, in index order, so every barrier has the same
// place relative to the others in every queue it joins (no partition can wait on a barrier
// that another partition reaches only after one this partition has not passed).
void GroupCommitter::EnqueueBarrier(WriteUnit unit,
                                    std::vector<int> parts) NO_THREAD_SAFETY_ANALYSIS {
  auto barrier = std::make_shared<Barrier>();
  barrier->enqueued = clock_.Now();
  barrier->parties = static_cast<int>(parts.size());
  std::shared_ptr<Waiter> waiter = unit.waiter;
  barrier->unit = std::move(unit);
  for (int i : parts) partitions_[i]->mu.Lock();
  for (int i : parts) {
    Partition& p = *partitions_[i];
    p.queue.push_back(QueueItem{{}, nullptr, barrier, barrier->enqueued});
    UpdateOldest(p);
  }
  if (waiter) partitions_[parts.front()]->waiters.push_back(waiter);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) partitions_[*it]->mu.Unlock();
  for (int i : parts) partitions_[i]->cv.NotifyOne();
}

void GroupCommitter::UpdateOldest(Partition& p) {
  Clock::TimePoint oldest{};
  if (p.committing_since != Clock::TimePoint{}) {
    oldest = p.committing_since;
  } else if (!p.queue.empty()) {
    oldest = p.queue.front().enqueued;
  }
  p.oldest_pending_ns = oldest == Clock::TimePoint{} ? 0 : std::max<int64_t>(1, SteadyNs(oldest));
}

Clock::Duration GroupCommitter::OldestPendingAge() const {
  int64_t oldest = 0;
  for (const auto& p : partitions_) {
    int64_t t = p->oldest_pending_ns.load(std::memory_order_relaxed);
    if (t != 0 && (oldest == 0 || t < oldest)) oldest = t;
  }
  if (oldest == 0) return Clock::Duration::zero();
  return std::chrono::nanoseconds(std::max<int64_t>(0, SteadyNs(clock_.Now()) - oldest));
}

GroupCommitter::Taken GroupCommitter::TakeBatch(Partition& p) {
  MutexLock lock(p.mu);
  while (p.queue.empty() && !stopping_.load()) p.cv.Wait(p.mu);
  if (options_.gather && !stopping_.load() && !p.queue.empty()) {
    // Async: let writes gather for up to flush_interval after the oldest one arrived. The
    // injected clock says how long the oldest write has waited; the wait itself is real.
    auto waited = clock_.Now() - p.queue.front().enqueued;
    auto left = options_.flush_interval - waited;
    auto until = std::chrono::steady_clock::now() + left;
    while (left.count() > 0 && p.queue.size() < options_.batch_max_rows && !stopping_.load()) {
      if (!p.cv.WaitUntil(p.mu, until)) break;
    }
  }
  Taken taken;
  if (p.queue.empty()) return taken;
  if (p.queue.front().barrier) {
    taken.barrier = std::move(p.queue.front().barrier);
    p.committing_since = p.queue.front().enqueued;
    p.queue.pop_front();
    UpdateOldest(p);
    return taken;
  }
  size_t rows = 0, bytes = 0;
  while (!p.queue.empty() && !p.queue.front().barrier) {
    QueueItem& front = p.queue.front();
    size_t item_bytes = ItemBytes(front.writes);
    bool fits = rows + front.writes.size() <= options_.batch_max_rows &&
                bytes + item_bytes <= options_.batch_max_bytes;
    if (!taken.items.empty() && !fits) break;  // a unit is never split
    rows += front.writes.size();
    bytes += item_bytes;
    if (taken.items.empty()) p.committing_since = front.enqueued;
    taken.items.push_back(std::move(front));
    p.queue.pop_front();
  }
  UpdateOldest(p);
  return taken;
}

void GroupCommitter::WriterLoop(int index) {
  Partition& p = *partitions_[index];
  while (true) {
    Taken taken = TakeBatch(p);
    if (taken.barrier) {
      PassBarrier(index, *taken.barrier);
    } else if (!taken.items.empty()) {
      std::vector<QueuedWrite> writes;
      std::vector<std::shared_ptr<Waiter>> waiters;
      if (taken.items.size() == 1) {
        writes = std::move(taken.items.front().writes);
      } else {
        for (auto& item : taken.items) {
          std::move(item.writes.begin(), item.writes.end(), std::back_inserter(writes));
        }
      }
      for (auto& item : taken.items) {
        if (item.waiter) waiters.push_back(std::move(item.waiter));
      }
      CommitWithRetry(index, std::move(writes), std::move(waiters));
    } else if (stopping_.load()) {
      return;
    }
    MutexLock lock(p.mu);
    p.committing_since = Clock::TimePoint{};
    UpdateOldest(p);
  }
}

void GroupCommitter::PassBarrier(int index, Barrier& barrier) {
  {
    MutexLock lock(barrier.mu);
    if (++barrier.arrived < barrier.parties) {
      while (!barrier.done) barrier.cv.Wait(barrier.mu);
      return;
    }
  }
  // Every partition involved has committed what it queued before the unit: commit it whole.
  std::vector<std::shared_ptr<Waiter>> waiters;
  if (barrier.unit.waiter) waiters.push_back(barrier.unit.waiter);
  CommitWithRetry(index, std::move(barrier.unit.writes), std::move(waiters),
                  barrier.unit.delete_all, barrier.unit.guard);
  {
    MutexLock lock(barrier.mu);
    barrier.done = true;
  }
  barrier.cv.NotifyAll();
}

// Decided: committed (the listener saw it), or not — then memory forgets its writes. Either
// way the guard's holds lift before the waiter fires.
bool GroupCommitter::TryGuarded(int index, const Batch& batch, CommitGuard& guard, size_t queued,
                                const std::vector<std::shared_ptr<Waiter>>& waiters,
                                Status* failed) {
  auto wall_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.WallNow().time_since_epoch())
          .count();
  auto outcome = durable_.CommitIf(index, guard.keys, wall_ms, guard.unchanged, batch.rows);
  if (!outcome.ok()) {
    *failed = std::move(outcome).error();
    return false;
  }
  if (*outcome == DurableBackend::Guarded::kCommitted) {
    ++commits_;
    committed_rows_ += batch.rows.size();
    listener_.OnCommitted(batch);
    queued_ -= queued;
    guard.decided();
    for (const auto& w : waiters) w->Fire(Ok());
    return true;
  }
  listener_.OnNotCommitted(batch);
  queued_ -= queued;
  Error why = Error::Conflict("a WATCHed key was changed by another daemon; nothing was applied");
  if (*outcome == DurableBackend::Guarded::kRefused) {
    guard.refused = true;
  } else {
    why = Error::Unavailable(
        "the connection to PostgreSQL was lost during the transaction's COMMIT: it may or may "
        "not have applied; read its keys to see");
  }
  guard.decided();
  for (const auto& w : waiters) w->Fire(why);
  return true;
}

void GroupCommitter::CommitWithRetry(int index, std::vector<QueuedWrite> writes,
                                     std::vector<std::shared_ptr<Waiter>> waiters, bool delete_all,
                                     const std::shared_ptr<CommitGuard>& guard) {
  Partition& p = *partitions_[index];
  size_t queued = writes.size();
  Batch batch = BuildBatch(std::move(writes));
  auto backoff = std::chrono::milliseconds(20);
  for (int attempt = 0;; ++attempt) {
    auto started = clock_.Now();
    Status committed = Ok();
    if (guard) {
      if (TryGuarded(index, batch, *guard, queued, waiters, &committed)) {
        if (attempt > 0) {
          MutexLock lock(p.mu);
          p.last_error.clear();
        }
        return;
      }
    } else {
      committed = delete_all ? durable_.DeleteAll(index) : durable_.CommitBatch(index, batch.rows);
    }
    if (committed.ok()) {
      last_commit_ns_ =
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now() - started).count();
      commit_seconds_hist_.Observe(static_cast<double>(last_commit_ns_.load()) / 1e9);
      batch_rows_hist_.Observe(static_cast<double>(batch.rows.size()));
      ++commits_;
      committed_rows_ += batch.rows.size();
      listener_.OnCommitted(batch);
      queued_ -= queued;
      if (attempt > 0) {
        MutexLock lock(p.mu);
        p.last_error.clear();
      }
      for (auto& w : waiters) w->Fire(Ok());
      return;
    }
    ++failed_commits_;
    if (attempt == 0 || attempt % 50 == 0) {
      spdlog::warn("store: commit of {} writes failed (attempt {}), retrying: {}",
                   batch.rows.size(), attempt + 1, committed.error().message);
    }
    {
      MutexLock lock(p.mu);
      p.last_error = committed.error().message;
    }
    auto now = clock_.Now();
    bool giving_up = stopping_.load() && SteadyNs(now) >= give_up_at_ns_.load();
    for (auto& w : waiters) {
      if (giving_up || now - w->enqueued() >= options_.write_timeout) {
        w->Fire(Error::Timeout(TimeoutMessage(committed.error().message)), &write_timeouts_);
      }
    }
    if (giving_up) {
      spdlog::error("store: shutting down with {} writes not committed: {}", batch.rows.size(),
                    committed.error().message);
      queued_ -= queued;
      if (guard) guard->decided();
      return;
    }
    if (!WaitBeforeRetry(p, backoff)) continue;
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

// A real wait (not the injected clock): backoff paces retries. Stop cuts the wait in progress
// short once; after that, retries stay paced until the stop deadline (no spin). False when
// the wait was cut short by Stop.
bool GroupCommitter::WaitBeforeRetry(Partition& p, std::chrono::milliseconds backoff) {
  bool was_stopping = stopping_.load();
  auto wait = backoff;
  if (was_stopping) {
    auto left = std::chrono::nanoseconds(give_up_at_ns_.load() - SteadyNs(clock_.Now()));
    wait = std::max(std::chrono::milliseconds(0),
                    std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(left)));
  }
  auto until = std::chrono::steady_clock::now() + wait;
  MutexLock lock(p.mu);
  while (!(!was_stopping && stopping_.load())) {
    if (!p.cv.WaitUntil(p.mu, until)) return true;
  }
  return false;
}

void GroupCommitter::DeadlineWatcherLoop() {
  constexpr auto kTick = std::chrono::milliseconds(50);
  while (!stopping_.load()) {
    for (auto& p : partitions_) {
      std::vector<std::shared_ptr<Waiter>> expired;
      std::string cause;
      {
        MutexLock lock(p->mu);
        auto now = clock_.Now();
        while (!p->waiters.empty()) {
          auto& front = p->waiters.front();
          if (!front->fired() && now - front->enqueued() < options_.write_timeout) break;
          if (!front->fired()) expired.push_back(front);
          p->waiters.pop_front();
        }
        if (!expired.empty()) {
          cause =
              p->last_error.empty() ? "PostgreSQL has not answered the commit yet" : p->last_error;
        }
      }
      for (auto& w : expired) w->Fire(Error::Timeout(TimeoutMessage(cause)), &write_timeouts_);
    }
    MutexLock lock(watcher_mu_);
    if (!stopping_.load()) watcher_cv_.WaitFor(watcher_mu_, kTick);
  }
}

void GroupCommitter::FillStats(StoreStats& s) const {
  s.queue_depth = queued_.load();
  s.commits = commits_.load();
  s.committed_rows = committed_rows_.load();
  s.failed_commits = failed_commits_.load();
  s.write_timeouts = write_timeouts_.load();
  s.last_commit_seconds = static_cast<double>(last_commit_ns_.load()) / 1e9;
  s.commit_batch_rows = batch_rows_hist_.Snapshot();
  s.commit_seconds = commit_seconds_hist_.Snapshot();
}

}  // namespace skydb::store
