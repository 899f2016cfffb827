#include "store/key_ops.h"

#include <cmath>
#include <limits>

#include "base/strings.h"

namespace skydb::store {
namespace {

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

// `current` is the key's deadline (0: none, which counts as infinitely far), `when` the new one.
bool ConditionHolds(const ExpireCondition& c, UnixMillis current, UnixMillis when) {
  if (c.if_none && current != 0) return false;
  if (c.if_any && current == 0) return false;
  if (c.if_later && (current == 0 || when <= current)) return false;
  if (c.if_earlier && current != 0 && when >= current) return false;
  return true;
}

// The new value of an increment as Redis computes it; false with `error` set when refused.
bool Increased(const IncrRequest& r, const std::optional<std::string>& current, IncrReply* out,
               std::string* error) {
  if (r.is_float) {
    long double value = 0;
    if (current && !ParseRedisLongDouble(*current, &value)) {
      *error = "value is not a valid float";
      return false;
    }
    value += r.by_float;
    if (std::isnan(value) || std::isinf(value)) {
      *error = "increment would produce NaN or Infinity";
      return false;
    }
    out->text = FormatRedisLongDouble(value);
    return true;
  }
  int64_t value = 0;
  if (current && !ParseRedisInt64(*current, &value)) {
    *error = "value is not an integer or out of range";
    return false;
  }
  if ((r.by < 0 && value < 0 && r.by < std::numeric_limits<int64_t>::min() - value) ||
      (r.by > 0 && value > 0 && r.by > std::numeric_limits<int64_t>::max() - value)) {
    *error = "increment or decrement would overflow";
    return false;
  }
  out->integer = value + r.by;
  out->text = std::to_string(out->integer);
  return true;
}

}  // namespace

std::optional<std::string> ReadKey(Scope& s, Shard& shard, const std::string& key, ReadKind kind,
                                   const std::optional<Expiry>& change) {
  Found found = s.Find(shard, key);
  if (found.entry == nullptr) {
    s.Depend(found);
    return std::nullopt;
  }
  std::optional<std::string> value;
  if (found.entry->value) value = found.entry->value->str();
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

SetReply SetKey(Scope& s, Shard& shard, const SetArgs& request) {
  SetReply reply;
  Found found = s.Find(shard, request.key);
  if (request.return_old && found.entry != nullptr && found.entry->value) {
    reply.old_value = found.entry->value->str();
  }
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
  s.WriteValue(shard, e, request.key, request.value, deadline);
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

bool ExpireKey(Scope& s, Shard& shard, const std::string& key, const Expiry& expiry,
               const ExpireCondition& condition) {
  Found found = s.Find(shard, key);
  if (found.entry == nullptr ||
      (expiry.kind == Expiry::Kind::kNone && found.entry->expires_at == 0) ||
      !ConditionHolds(condition, found.entry->expires_at, s.ResolveDeadline(expiry, found.entry))) {
    s.Depend(found);  // missing, PERSIST of a key without a deadline, or NX/XX/GT/LT refused
    return false;
  }
  if (!ChangeDeadline(s, shard, *found.entry, key, expiry)) s.Depend(found);
  return true;
}

IncrOutcome IncrementKey(Scope& s, Shard& shard, const IncrRequest& request,
                         size_t max_value_bytes) {
  IncrOutcome outcome;
  Found found = s.Find(shard, request.key);
  std::optional<std::string> current;
  if (found.entry != nullptr && found.entry->value) current = found.entry->value->str();
  if (found.entry != nullptr && !found.entry->value) {
    outcome.error = "the value was evicted while it was read; retry";  // the driver loads it
  } else if (Increased(request, current, &outcome.reply, &outcome.error) &&
             outcome.reply.text.size() > max_value_bytes) {
    outcome.error = "the new value is " + std::to_string(outcome.reply.text.size()) +
                    " bytes; the limit (store.max_value_bytes) is " +
                    std::to_string(max_value_bytes);
  }
  if (!outcome.error.empty()) {
    s.Depend(found);
    return outcome;
  }
  // As in Redis the value is replaced and the deadline kept; a new key is a write without EX.
  UnixMillis deadline = found.entry != nullptr ? found.entry->expires_at
                                               : s.ResolveDeadline(Expiry::Default(), nullptr);
  Entry& e = found.entry != nullptr ? *found.entry : s.tier().Insert(shard, request.key);
  s.WriteValue(shard, e, request.key, outcome.reply.text, deadline);
  return outcome;
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
