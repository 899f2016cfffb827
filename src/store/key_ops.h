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

// The key's value must be in memory (the driver loads evicted values first).
std::optional<std::string> ReadKey(Scope& s, Shard& shard, const std::string& key, ReadKind kind,
                                   const std::optional<Expiry>& change) REQUIRES(shard.mu);
// NX/XX and SET ... GET.
SetReply SetKey(Scope& s, Shard& shard, const SetArgs& request) REQUIRES(shard.mu);
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

}  // namespace skydb::store
