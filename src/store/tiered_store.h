// TieredStore: the SessionStore of one daemon — a MemoryTier in front and, when a durable layer
// is given, a GroupCommitter and a Loader behind it, with exclusive or shared coherence
// (coherence.h). With no durable layer it is the memory-only store: the same tier and
// operations, nothing queued, nothing survives.
//
// Each operation is a plan (its keys, the values it reads, how many writes it may queue) and an
// `apply` over the key operations (key_ops.h, tx_ops.h), run by the OpRunner (op_runner.h),
// which orders it after every earlier operation on its keys, fetches what it needs, applies it
// under its shard locks, queues its writes as one unit and replies once that is as durable as
// promised. Async durability acknowledges on enqueue, except while the oldest uncommitted write
// is older than store.async_max_lag: then writes wait for their commit (back-pressure), which
// bounds what a crash can lose however long PostgreSQL stalls.
//
// Thread-safety: every method may be called from any thread; callbacks run on the caller's
// thread (memory answers), a writer thread (after COMMIT) or a reader thread (after a fetch).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "skydb/durable.h"
#include "skydb/mutex.h"
#include "skydb/store.h"
#include "store/coherence.h"
#include "store/committer.h"
#include "store/loader.h"
#include "store/memory_tier.h"
#include "store/op_runner.h"

namespace skydb::store {

// OK when `key` is within store.max_key_bytes; else the error a client is answered.
Status CheckKey(const std::string& key, const MemoryTierOptions& o);

class TieredStore final : public SessionStore, private CommitListener {
 public:
  // `durable` null: the memory-only store.
  TieredStore(const TieredOptions& options, Clock& clock, std::unique_ptr<DurableBackend> durable);
  ~TieredStore() override;

  // Loads the key index (exclusive) or counts the sessions (shared), then starts the threads.
  Status Start();

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
  void Scan(uint64_t cursor, std::string pattern, size_t count, std::optional<ValueType> type,
            StoreCallback<ScanReply> done) override;
  void Type(std::string key, StoreCallback<std::optional<KeyInfo>> done) override;
  void Rename(std::string from, std::string to, bool if_absent, StoreCallback<bool> done) override;
  void Collection(CollectionOp op, StoreCallback<StoreReply> done) override;
  void Watch(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
             StoreCallback<bool> done) override;
  void Unwatch(WatchList& list) override;
  void Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched, StoreCallback<bool> done,
                ReplyAdmission admit) override;
  void SetExpiryListener(std::shared_ptr<ExpiryListener> listener) override {
    tier_.SetExpiryListener(std::move(listener));
  }
  Status SetMaxMemory(uint64_t bytes) override {
    tier_.set_max_memory_bytes(bytes);
    return Ok();
  }
  int64_t Count() const override { return coherence_->Count(); }
  StoreStats Stats() const override;
  Status Close(std::chrono::milliseconds timeout) override;

 private:
  void Read(ReadKind kind, std::string key, std::optional<Expiry> change,
            StoreCallback<std::optional<std::string>> done);
  void OnCommitted(const Batch& batch) override;
  void OnNotCommitted(const Batch& batch) override;
  void MaintenanceLoop(Clock::TimePoint next_durable);
  void SweepDurable();
  // Hands the listener what expired since the last tick: keys from memory or, with shared
  // coherence, from PostgreSQL; hash fields from PostgreSQL (either coherence) if this daemon
  // is the database's announcer (durable.h, ExpiredBetween and FieldsExpiredBetween).
  void AnnounceExpiries();

  TieredOptions options_;
  Clock& clock_;
  std::unique_ptr<DurableBackend> durable_;
  MemoryTier tier_;
  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<Loader> loader_;
  std::unique_ptr<Coherence> coherence_;
  std::unique_ptr<OpRunner> runner_;

  Mutex maintenance_mu_;
  CondVar maintenance_cv_;
  bool stopping_ GUARDED_BY(maintenance_mu_) = false;
  // Maintenance thread: expired keys and hash fields announced up to here (0: from now).
  UnixMillis announced_until_ = 0;
  UnixMillis fields_announced_until_ = 0;
  std::thread maintenance_;

  bool started_ = false;
  bool closed_ = false;
};

}  // namespace skydb::store
