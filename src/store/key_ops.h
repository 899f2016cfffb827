// The session store's operations on one key, applied to the memory tier with the key's shard
// locked: what GET, SET, DEL, EXISTS, EXPIRE, INCR and TTL mean, decided in one place for every
// backend, through the operation's Scope (scope.h). No I/O, no threads: the runner
// (op_runner.h) locks, runs one or several of these, queues the unit and replies. An operation
// may run again after a refused guarded commit, so none consumes its arguments.
//
// Thread-safety: functions taking a Shard& require its mutex.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skydb/store.h"
#include "store/scope.h"

namespace skydb::store {

// SET's request with its value held once: the entry and the queued write share the bytes, and
// an operation that runs again (a refused guarded commit) still has them.
struct SetArgs {
  std::string key;
  SharedValue value;
  Expiry expiry;
  SetCondition condition = SetCondition::kAlways;
  bool return_old = false;

  static SetArgs From(SetRequest r) {
    return {std::move(r.key), SharedValue(std::move(r.value)), r.expiry, r.condition, r.return_old};
  }
};

// Redis's reply to a command on a key of another type.
inline constexpr const char* kWrongTypeError =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline Error WrongType() { return Error::InvalidArgument(kWrongTypeError); }

// The key's value must be in memory (the driver loads evicted values first).
Result<std::optional<std::string>> ReadKey(Scope& s, Shard& shard, const std::string& key,
                                           ReadKind kind, const std::optional<Expiry>& change)
    REQUIRES(shard.mu);
// NX/XX and SET ... GET.
Result<SetReply> SetKey(Scope& s, Shard& shard, const SetArgs& request) REQUIRES(shard.mu);
bool DeleteKey(Scope& s, Shard& shard, const std::string& key) REQUIRES(shard.mu);
bool ExistsKey(Scope& s, Shard& shard, const std::string& key) REQUIRES(shard.mu);
bool ExpireKey(Scope& s, Shard& shard, const std::string& key, const Expiry& expiry,
               const ExpireCondition& condition) REQUIRES(shard.mu);
// INCR family; `error` is Redis's text (empty: applied). The key's value must be in memory.
struct IncrOutcome {
  IncrReply reply;
  std::string error;
};
IncrOutcome IncrementKey(Scope& s, Shard& shard, const IncrRequest& request, size_t max_value_bytes)
    REQUIRES(shard.mu);
TtlReply TtlKey(Scope& s, Shard& shard, const std::string& key) REQUIRES(shard.mu);
// TYPE / OBJECT ENCODING; nullopt for a missing key. Its value must be in memory.
std::optional<KeyInfo> TypeKey(Scope& s, Shard& shard, const std::string& key) REQUIRES(shard.mu);
// RENAME / RENAMENX: `to` gets `from`'s value (of any type) and deadline; false when `if_absent`
// and `to` exists; an error ("no such key") when `from` does not. Both values in memory.
Result<bool> RenameKey(Scope& s, const std::string& from, const std::string& to, bool if_absent);

// EXPIRE's (and HEXPIRE's) condition: `current` is the deadline now (0: none, which counts as
// infinitely far), `when` the new one.
bool ConditionHolds(const ExpireCondition& c, UnixMillis current, UnixMillis when);

}  // namespace skydb::store
