// SharedStore: shared coherence, for several daemons on one PostgreSQL database. It wraps a
// TieredStore and, before every key operation, reads the keys' rows from PostgreSQL (batched
// with other reads); the operation then runs against those rows, with this daemon's own
// uncommitted writes and queued deletes winning over them (they are newer). Memory keeps only
// uncommitted writes, deadlines persist exactly, the session count is PostgreSQL's (refreshed
// with every durable sweep) and SCAN pages through the table.
//
// A plain SET (no NX/XX/GET/KEEPTTL) does not read first: its outcome does not depend on the
// row. What one daemon acknowledged, another's next read returns.
//
// Thread-safety: as TieredStore.
#pragma once

#include <atomic>
#include <memory>

#include "store/tiered_store.h"

namespace skydb::store {

class SharedStore final : public SessionStore {
 public:
  explicit SharedStore(std::unique_ptr<TieredStore> core) : core_(std::move(core)) {}

  // Counts the table's sessions, then starts the store (no index is loaded).
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
  void Ttl(std::string key, StoreCallback<TtlReply> done) override;
  void Scan(uint64_t cursor, std::string pattern, size_t count,
            StoreCallback<ScanReply> done) override;
  // WATCH remembers each row as read from PostgreSQL; EXEC reads them again with its own keys
  // and applies nothing if one differs (or this daemon changed the key meanwhile). Its writes
  // commit only if the rows are still the same under lock in the committing transaction
  // (DurableBackend::CommitIf); until that is decided, what would read the keys it wrote waits
  // (TxHold), so no reply reflects a write the guard may still refuse.
  void Watch(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
             StoreCallback<bool> done) override;
  void Unwatch(WatchList& list) override { core_->Unwatch(list); }
  void Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                StoreCallback<bool> done) override;
  int64_t Count() const override { return sessions_.load(); }
  StoreStats Stats() const override;
  Status Close(std::chrono::milliseconds timeout) override { return core_->Close(timeout); }

 private:
  // Reads the rows of `keys`, then calls `then(&rows)`; a failed read fails `done`.
  template <typename T, typename Then>
  void WithRows(std::vector<std::string> keys, StoreCallback<T> done, Then then);
  void Read(ReadKind kind, std::string key, std::optional<Expiry> change,
            StoreCallback<std::optional<std::string>> done);
  Status RefreshCount();

  std::unique_ptr<TieredStore> core_;
  std::atomic<int64_t> sessions_{0};
  std::atomic<int64_t> expiring_{0};
};

}  // namespace skydb::store
