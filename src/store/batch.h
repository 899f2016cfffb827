// BuildBatch: the group committer's fold, as a pure function. Writes taken from a queue in
// enqueue order become one row per key — the latest value wins, a deadline-only change after a
// value write keeps the value with the new deadline — each with the sequence number of the
// last write folded into it, which is what the memory tier is told once the batch commits.
// Thread-safety: pure.
#pragma once

#include <cstdint>
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
  std::vector<DurableWrite> rows;  // a key appears at most once
  std::vector<uint64_t> seqs;      // aligned with rows: the last seq folded into each row
  std::vector<uint64_t> hashes;    // aligned with rows: the row's QueuedWrite::hash
};

Batch BuildBatch(std::vector<QueuedWrite> writes);

// Bytes a write adds to a batch's statement (for store.batch_max_bytes).
inline size_t WriteBytes(const DurableWrite& w) { return w.key.size() + w.value.size() + 32; }

}  // namespace skydb::store
