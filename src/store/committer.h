// GroupCommitter: the store's write path to PostgreSQL. Writes are queued in units, in one
// queue; `writers` writer threads (each with its own durable connection) take batches from it:
// everything a batch can take (BuildBatch folds it: one row per key, latest wins) commits in one
// transaction, then the writer tells its CommitListener which rows committed up to which
// sequence number and fires the units' waiters. It never touches the memory tier itself.
//
// Overlap: a writer takes a batch when no commit is running, or when at least `overlap_rows`
// writes or `overlap_bytes` of values wait; so a shallow queue is committed by one writer in
// one batch (one WAL flush), and a second commit overlaps the first only when enough waits to
// be worth a flush of its own. A few large values are enough: PostgreSQL's work on a commit
// grows with its bytes, and one backend works on one commit. A writer takes at most
// max(overlap_rows, waiting / idle writers) writes and max(overlap_bytes, waiting bytes /
// idle writers) bytes, so a deep queue, or a queue of large values, is shared among the idle
// writers.
//
// Order: a batch never takes a unit with a key that a running commit holds, or that an earlier
// unit still queued holds, so a key's writes commit in enqueue order and never race each other
// across concurrent batches. A unit is never split across batches, so a multi-key unit (a
// multi-key DEL, a transaction) is applied whole or not at all. A unit with a FLUSHALL commits
// alone: after every commit running when it is reached, before anything queued after it.
//
// Failure: a failed commit is retried (the backend reconnects) until it succeeds; a unit's
// waiter whose store.write_timeout passes meanwhile — or while a commit hangs on a PostgreSQL
// that does not answer — is failed by the deadline watcher, and the unit stays queued so that
// memory and PostgreSQL converge once PostgreSQL is back. Stop() gives up at its deadline and
// fails what is left.
//
// Thread-safety: every public method may be called from any thread. Enqueue's caller holds the
// shard locks of every key in the unit (lock order: shard, then the committer's queue).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "skydb/durable.h"
#include "skydb/env.h"
#include "skydb/histogram.h"
#include "skydb/mutex.h"
#include "skydb/store.h"
#include "store/batch.h"
#include "store/waiter.h"

