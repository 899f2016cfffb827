#include "resp/op_forwarder.h"

namespace skydb::resp {

void OpForwarder::Forward(TxOp op) {
  std::vector<TxOp> one;
  one.push_back(std::move(op));
  (void)sink_(std::move(one));  // a refused op has had its callback's error
}

void OpForwarder::Get(std::string key, StoreCallback<std::optional<std::string>> done) {
  Forward(tx::Read{ReadKind::kGet, std::move(key), std::nullopt, std::move(done)});
}

void OpForwarder::GetEx(std::string key, std::optional<Expiry> change,
                        StoreCallback<std::optional<std::string>> done) {
  ReadKind kind = change ? ReadKind::kGetEx : ReadKind::kGet;
  Forward(tx::Read{kind, std::move(key), change, std::move(done)});
}

void OpForwarder::GetDel(std::string key, StoreCallback<std::optional<std::string>> done) {
  Forward(tx::Read{ReadKind::kGetDel, std::move(key), std::nullopt, std::move(done)});
}

void OpForwarder::Set(SetRequest request, StoreCallback<SetReply> done) {
  Forward(tx::Set{std::move(request), std::move(done)});
}

void OpForwarder::Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  Forward(tx::Delete{std::move(keys), std::move(done)});
}

void OpForwarder::Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  Forward(tx::Exists{std::move(keys), std::move(done)});
}

void OpForwarder::Expire(std::string key, Expiry expiry, ExpireCondition condition,
                         StoreCallback<bool> done) {
  Forward(tx::Expire{std::move(key), expiry, condition, std::move(done)});
}

void OpForwarder::Increment(IncrRequest request, StoreCallback<IncrReply> done) {
  Forward(tx::Increment{std::move(request), std::move(done)});
}

void OpForwarder::DeleteAll(StoreCallback<int64_t> done) {
  Forward(tx::DeleteAll{std::move(done)});
}

void OpForwarder::Ttl(std::string key, StoreCallback<TtlReply> done) {
  Forward(tx::Ttl{std::move(key), std::move(done)});
}

void OpForwarder::Scan(uint64_t cursor, std::string pattern, size_t count,
                       std::optional<ValueType> type, StoreCallback<ScanReply> done) {
  real_.Scan(cursor, std::move(pattern), count, type, std::move(done));
}

void OpForwarder::Type(std::string key, StoreCallback<std::optional<KeyInfo>> done) {
  Forward(tx::Type{std::move(key), std::move(done)});
}

void OpForwarder::Rename(std::string from, std::string to, bool if_absent,
                         StoreCallback<bool> done) {
  Forward(tx::Rename{std::move(from), std::move(to), if_absent, std::move(done)});
}

void OpForwarder::Collection(CollectionOp op, StoreCallback<StoreReply> done) {
  Forward(tx::Collection{std::move(op), std::move(done)});
}

void OpForwarder::Watch(std::vector<std::string>, std::shared_ptr<WatchList>,
                        StoreCallback<bool> done) {
  done(Error::InvalidArgument(watch_refusal_));
}

void OpForwarder::Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList>,
                           StoreCallback<bool> done, ReplyAdmission) {
  Status taken = sink_(std::move(ops));
  if (!taken.ok()) return done(std::move(taken).error());
  done(true);
}

Status OpForwarder::Close(std::chrono::milliseconds) {
  return Error::Internal("a transaction cannot close the store");
}

}  // namespace skydb::resp
