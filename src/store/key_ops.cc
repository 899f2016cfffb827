#include "store/key_ops.h"

#include <cmath>
#include <limits>

#include "base/strings.h"
#include "store/collection_ops.h"

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

// The new value of an increment (or APPEND) as Redis computes it; false with `error` set when
// refused.
bool Increased(const IncrRequest& r, const std::optional<std::string>& current, IncrReply* out,
               std::string* error) {
  if (r.append) {
    out->text = current.value_or("") + *r.append;
    out->integer = static_cast<int64_t>(out->text.size());
    return true;
  }
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

bool ConditionHolds(const ExpireCondition& c, UnixMillis current, UnixMillis when) {
  if (c.if_none && current != 0) return false;
  if (c.if_any && current == 0) return false;
  if (c.if_later && (current == 0 || when <= current)) return false;
  if (c.if_earlier && current != 0 && when >= current) return false;
  return true;
}

Result<std::optional<std::string>> ReadKey(Scope& s, Shard& shard, const std::string& key,
                                           ReadKind kind, const std::optional<Expiry>& change) {
  Found found = s.Find(shard, key);
  if (found.entry == nullptr) {
    s.Depend(found);
    return std::optional<std::string>();
  }
  if (found.entry->type != ValueType::kString) return WrongType();
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

Result<SetReply> SetKey(Scope& s, Shard& shard, const SetArgs& request) {
  SetReply reply;
  Found found = s.Find(shard, request.key);
  // SET ... GET reads a string; a plain SET replaces whatever the key held.
  if (request.return_old && found.entry != nullptr && found.entry->type != ValueType::kString) {
    return WrongType();
  }
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
  if (found.entry != nullptr && found.entry->type != ValueType::kString) {
    outcome.error = kWrongTypeError;
    return outcome;
  }
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

namespace {

bool IsInteger(const std::string& text) {
  int64_t unused = 0;
  return text.size() <= 20 && ParseRedisInt64(text, &unused);
}

// How Redis 7 would encode `e` (OBJECT ENCODING), by its sizes.
std::string EncodingOf(const Entry& e) {
  if (e.type == ValueType::kString) {
    const std::string& v = e.value ? e.value->str() : std::string();
    return IsInteger(v) ? "int" : v.size() <= 44 ? "embstr" : "raw";
  }
  const auto& fields = e.collection->fields;
  bool small = fields.size() <= 128;
  bool ints = e.type == ValueType::kSet && fields.size() <= 512;
  for (const auto& [name, f] : fields) {
    if (name.size() > 64 || f.value.size() > 64) small = false;
    if (!IsInteger(name)) ints = false;
  }
  return ints ? "intset" : small ? "listpack" : "hashtable";
}

}  // namespace

std::optional<KeyInfo> TypeKey(Scope& s, Shard& shard, const std::string& key) {
  Found found = s.Find(shard, key);
  s.Depend(found);
  if (found.entry == nullptr) return std::nullopt;
  const Entry& e = *found.entry;
  uint64_t bytes = kEntryOverheadBytes + key.size() + e.value_bytes();
  return KeyInfo{e.type, e.cached() ? EncodingOf(e) : "", bytes};
}

Result<bool> RenameKey(Scope& s, const std::string& from, const std::string& to, bool if_absent) {
  Shard& from_shard = s.ShardOf(from);
  Shard& to_shard = s.ShardOf(to);
  s.Holds(from_shard);
  s.Holds(to_shard);
  Found source = s.Find(from_shard, from);
  if (source.entry == nullptr) return Error::InvalidArgument("no such key");
  if (from == to) return !if_absent;
  Found target = s.Find(to_shard, to);
  if (if_absent && target.entry != nullptr) {
    s.Depend(target);
    return false;
  }
  Entry& e = *source.entry;
  UnixMillis deadline = e.expires_at;
  ValueType type = e.type;
  SharedValue value = e.value ? *e.value : SharedValue();  // the plan loaded it
  std::vector<std::pair<std::string, CollectionField>> fields;
  if (e.collection) fields.assign(e.collection->fields.begin(), e.collection->fields.end());
  if (!s.ReserveMore(fields.size() + 4)) {
    return Error::Unavailable("write queue full; nothing was applied; retry later");
  }
  s.WriteDelete(from_shard, from);
  if (target.entry != nullptr) s.WriteDelete(to_shard, to);
  Entry& moved = s.tier().Insert(to_shard, to);
  if (type == ValueType::kString) {
    s.WriteValue(to_shard, moved, to, value, deadline);
    return true;
  }
  s.tier().SetDeadline(to_shard, moved, deadline);
  s.tier().SetCollection(to_shard, moved, type, std::make_unique<Collection>());
  for (auto& [name, f] : fields) {
    std::string bytes = f.value.str();
    PutField(s, to_shard, moved, to, name, std::move(bytes), f.expires_at);
  }
  return true;
}

}  // namespace skydb::store
