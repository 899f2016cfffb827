#include "store/key_ops.h"

#include <limits>

namespace skydb::store {
namespace {

constexpr UnixMillis kMaxDeadline = std::numeric_limits<UnixMillis>::max();

// Applies EXPIRE/GETEX's new deadline to a live entry; true if it queued a durable write.
bool ChangeDeadline(Scope& s, Shard& shard, Entry& e, const std::string& key, const Expiry& expiry)
    REQUIRES(shard.mu) {
  s.NoteChange(shard, key);
  UnixMillis deadline = s.ResolveDeadline(expiry, &e);
  if (expiry.kind == Expiry::Kind::kAt && deadline <= s.now()) {
    s.WriteDelete(shard, key);
    return true;
  }
  UnixMillis before = e.expires_at;
  s.tier().SetDeadline(shard, e, deadline);
  s.tier().Touch(shard, e);
  bool sooner = deadline != 0 && (before == 0 || deadline < before);
  if (sooner) {
    // A crash must not bring back a key its client was told ends sooner (a logout).
    s.WriteDeadline(shard, e, key, deadline);
    return true;
  }
  bool durable_outlives =
      deadline != 0 && e.persisted_expires_at != 0 && deadline <= e.persisted_expires_at;
  if (deadline == e.persisted_expires_at || durable_outlives) return false;
  s.WriteDeadline(shard, e, key, deadline == 0 ? 0 : SaturatingAdd(deadline, s.persist_slack_ms()));
  return true;
}

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

Scope::Scope(MemoryTier& tier, const ScopeConfig& config, UnixMillis now,
             Clock::TimePoint steady_now, const RowSet* rows, std::function<uint64_t()> next_seq,
             bool waits)
    : tier_(tier),
      config_(config),
      now_(now),
      steady_now_(steady_now),
      rows_(rows),
      next_seq_(std::move(next_seq)),
      waits_(waits) {}

Found Scope::Find(Shard& shard, const std::string& key) {
  if (rows_ != nullptr) {
    for (const auto& [k, row] : *rows_) {
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
  if (waits_ && !waiter_) waiter_ = std::make_shared<Waiter>(steady_now_, nullptr);
  uint64_t seq = next_seq_();
  writes_.push_back({std::move(write), seq, KeyHash(key)});
  return seq;
}

void Scope::NoteChange(Shard& shard, const std::string& key) {
  if (shard.watched.empty()) return;
  auto it = shard.watched.find(key);
  if (it != shard.watched.end()) ++it->second.version;
}

void Scope::WriteValue(Shard& shard, Entry& e, const std::string& key, std::string value,
                       UnixMillis deadline) {
  NoteChange(shard, key);
  tier_.SetDeadline(shard, e, deadline);
  // A value write persists the exact deadline; only deadline-only changes add the slack.
  e.persisted_expires_at = deadline;
  uint64_t seq = Queue(key, {DurableWrite::Kind::kUpsert, key, value, deadline});
  tier_.MarkDirty(shard, e, seq, config_.sync ? waiter_ : nullptr);
  tier_.SetValue(shard, e, std::move(value));
}

void Scope::WriteDeadline(Shard& shard, Entry& e, const std::string& key, UnixMillis persisted) {
  NoteChange(shard, key);
  e.persisted_expires_at = persisted;
  uint64_t seq = Queue(key, {DurableWrite::Kind::kTouch, key, {}, persisted});
  tier_.MarkDirty(shard, e, seq, config_.sync ? waiter_ : nullptr);
}

void Scope::WriteDelete(Shard& shard, const std::string& key) {
  NoteChange(shard, key);
  uint64_t seq = Queue(key, {DurableWrite::Kind::kDelete, key, {}, 0});
  tier_.Remove(shard, key, seq, config_.sync ? waiter_ : nullptr);
}

std::optional<std::string> ReadKey(Scope& s, Shard& shard, const std::string& key, ReadKind kind,
                                   const std::optional<Expiry>& change) {
  Found found = s.Find(shard, key);
  if (found.entry == nullptr) {
    s.Depend(found);
    return std::nullopt;
  }
  std::optional<std::string> value = found.entry->value;
  if (kind == ReadKind::kGetDel) {
    s.WriteDelete(shard, key);
  } else if (kind == ReadKind::kGetEx && change) {
    if (!ChangeDeadline(s, shard, *found.entry, key, *change)) s.Depend(found);
  } else {
    s.tier().Touch(shard, *found.entry);
    s.Depend(found);
  }
  return value;
}

SetReply SetKey(Scope& s, Shard& shard, SetRequest& request) {
  SetReply reply;
  Found found = s.Find(shard, request.key);
  if (request.return_old && found.entry != nullptr) reply.old_value = found.entry->value;
  bool blocked = (request.condition == SetCondition::kIfAbsent && found.entry != nullptr) ||
                 (request.condition == SetCondition::kIfPresent && found.entry == nullptr);
  if (blocked) {
    s.Depend(found);
    return reply;
  }
  reply.applied = true;
  UnixMillis deadline = s.ResolveDeadline(request.expiry, found.entry);
  if (request.expiry.kind == Expiry::Kind::kAt && deadline <= s.now()) {
    // A deadline already past: the key ends now, as in Redis. The delete is written even for
    // a key memory does not have: a plain SET does not read the row first (shared coherence).
    s.WriteDelete(shard, request.key);
    return reply;
  }
  Entry& e = found.entry != nullptr ? *found.entry : s.tier().Insert(shard, request.key);
  s.WriteValue(shard, e, request.key, std::move(request.value), deadline);
  return reply;
}

bool DeleteKey(Scope& s, Shard& shard, const std::string& key) {
  Found found = s.Find(shard, key);
  if (found.entry == nullptr) {
    s.Depend(found);
    return false;
  }
  s.WriteDelete(shard, key);
  return true;
}

bool ExistsKey(Scope& s, Shard& shard, const std::string& key) {
  Found found = s.Find(shard, key);
  s.Depend(found);
  return found.entry != nullptr;
}

bool ExpireKey(Scope& s, Shard& shard, const std::string& key, const Expiry& expiry) {
  Found found = s.Find(shard, key);
  if (found.entry == nullptr ||
      (expiry.kind == Expiry::Kind::kNone && found.entry->expires_at == 0)) {
    s.Depend(found);  // missing, or PERSIST of a key without a deadline
    return false;
  }
  if (!ChangeDeadline(s, shard, *found.entry, key, expiry)) s.Depend(found);
  return true;
}

TtlReply TtlKey(Scope& s, Shard& shard, const std::string& key) {
  TtlReply reply;
  Found found = s.Find(shard, key);
  s.Depend(found);
  if (found.entry != nullptr && found.entry->expires_at == 0) {
    reply.state = TtlReply::State::kNoExpiry;
  } else if (found.entry != nullptr) {
    reply.state = TtlReply::State::kExpiring;
    reply.remaining_ms = found.entry->expires_at - s.now();
  }
  return reply;
}

}  // namespace skydb::store
