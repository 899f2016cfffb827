// The store engine behind both backends: the sharded memory tier, and — when a DurableBackend
// is given — the partitioned group-commit writers, the loaders for evicted values and the
// sweepers. Memory-only is the same engine with no durable layer. Internal to src/store.
//
// Locking: a shard's mutex guards its entries and LRU; a partition's mutex guards its queue.
// Order: shard → partition, never the reverse; no callback runs under either.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "skydb/durable.h"
#include "skydb/histogram.h"
#include "skydb/store.h"
#include "store/shard.h"

namespace skydb::store {

using DurableDone = std::function<void(Status)>;

// A sync write's waiter. It fires exactly once: from its writer when the batch commits (or
// fails at shutdown), or from the deadline watcher once store.write_timeout has passed — even
// while the commit is still blocked on a PostgreSQL that does not answer.
struct Waiter {
  std::atomic<bool> fired{false};
  DurableDone done;
  Clock::TimePoint enqueued{};
  // True if this call fired it. `counted`, if given, is incremented before the reply runs,
  // so whoever sees the reply also sees the count.
  bool Fire(Status status, std::atomic<uint64_t>* counted = nullptr) {
    if (fired.exchange(true)) return false;
    if (counted != nullptr) ++*counted;
    done(std::move(status));
    return true;
  }
};

struct PendingWrite {
  DurableWrite write;
  uint64_t seq = 0;
  Clock::TimePoint enqueued{};
  std::shared_ptr<Waiter> waiter;  // null when nobody waits (async durability)
};

struct Partition {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<PendingWrite> queue;
  std::deque<std::shared_ptr<Waiter>> waiters;  // enqueue order: the watcher's view
  std::string last_error;                       // of the latest failed commit
  std::thread thread;
};

using Row = std::optional<DurableValue>;

// Work for a loader thread: a key to read from PostgreSQL, or (with `task`) a statement to
// run on the loader's connection.
struct LoadRequest {
  std::string key;
  std::function<void(Result<bool>)> then;  // a load: true: value now cached; false: gone
  std::function<void(Result<Row>)> fetched;  // a fetch (shared coherence): the row, untouched
  std::function<void(int reader)> task;  // reader -1: refused, the store is closing
};

class Engine final : public SessionStore {
 public:
  Engine(const TieredOptions& options, Clock& clock, std::unique_ptr<DurableBackend> durable);
  ~Engine() override;

  // Loads the key index from the durable layer and starts the threads.
  Status Start();

