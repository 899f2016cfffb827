// GroupCommitter: the store's write path to PostgreSQL. Writes are queued in units; one writer
// thread per partition (each with its own durable connection) takes everything queued, folds
// it (BuildBatch: one row per key, latest wins) and commits it in one transaction, then tells
// its CommitListener which rows committed up to which sequence number and fires the units'
// waiters. It never touches the memory tier itself.
//
// Order: a key always hashes to the same partition, so its writes commit in enqueue order and
// never race each other across batches. A unit is never split across batches. A unit whose keys
// span several partitions (a multi-key DEL, a transaction) is a barrier in each of them: every
// partition involved first commits what it queued before the unit, then the last to arrive
// commits the whole unit in one transaction while the others wait — so it is applied whole or
// not at all and per-key order still holds.
//
// Failure: a failed commit is retried (the backend reconnects) until it succeeds; a unit's
// waiter whose store.write_timeout passes meanwhile — or while a commit hangs on a PostgreSQL
// that does not answer — is failed by the deadline watcher, and the unit stays queued so that
// memory and PostgreSQL converge once PostgreSQL is back. Stop() gives up at its deadline and
// fails what is left.
//
// Thread-safety: every public method may be called from any thread. Enqueue's caller holds the
// shard locks of every key in the unit (lock order: shard, then partition).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "skydb/durable.h"
#include "skydb/env.h"
#include "skydb/histogram.h"
#include "skydb/store.h"
#include "store/batch.h"
#include "store/waiter.h"

namespace skydb::store {

class CommitListener {
 public:
  virtual ~CommitListener() = default;
  // `batch` committed. Runs on a writer thread before any waiter of the batch fires.
  virtual void OnCommitted(const Batch& batch) = 0;
  // A guarded unit's `batch` was not committed (its guard refused it, or the outcome of its
  // COMMIT is unknown): memory must forget its writes. Before any waiter of it fires.
  virtual void OnNotCommitted(const Batch& batch) = 0;
};

// Shared coherence's WATCH: a transaction's unit commits only if the watched rows are still as
// WATCH read them, checked inside its own transaction (DurableBackend::CommitIf). Such a unit
// commits alone, as a barrier in its partitions.
struct CommitGuard {
  std::vector<std::string> keys;  // sorted, distinct
  DurableBackend::RowCheck unchanged;
  // Runs once, on a writer thread, when the unit is decided (committed, refused, unknown or
  // given up at shutdown), before its waiter fires.
  std::function<void()> decided;
  std::atomic<bool> refused{false};  // set before the waiter fires
};

struct CommitterOptions {
  int partitions = 2;
  bool gather = false;  // async durability: let writes gather for flush_interval
  std::chrono::milliseconds flush_interval{10};
  std::chrono::milliseconds write_timeout{10000};
  size_t queue_max_writes = 100000;
  size_t batch_max_rows = 1000;
  size_t batch_max_bytes = 8 << 20;
};

// Writes committed together, in one transaction.
struct WriteUnit {
  std::vector<QueuedWrite> writes;
  std::shared_ptr<Waiter> waiter;  // null: nobody waits for it (async durability)
  bool delete_all = false;         // FLUSHALL: no writes; DeleteAll on every partition's turn
  std::shared_ptr<CommitGuard> guard = nullptr;  // null: commits unconditionally
};

class GroupCommitter {
 public:
  GroupCommitter(const CommitterOptions& options, Clock& clock, DurableBackend& durable,
                 CommitListener& listener);
  ~GroupCommitter();

  void Start();
  // Commits everything queued, retrying until `deadline`, then stops the threads; waiters of
  // writes still not committed fail. Returns how many writes were left uncommitted.
  uint64_t Stop(Clock::TimePoint deadline);

  uint64_t NextSeq() { return seq_.fetch_add(1) + 1; }
  // Reserves room for `n` writes; false, reserving nothing, when the queue is full.
  bool Reserve(size_t n);
  void Release(size_t n);  // the unused part of a reservation
  // Queues `unit`, whose writes were reserved.
  void Enqueue(WriteUnit unit);
  // Queues a delete of every row as a barrier across all partitions: it commits after every
  // write queued before it and before any queued after it. `waiter` may be null.
  void EnqueueDeleteAll(std::shared_ptr<Waiter> waiter);
  // How long the oldest write not yet committed has waited; zero when there is none.
  Clock::Duration OldestPendingAge() const;
  std::string QueueFullMessage() const;
  std::string TimeoutMessage(const std::string& cause) const;

  uint64_t queued() const { return queued_.load(); }
  void FillStats(StoreStats& s) const;

 private:
  struct Barrier;
  struct QueueItem {
    std::vector<QueuedWrite> writes;  // this partition's unit; empty for a barrier
    std::shared_ptr<Waiter> waiter;
    std::shared_ptr<Barrier> barrier;
    Clock::TimePoint enqueued{};
  };
  struct Partition {
    Mutex mu;
    CondVar cv;
    std::deque<QueueItem> queue GUARDED_BY(mu);
    std::deque<std::shared_ptr<Waiter>> waiters GUARDED_BY(mu);  // the watcher's view
    std::string last_error GUARDED_BY(mu);                       // of the latest failed commit
    // Enqueue time of the oldest item being committed now (epoch 0: none).
    Clock::TimePoint committing_since GUARDED_BY(mu){};
    std::atomic<int64_t> oldest_pending_ns{0};  // steady ns; 0: nothing pending
    std::thread thread;
  };
  // What one writer round took from its queue.
  struct Taken {
    std::vector<QueueItem> items;
    std::shared_ptr<Barrier> barrier;
  };

  void WriterLoop(int index);
  Taken TakeBatch(Partition& p);
  void PassBarrier(int index, Barrier& barrier);
  // Commits `writes` as one batch, retrying; fires `waiters` with the outcome.
  void CommitWithRetry(int index, std::vector<QueuedWrite> writes,
                       std::vector<std::shared_ptr<Waiter>> waiters, bool delete_all = false,
                       const std::shared_ptr<CommitGuard>& guard = nullptr);
  // One attempt at a guarded unit; true when it is decided (nothing to retry).
  bool TryGuarded(int index, const Batch& batch, CommitGuard& guard, size_t queued,
                  const std::vector<std::shared_ptr<Waiter>>& waiters, Status* failed);
  bool WaitBeforeRetry(Partition& p, std::chrono::milliseconds backoff);
  void UpdateOldest(Partition& p) REQUIRES(p.mu);
  void EnqueueBarrier(WriteUnit unit, std::vector<int> parts);
  void DeadlineWatcherLoop();

  CommitterOptions options_;
  Clock& clock_;
  DurableBackend& durable_;
  CommitListener& listener_;
  std::vector<std::unique_ptr<Partition>> partitions_;
  std::thread watcher_;
  Mutex watcher_mu_;
  CondVar watcher_cv_;

  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> give_up_at_ns_{0};  // steady ns of Stop's deadline
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> queued_{0};  // reserved, queued or being committed
  bool started_ = false;
  bool stopped_ = false;

  std::atomic<uint64_t> commits_{0}, committed_rows_{0}, failed_commits_{0}, write_timeouts_{0};
  std::atomic<int64_t> last_commit_ns_{0};
  AtomicHistogram batch_rows_hist_{ExponentialBounds(1, 2, 12)};           // 1 .. 2048 rows
  AtomicHistogram commit_seconds_hist_{ExponentialBounds(0.0005, 2, 14)};  // 0.5 ms .. 4 s
};

}  // namespace skydb::store
