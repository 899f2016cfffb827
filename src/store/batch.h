// BuildBatch: the group committer's fold, as a pure function. Writes taken from a queue in
// enqueue order become one row write per key — the latest wins, a deadline-only change after a
// value write keeps the value with the new deadline — and one write per field of a hash or
// member of a set; a key's fields are cleared (a DEL, a hash replaced) before the field writes
// that came after. Each key keeps the sequence number of the last write folded for it, which is
// what the memory tier is told once the batch commits.
// Thread-safety: pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skydb/durable.h"

namespace skydb::store {

// One write as queued: what to write, its sequence number, and its key's hash (KeyHash: what a
// running commit holds, and what the memory tier is told the commit of).
struct QueuedWrite {
  DurableWrite write;
  uint64_t seq = 0;
  uint64_t hash = 0;
};

struct Batch {
  // A key at most once: kUpsert, kDelete, kTouch or kCollection.
  std::vector<DurableWrite> rows;
  // Keys whose every field is deleted before `fields` apply.
  std::vector<std::string> cleared;
  // A (key, field) at most once: kFieldUpsert or kFieldDelete, applied after `rows`.
  std::vector<DurableWrite> fields;
  // Every key the batch writes, once, with the last seq folded for it and its hash.
  std::vector<std::string> keys;
  std::vector<uint64_t> seqs;
  std::vector<uint64_t> hashes;

  bool only_upserts() const;  // nothing but kUpsert rows: the one-statement commit
  size_t writes() const { return rows.size() + cleared.size() + fields.size(); }
};

Batch BuildBatch(std::vector<QueuedWrite> writes);

// Bytes a write adds to a batch's statement (for store.batch_max_bytes).
inline size_t WriteBytes(const DurableWrite& w) {
  return w.key.size() + w.field.size() + w.value.size() + 40;
}

}  // namespace skydb::store
