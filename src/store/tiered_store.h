// TieredStore: the SessionStore of one daemon — a MemoryTier in front and, when a durable
// layer is given, a GroupCommitter and a Loader behind it. With no durable layer it is the
// memory-only store: the same tier and operations, nothing queued, nothing survives.
//
// Every operation runs the same way (Run): lock the shards of its keys in index order; load
// evicted values it reads (then start again); reserve queue room for every write it may make
// (or refuse, having changed nothing); apply the key operations (key_ops.h) through a Scope;
// queue the writes as one unit; unlock; reply — at once, or, in sync durability, once the unit
// and every uncommitted change the reply reflects have committed. So a multi-key write is one
// unit (one COMMIT) and is applied whole or not at all, and no reply reflects a write that is
// not durable. Async durability acknowledges on enqueue, except while the oldest uncommitted
// write is older than store.async_max_lag: then writes wait for their commit (back-pressure),
// which bounds what a crash can lose however long PostgreSQL stalls.
//
// Shared coherence is a wrapper (shared_store.h) that reads the keys' rows first and passes
// them to the *With operations below; memory then keeps only uncommitted writes.
//
// Thread-safety: every method may be called from any thread; callbacks run on the caller's
// thread (memory answers), a writer thread (after COMMIT) or a reader thread (after a load).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "skydb/durable.h"
#include "skydb/store.h"
#include "store/committer.h"
#include "store/key_ops.h"
#include "store/loader.h"
#include "store/memory_tier.h"

namespace skydb::store {

class TieredStore final : public SessionStore, private CommitListener {
 public:
  // `durable` null: the memory-only store.
  TieredStore(const TieredOptions& options, Clock& clock, std::unique_ptr<DurableBackend> durable);
  ~TieredStore() override;

  // Loads the durable key index (unless `load_index` is false) and starts the threads.
  Status Start(bool load_index = true);

  void Get(std::string key, StoreCallback<std::optional<std::string>> done) override;
  void GetEx(std::string key, std::optional<Expiry> change,
             StoreCallback<std::optional<std::string>> done) override;
  void GetDel(std::string key, StoreCallback<std::optional<std::string>> done) override;
  void Set(SetRequest request, StoreCallback<SetReply> done) override;
  void Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) override;
  void Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) override;
  void Expire(std::string key, Expiry expiry, ExpireCondition condition,
              StoreCallback<bool> done) override;
  void Increment(IncrRequest request, StoreCallback<IncrReply> done) override;
  void DeleteAll(StoreCallback<int64_t> done) override;
  bool GetInPlace(const std::string& key, FunctionRef<void(const std::string*)> visit) override;
  void Ttl(std::string key, StoreCallback<TtlReply> done) override;
  void Scan(uint64_t cursor, std::string pattern, size_t count,
            StoreCallback<ScanReply> done) override;
  void Watch(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
             StoreCallback<bool> done) override;
  void Unwatch(WatchList& list) override;
  void Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                StoreCallback<bool> done) override;
  int64_t Count() const override { return tier_.count(); }
  StoreStats Stats() const override;
  Status Close(std::chrono::milliseconds timeout) override;

  // The operations above, with `rows` the keys' rows just read from PostgreSQL (shared
  // coherence); null: memory is authoritative.
  void ReadWith(ReadKind kind, std::string key, std::optional<Expiry> change,
                StoreCallback<std::optional<std::string>> done, const RowSet* rows);
  void SetWith(SetRequest request, StoreCallback<SetReply> done, const RowSet* rows);
  void DeleteWith(std::vector<std::string> keys, StoreCallback<int64_t> done, const RowSet* rows);
  void ExistsWith(std::vector<std::string> keys, StoreCallback<int64_t> done, const RowSet* rows);
  void ExpireWith(std::string key, Expiry expiry, ExpireCondition condition,
                  StoreCallback<bool> done, const RowSet* rows);
  void IncrementWith(IncrRequest request, StoreCallback<IncrReply> done, const RowSet* rows);
  void TtlWith(std::string key, StoreCallback<TtlReply> done, const RowSet* rows);
  // With shared coherence `rows` hold every key of the ops and of the watch list.
  void WatchWith(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
                 StoreCallback<bool> done, const RowSet* rows);
  void TransactWith(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                    StoreCallback<bool> done, const RowSet* rows);

  // Shared coherence: the hold on one of `keys` of a WATCHed transaction whose commit is
  // undecided (what would read them must wait), or null. Holds are only ever taken on the
  // loader's thread, so a caller there sees every hold the rows it just read may miss.
  std::shared_ptr<TxHold> HoldOn(const std::vector<std::string>& keys);

  MemoryTier& tier() { return tier_; }
  Loader* loader() { return loader_.get(); }
  DurableBackend* durable() { return durable_.get(); }
  // Runs on the maintenance thread after each durable sweep; set before Start.
  void SetDurableSweepHook(std::function<void()> hook) { durable_sweep_hook_ = std::move(hook); }

 private:
  // What an operation touches: its keys, those whose values it reads, and at most how many
  // writes it queues.
  struct OpPlan {
    std::vector<std::string> keys;
    std::vector<std::string> reads;
    size_t max_writes = 0;
    std::shared_ptr<CommitGuard> guard = nullptr;  // a WATCHed transaction, shared coherence
  };
  template <typename T, typename Apply>
  void Run(OpPlan plan, Apply apply, StoreCallback<T> done, const RowSet* rows, int attempt);
  // Keys among `reads` whose values are evicted (the shards are locked).
  std::vector<std::string> EvictedAmong(const std::vector<std::string>& reads, UnixMillis now);
  Status Reserve(size_t writes);
  bool ReplyWaitsForCommit() const;
  void Load(std::vector<std::string> keys, std::function<void(Status)> then);
  void OnCommitted(const Batch& batch) override;
  void OnNotCommitted(const Batch& batch) override;
  // Holds the keys `unit` writes until its guard is decided (their shards are locked).
  void HoldWrittenKeys(WriteUnit& unit);
  void LiftHold(const std::shared_ptr<TxHold>& hold, const std::vector<std::string>& keys);
  Status LoadIndex();
  void MaintenanceLoop(Clock::TimePoint next_durable);
  void SweepDurable();

  TieredOptions options_;
  ScopeConfig scope_config_;
  Clock& clock_;
  std::unique_ptr<DurableBackend> durable_;
  MemoryTier tier_;
  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<Loader> loader_;
  std::function<void()> durable_sweep_hook_;

  Mutex maintenance_mu_;
  CondVar maintenance_cv_;
  bool stopping_ GUARDED_BY(maintenance_mu_) = false;
  std::thread maintenance_;

  std::atomic<int64_t> holds_{0};     // TxHolds not lifted yet
  std::atomic<bool> closing_{false};  // no new writes accepted
  std::atomic<uint64_t> writes_{0}, queue_full_{0};
  bool started_ = false;
  bool closed_ = false;
};

}  // namespace skydb::store
