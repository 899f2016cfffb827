// Hashes and sets on the memory tier: what each hash and set command (CollectionOp) means,
// through the operation's Scope, with Redis's replies and errors. A hash's fields and a set's
// members live in one Collection per key (shard.h); each field write queues one field write and
// the key's own row (type, deadline, new version), never the whole collection (docs/storage.md).
// An emptied hash or set is deleted, as in Redis. No I/O, no threads.
//
// Thread-safety: functions taking a Scope run under its shard locks.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "skydb/store.h"
#include "store/op_plan.h"
#include "store/scope.h"

namespace skydb::store {

// The plan of `op`: its keys (all read: a collection must be in memory) and at most how many
// writes it queues (SINTERSTORE and the like reserve more as they find out, ReserveMore).
OpPlan PlanCollection(const CollectionOp& op);

// Applies `op`. An error applied nothing (WRONGTYPE, a hash value that is not a number...).
Result<StoreReply> ApplyCollection(Scope& s, const CollectionOp& op, size_t max_value_bytes);

// --- shared by hash_ops.cc and set_ops.cc --------------------------------------------------

// The live collection of `key` if it is of `type`; null when the key is absent (an expired
// field is dropped from memory as it is found); WRONGTYPE when it holds another type.
Result<Collection*> FindCollection(Scope& s, Shard& shard, const std::string& key, ValueType type,
                                   Entry** entry) REQUIRES(shard.mu);
// The entry of `key` as a collection of `type`, made (empty, with the default deadline) when
// absent. The caller checked the type (FindCollection).
Entry& MakeCollection(Scope& s, Shard& shard, const std::string& key, ValueType type)
    REQUIRES(shard.mu);
// Writes one field (member) of `e`'s collection: memory now, the field and the key's row
// queued. false when it was new.
bool PutField(Scope& s, Shard& shard, Entry& e, const std::string& key, const std::string& field,
              std::string value, UnixMillis expires_at) REQUIRES(shard.mu);
// Removes one field; false when there was none. An emptied collection deletes the key.
bool RemoveField(Scope& s, Shard& shard, Entry& e, const std::string& key, const std::string& field)
    REQUIRES(shard.mu);
// Replaces `key` with a set (or deletes it, for an empty `members`): SINTERSTORE and the like.
void StoreSet(Scope& s, Shard& shard, const std::string& key,
              const std::vector<std::string>& members) REQUIRES(shard.mu);
// HSCAN/SSCAN over a collection: fields in the order of their KeyHash from `cursor`.
StoreReply ScanCollection(const Collection* c, const CollectionOp& op, bool values);
// The process's random numbers for HRANDFIELD, SRANDMEMBER and SPOP.
std::mt19937_64& Random();

Result<StoreReply> ApplyHash(Scope& s, const CollectionOp& op, size_t max_value_bytes);
Result<StoreReply> ApplySet(Scope& s, const CollectionOp& op);

}  // namespace skydb::store