  void Get(std::string key, StoreCallback<std::optional<std::string>> done) override;
  void GetEx(std::string key, std::optional<Expiry> change,
             StoreCallback<std::optional<std::string>> done) override;
  void GetDel(std::string key, StoreCallback<std::optional<std::string>> done) override;
  void Set(SetRequest request, StoreCallback<SetReply> done) override;
  void Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) override;
  void Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) override;
  void Expire(std::string key, Expiry expiry, StoreCallback<bool> done) override;
  void Ttl(std::string key, StoreCallback<TtlReply> done) override;
  void Scan(uint64_t cursor, std::string pattern, size_t count,
            StoreCallback<ScanReply> done) override;
  int64_t Count() const override { return shared() ? shared_sessions_.load() : count_.load(); }
  StoreStats Stats() const override;
  Status Close(std::chrono::milliseconds timeout) override;

 private:
  // What a read-style operation does once the key's value is in memory (or known absent).
  enum class ReadKind { kGet, kGetEx, kGetDel };

  bool durable() const { return durable_ != nullptr; }
  bool shared() const { return durable_ != nullptr && options_.shared; }
  UnixMillis WallMs() const;
  int64_t SteadyMs() const;
  Shard& ShardFor(uint64_t hash) { return shards_[ShardOf(hash)]; }
  int PartitionFor(uint64_t hash) const {
    return static_cast<int>(hash % static_cast<uint64_t>(partitions_.size()));
  }

  // Entry helpers; the shard's mutex must be held.
  bool IsExpired(const Entry& e, UnixMillis now) const {
    return e.expires_at != 0 && e.expires_at <= now;
  }
  // Finds a live entry, dropping it (lazily expiring) if its deadline passed.
  Entry* FindLive(Shard& shard, const std::string& key, UnixMillis now);
  // The key's live entry as an operation must see it. Exclusive (or `row` null): FindLive.
  // Shared: this daemon's uncommitted write or queued delete if there is one (newer than any
  // committed row), else `row` — just read from PostgreSQL — installed in place of any older
  // copy in memory.
  Entry* LookupLocked(Shard& shard, const std::string& key, UnixMillis now, const Row* row);
  // Shared coherence: calls `op(&row)` with the key's row read from PostgreSQL now (batched
  // with other reads); exclusive: `op(nullptr)` at once. A failed read fails `done`.
  template <typename T, typename Op>
  void WithRow(const std::string& key, const StoreCallback<T>& done, Op op);
  void EraseLocked(Shard& shard, std::unordered_map<std::string, Entry>::iterator it);
  // Every deadline change goes through here, so the count of expiring keys stays exact.
  void SetDeadlineLocked(Entry& e, UnixMillis deadline);
  void LruRemove(Shard& shard, Entry& e);
  void LruTouch(Shard& shard, Entry& e);
  void SetValueLocked(Shard& shard, Entry& e, std::string value);
  UnixMillis ResolveDeadline(const Expiry& expiry, const Entry* existing, UnixMillis now) const;
  UnixMillis PersistedDeadline(UnixMillis deadline) const;
  bool TouchNeedsPersist(const Entry& e, UnixMillis deadline) const;
  // Applies EXPIRE/GETEX's new deadline; true if a durable write was enqueued (taking
  // `on_durable`), false if the change stays in memory within the persist slack.
  bool ApplyDeadlineLocked(Shard& shard, uint64_t hash, const std::string& key, Entry& e,
                           const Expiry& expiry, UnixMillis now, DurableDone& on_durable);
  template <typename T>
  DurableDone WaiterFor(T reply, const StoreCallback<T>& done) const;

  // Write path.
  Status CheckWritable(size_t new_writes) const;
  uint64_t EnqueueLocked(uint64_t hash, DurableWrite write, DurableDone done);
  void ReleaseReservation(size_t n);
  void ReadOp(ReadKind kind, std::string key, std::optional<Expiry> change,
              StoreCallback<std::optional<std::string>> done, int attempt, const Row* row);
  void SetOp(SetRequest request, StoreCallback<SetReply> done, int attempt, const Row* row);
  void DeleteKey(const std::string& key, const StoreCallback<bool>& done, const Row* row);
  void ExpireKey(const std::string& key, Expiry expiry, StoreCallback<bool> done,
                 const Row* row);
  void TtlOp(const std::string& key, const StoreCallback<TtlReply>& done, const Row* row);

  // Writers (engine_writer.cc).
  void WriterLoop(int index);
  std::vector<PendingWrite> TakeBatch(Partition& p);
  void CommitWithRetry(int index, std::vector<PendingWrite>& batch);
  void MarkClean(const std::vector<DurableWrite>& rows, const std::vector<uint64_t>& seqs);
  // Fails the waiters whose write_timeout has passed, committed or not (engine_writer.cc).
  void DeadlineWatcherLoop();
  std::string TimeoutMessage(const std::string& cause) const;

  // Loaders and maintenance (engine_maintenance.cc).
  void Load(std::string key, std::function<void(Result<bool>)> then);
  void Fetch(std::string key, std::function<void(Result<Row>)> then);
  void RunOnLoader(std::function<void(int reader)> task);
  void Enqueue(LoadRequest request);
  void LoaderLoop(int index);
  void ApplyLoaded(const std::string& key, Row row);
  void ScanShared(uint64_t cursor, std::string pattern, size_t count,
                  StoreCallback<ScanReply> done);
  // Shared coherence: DBSIZE and the gauges come from PostgreSQL's count.
  Status RefreshSharedCount();
  // `next_durable`: when the first PostgreSQL sweep is due (read at Start, not in the thread,
  // so a thread that starts late still sees the clock as it was at Start).
  void SweeperLoop(Clock::TimePoint next_durable);
  void SweepMemory();
  void EvictForMemory();
  void SweepDurable();

  TieredOptions options_;
  Clock& clock_;
  std::unique_ptr<DurableBackend> durable_;
  std::vector<Shard> shards_;
  std::vector<std::unique_ptr<Partition>> partitions_;

  mutable std::mutex load_mu_;  // mutable: Stats() counts waiting loads
  std::condition_variable load_cv_;
  std::deque<LoadRequest> loads_;
  std::vector<std::thread> loaders_;

  std::mutex sweep_mu_;
  std::condition_variable sweep_cv_;
  std::thread sweeper_;
  std::thread deadline_watcher_;

  std::atomic<bool> closing_{false};   // no new writes accepted
  std::atomic<bool> stopping_{false};  // background threads exit when idle
  Clock::TimePoint close_deadline_{};
  std::atomic<uint64_t> seq_{0};
  std::atomic<int64_t> count_{0};
  std::atomic<int64_t> expiring_{0};  // live keys with a deadline
  std::atomic<int64_t> shared_sessions_{0};  // shared coherence: PostgreSQL's count
  std::atomic<int64_t> shared_expiring_{0};
  std::atomic<uint64_t> queued_{0};
  std::atomic<size_t> evict_cursor_{0};
  std::atomic<uint64_t> memory_bytes_{0};
  std::atomic<uint64_t> cached_values_{0};

  // Stats.
  std::atomic<uint64_t> writes_{0}, commits_{0}, committed_rows_{0}, failed_commits_{0};
  std::atomic<uint64_t> write_timeouts_{0}, queue_full_{0};
  std::atomic<uint64_t> hits_{0}, misses_{0}, evict_idle_{0}, evict_memory_{0}, expirations_{0};
  std::atomic<int64_t> last_commit_ns_{0};
  AtomicHistogram batch_rows_hist_{ExponentialBounds(1, 2, 12)};           // 1 .. 2048 rows
  AtomicHistogram commit_seconds_hist_{ExponentialBounds(0.0005, 2, 14)};  // 0.5 ms .. 4 s
  bool started_ = false;
  bool closed_ = false;
};

}  // namespace skydb::store
