#include "store/scope.h"

#include <algorithm>
#include <limits>

namespace skydb::store {
namespace {

constexpr UnixMillis kMaxDeadline = std::numeric_limits<UnixMillis>::max();

}  // namespace

UnixMillis SaturatingAdd(UnixMillis a, int64_t b) {
  if (b > 0 && a > kMaxDeadline - b) return kMaxDeadline;
  if (b < 0 && a < std::numeric_limits<UnixMillis>::min() - b) {
    return std::numeric_limits<UnixMillis>::min();
  }
  return a + b;
}

uint64_t RowFingerprint(const Row& row) {
  if (!row) return 0;
  // The version tells apart two writes of equal bytes, and a hash's or set's row (its fields
  // change, not its own bytes); rows written before versions existed have 0.
  uint64_t mixed = KeyHash(row->value) ^
                   (static_cast<uint64_t>(row->expires_at) * 0x9E3779B97F4A7C15ULL) ^
                   (row->version * 0xC2B2AE3D27D4EB4FULL) ^ static_cast<uint64_t>(row->type);
  return mixed | 1;
}

Scope::Scope(MemoryTier& tier, const ShardLocks& locks, const ScopeConfig& config, UnixMillis now,
             Clock::TimePoint steady_now, const RowSet* rows, std::function<uint64_t()> next_seq,
             bool waits)
    : tier_(tier),
      locks_(locks),
      config_(config),
      now_(now),
      steady_now_(steady_now),
      rows_(rows),
      next_seq_(std::move(next_seq)),
      waits_(waits) {}

Found Scope::Find(Shard& shard, const std::string& key) {
  if (rows_ != nullptr) {
    for (const auto& [k, row] : rows_->rows) {
      if (k == key) return tier_.LookupWithRow(shard, key, now_, row);
    }
  }
  return tier_.Lookup(shard, key, now_);
}

void Scope::Depend(const Found& found) {
  if (config_.sync && found.pending) depends_.push_back(found.pending);
}

UnixMillis Scope::ResolveDeadline(const Expiry& expiry, const Entry* existing) const {
  switch (expiry.kind) {
    case Expiry::Kind::kDefault:
      return config_.default_ttl.count() > 0 ? SaturatingAdd(now_, config_.default_ttl.count()) : 0;
    case Expiry::Kind::kNone:
      return 0;
    case Expiry::Kind::kAt:
      return expiry.at;
    case Expiry::Kind::kKeep:
      return existing != nullptr ? existing->expires_at : 0;
  }
  return 0;
}

uint64_t Scope::Queue(const std::string& key, DurableWrite write) {
  ++applied_writes_;
  if (!config_.durable) return 0;
  if ((waits_ || config_.track_inflight) && !waiter_) {
    waiter_ = std::make_shared<Waiter>(steady_now_, nullptr);
  }
  uint64_t seq = next_seq_();
  // A row's version: distinct for every write of every daemon (the salt is this store's), so
  // a guard sees any change of a hash's fields in its row alone.
  write.version = KeyHash(std::string_view(reinterpret_cast<const char*>(&seq), sizeof seq)) ^
                  config_.version_salt;
  writes_.push_back({std::move(write), seq, KeyHash(key)});
  return seq;
}

void Scope::NoteChange(Shard& shard, const std::string& key) {
  if (shard.watched.empty()) return;
  auto it = shard.watched.find(key);
  if (it != shard.watched.end()) ++it->second.version;
}

void Scope::WriteValue(Shard& shard, Entry& e, const std::string& key, SharedValue value,
                       UnixMillis deadline) {
  NoteChange(shard, key);
  if (e.type != ValueType::kString)
    Queue(key, DurableWrite::Of(DurableWrite::Kind::kFieldsClear, key));
  tier_.Changed(shard, e);
  tier_.SetDeadline(shard, e, deadline);
  // A value write persists the exact deadline; only deadline-only changes add the slack.
  e.persisted_expires_at = deadline;
  uint64_t seq = Queue(key, DurableWrite::Of(DurableWrite::Kind::kUpsert, key, value, deadline));
  tier_.MarkDirty(shard, e, seq, Tracked());
  tier_.SetValue(shard, e, std::move(value));  // the entry and the write hold the same bytes
}

void Scope::WriteDeadline(Shard& shard, Entry& e, const std::string& key, UnixMillis persisted) {
  NoteChange(shard, key);
  tier_.Changed(shard, e);
  e.persisted_expires_at = persisted;
  uint64_t seq = Queue(key, DurableWrite::Of(DurableWrite::Kind::kTouch, key, {}, persisted));
  tier_.MarkDirty(shard, e, seq, Tracked());
}

void Scope::WriteDelete(Shard& shard, const std::string& key) {
  NoteChange(shard, key);
  rows_written_.erase(std::remove(rows_written_.begin(), rows_written_.end(), key),
                      rows_written_.end());
  uint64_t seq = Queue(key, DurableWrite::Of(DurableWrite::Kind::kDelete, key));
  tier_.Remove(shard, key, seq, Tracked());
}

void Scope::WriteCollectionRow(Shard& shard, Entry& e, const std::string& key) {
  NoteChange(shard, key);
  tier_.Changed(shard, e);
  if (std::find(rows_written_.begin(), rows_written_.end(), key) != rows_written_.end()) return;
  rows_written_.push_back(key);
  e.persisted_expires_at = e.expires_at;
  auto row = DurableWrite::Of(DurableWrite::Kind::kCollection, key, {}, e.expires_at);
  row.type = e.type;
  uint64_t seq = Queue(key, std::move(row));
  tier_.MarkDirty(shard, e, seq, Tracked());
}

void Scope::WriteField(Shard& shard, Entry& e, const std::string& key, const std::string& field,
                       SharedValue value, UnixMillis field_expires_at) {
  WriteCollectionRow(shard, e, key);
  auto w =
      DurableWrite::Of(DurableWrite::Kind::kFieldUpsert, key, std::move(value), field_expires_at);
  w.field = field;
  uint64_t seq = Queue(key, std::move(w));
  tier_.MarkDirty(shard, e, seq, Tracked());
}

void Scope::WriteFieldDelete(Shard& shard, Entry& e, const std::string& key,
                             const std::string& field) {
  WriteCollectionRow(shard, e, key);
  auto w = DurableWrite::Of(DurableWrite::Kind::kFieldDelete, key);
  w.field = field;
  uint64_t seq = Queue(key, std::move(w));
  tier_.MarkDirty(shard, e, seq, Tracked());
}

bool Scope::ReserveMore(size_t writes) {
  if (!config_.durable || !reserve_more_) return true;
  if (!reserve_more_(writes)) return false;
  reserved_more_ += writes;
  return true;
}

int64_t Scope::ClearAll() {
  // What this unit wrote before is deleted with the rest; what it writes after stays.
  writes_.clear();
  rows_ = nullptr;  // the rows read before are deleted too
  delete_all_ = config_.durable;
  if (config_.durable && (waits_ || config_.track_inflight) && !waiter_) {
    waiter_ = std::make_shared<Waiter>(steady_now_, nullptr);
  }
  ++applied_writes_;
  return tier_.ClearAll(locks_);
}

}  // namespace skydb::store