namespace skydb::store {

// A steady time point as nanoseconds, for the atomics that hold one.
inline int64_t SteadyNs(Clock::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

class CommitListener {
 public:
  virtual ~CommitListener() = default;
  // `batch` committed. Runs on a writer thread before any waiter of the batch fires.
  virtual void OnCommitted(const Batch& batch) = 0;
  // The writes of guarded units to `batch.keys` (with their seqs and hashes; its rows may be
  // absent) were not committed (their guards refused them, or the outcome of their COMMIT is
  // unknown): memory must forget them. Before any of their waiters fires.
  virtual void OnNotCommitted(const Batch& batch) = 0;
};

// Shared coherence: a unit whose writes were decided from rows read from PostgreSQL commits only
// if those rows are unchanged, checked inside the committing transaction with them locked
// (DurableBackend::Commit). Guarded units share batches like any other: no other unit holds
// their keys (the key gates keep everything else on them waiting until they are decided).
struct CommitGuard {
  DurableBackend::RowGuard check;
  enum class Outcome {
    kCommitted,
    kRefused,  // the rows had changed: nothing of the unit committed
    kUnknown,  // the connection was lost during COMMIT: it may or may not have committed
    kGaveUp,   // the store stopped before it could commit
  };
  // Runs once, on a writer thread, when the unit is decided, after memory heard of it and
  // before its waiter fires.
  std::function<void(Outcome)> decided;
};

struct CommitterOptions {
  int writers = 2;
  // A second commit starts while one runs only when at least this many writes, or this many
  // bytes of values, wait.
  size_t overlap_rows = 64;
  size_t overlap_bytes = 512 << 10;
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
  std::shared_ptr<Waiter> waiter;                // null: nobody waits for it (async durability)
  bool delete_all = false;                       // FLUSHALL: every row deleted, then `writes`
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
  void Release(size_t n);                 // the unused part of a reservation
  void Added(size_t n) { queued_ += n; }  // writes queued beyond a reservation
  // Queues `unit`, whose writes were reserved.
  void Enqueue(WriteUnit unit);
  // How long the oldest write not yet committed has waited; zero when there is none.
  Clock::Duration OldestPendingAge() const;
  std::string QueueFullMessage() const;
  std::string TimeoutMessage(const std::string& cause) const;

  uint64_t queued() const { return queued_.load(); }
  void FillStats(StoreStats& s) const;

 private:
  struct QueueItem {
    WriteUnit unit;
    Clock::TimePoint enqueued{};
    size_t bytes = 0;  // ItemBytes of its writes
    bool alone() const { return unit.delete_all; }
  };
  // What one writer round took from the queue.
  struct Taken {
    std::vector<QueueItem> items;
    std::vector<uint64_t> hashes;  // its keys, as the scan found them; then handed to held_
    bool alone = false;
  };

  void WriterLoop(int index);
  // Waits until a batch can be taken; empty when the writer should stop.
  Taken TakeBatch(int index);
  Taken TakeLocked(int index) REQUIRES(mu_);
  // What one scan of the queue found: the rows taken, how far it went, how many units it
  // passed over and, once it passed one, which of the scanned units it took.
  struct QueueScan {
    size_t rows = 0, bytes = 0, scanned = 0, passed = 0;
    std::vector<bool> took;
  };
  QueueScan ScanLocked(Taken& taken) REQUIRES(mu_);
  void RemoveTakenLocked(const QueueScan& scan) REQUIRES(mu_);
  bool ReadyLocked() const REQUIRES(mu_);
  // As much waits as one batch may take (batch_max_rows or batch_max_bytes): no gather.
  bool FullLocked() const REQUIRES(mu_);
  bool HeldLocked(uint64_t hash) const REQUIRES(mu_);
  // Blocked: a key of `item` is held by a running commit or by a unit skipped before it.
  bool BlockedLocked(const QueueItem& item, const std::vector<uint64_t>& skipped) const
      REQUIRES(mu_);
  void Finished(int index, const Taken& taken);
  // Commits what a writer took as one batch, retrying until it is decided or Stop gives up;
  // tells the listener, the guards and the waiters.
  void CommitTaken(int index, Taken& taken);
  struct Attempt;
  // One try at committing `attempt`'s batch; false: it failed and is to be retried.
  bool TryCommit(int index, Attempt& attempt, Status* failed);
  // The guards that did not hold (refused, or unknown) and their units are settled; the rest
  // of the batch stays in `attempt`. Returns the keys of the settled units (sorted).
  std::vector<std::string> SettleUngranted(Attempt& attempt, const std::vector<bool>& refused,
                                           bool unknown);
  void Committed(Attempt& attempt, Clock::TimePoint started);
  void Count(const Attempt& attempt, Clock::TimePoint started);  // the commit's statistics
  void FailedAttempt(Attempt& attempt, const Status& failed, int number);
  bool WaitBeforeRetry(std::chrono::milliseconds backoff);
  void Push(QueueItem item, std::shared_ptr<Waiter> waiter);
  void UpdateOldest() REQUIRES(mu_);
  void DeadlineWatcherLoop();

  CommitterOptions options_;
  Clock& clock_;
  DurableBackend& durable_;
  CommitListener& listener_;
  std::vector<std::thread> writers_;

  Mutex mu_;
  CondVar work_cv_;   // an idle writer may have a batch to take, or should stop
  CondVar retry_cv_;  // Stop began: cut a retry's backoff short
  std::deque<QueueItem> queue_ GUARDED_BY(mu_);
  size_t queued_writes_ GUARDED_BY(mu_) = 0;  // writes in queue_
  size_t queued_bytes_ GUARDED_BY(mu_) = 0;   // their ItemBytes
  // Per writer: the key hashes its running commit holds, sorted and distinct; empty when idle.
  // Taking a batch hands over the scan's vector: no allocation per row.
  std::vector<std::vector<uint64_t>> held_ GUARDED_BY(mu_);
  int running_ GUARDED_BY(mu_) = 0;             // commits running
  uint64_t batches_taken_ GUARDED_BY(mu_) = 0;  // ever, by every writer
  bool running_alone_ GUARDED_BY(mu_) = false;  // one of them must run alone
  // The last scan found every queued unit blocked: wait for a commit to finish or a free unit.
  bool blocked_ GUARDED_BY(mu_) = false;
  // Per writer: enqueue time of the oldest item it is committing (epoch 0: none).
  std::vector<Clock::TimePoint> committing_since_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Waiter>> waiters_ GUARDED_BY(mu_);  // the watcher's view
  std::string last_error_ GUARDED_BY(mu_);                       // of the latest failed commit
  std::atomic<int64_t> oldest_pending_ns_{0};                    // steady ns; 0: nothing pending

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
