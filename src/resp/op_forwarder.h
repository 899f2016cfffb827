// OpForwarder: a SessionStore whose key operations become TxOps handed to a sink instead of
// running. EXEC records its queued commands' operations with it (the sink collects them for one
// SessionStore::Transact); a script's redis.call applies them at once through its ScriptScope.
// What is not a key operation (SCAN, the session count, statistics) goes to the real store.
//
// Thread-safety: as the sink's; one command at a time.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "skydb/store.h"

namespace skydb::resp {

class OpForwarder final : public SessionStore {
 public:
  // `sink` takes the ops of one store call (several for a command that is a transaction of its
  // own, MSET) and answers whether they were taken; `watch_refusal` is what WATCH answers.
  using Sink = std::function<Status(std::vector<TxOp> ops)>;
  OpForwarder(SessionStore& real, Sink sink, std::string watch_refusal)
      : real_(real), sink_(std::move(sink)), watch_refusal_(std::move(watch_refusal)) {}

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
  void Scan(uint64_t cursor, std::string pattern, size_t count, std::optional<ValueType> type,
            StoreCallback<ScanReply> done) override;
  void Type(std::string key, StoreCallback<std::optional<KeyInfo>> done) override;
  void Rename(std::string from, std::string to, bool if_absent, StoreCallback<bool> done) override;
  void Collection(CollectionOp op, StoreCallback<StoreReply> done) override;
  void Watch(std::vector<std::string>, std::shared_ptr<WatchList>,
             StoreCallback<bool> done) override;
  // A command that is a transaction of its own (MSET) joins the sink's whole.
  void Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList>, StoreCallback<bool> done,
                ReplyAdmission) override;
  int64_t Count() const override { return real_.Count(); }
  StoreStats Stats() const override { return real_.Stats(); }
  Status Close(std::chrono::milliseconds) override;

 private:
  void Forward(TxOp op);

  SessionStore& real_;
  Sink sink_;
  std::string watch_refusal_;
};

}  // namespace skydb::resp
