#include "store/scope.h"

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
  return (KeyHash(row->value) ^ (static_cast<uint64_t>(row->expires_at) * 0x9E3779B97F4A7C15ULL)) |
         1;
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
  tier_.Changed(shard, e);
  tier_.SetDeadline(shard, e, deadline);
  // A value write persists the exact deadline; only deadline-only changes add the slack.
  e.persisted_expires_at = deadline;
  uint64_t seq = Queue(key, {DurableWrite::Kind::kUpsert, key, value, deadline});
  tier_.MarkDirty(shard, e, seq, Tracked());
  tier_.SetValue(shard, e, std::move(value));  // the entry and the write hold the same bytes
}

void Scope::WriteDeadline(Shard& shard, Entry& e, const std::string& key, UnixMillis persisted) {
  NoteChange(shard, key);
  tier_.Changed(shard, e);
  e.persisted_expires_at = persisted;
  uint64_t seq = Queue(key, {DurableWrite::Kind::kTouch, key, {}, persisted});
  tier_.MarkDirty(shard, e, seq, Tracked());
}

void Scope::WriteDelete(Shard& shard, const std::string& key) {
  NoteChange(shard, key);
  uint64_t seq = Queue(key, {DurableWrite::Kind::kDelete, key, {}, 0});
  tier_.Remove(shard, key, seq, Tracked());
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
