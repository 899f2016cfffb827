// OpPlan: what one store operation touches, decided before it runs, so that the runner
// (op_runner.h) can lock its shards, order it in its keys' gates (key_gates.h) and have the
// coherence (coherence.h) fetch what it needs first. Internal to src/store.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace skydb::store {

struct OpPlan {
  std::vector<std::string> keys;   // every key it touches, distinct
  std::vector<std::string> reads;  // those whose values it reads (must be in memory)
  size_t max_writes = 0;           // at most this many durable writes
  // Its outcome does not depend on what its keys hold (a plain SET): with shared coherence it
  // reads no rows first.
  bool blind = false;
  bool all_shards = false;  // FLUSHALL inside a transaction: every shard is locked
};

// `keys` sorted and without repeats.
void MakeDistinct(std::vector<std::string>& keys);

}  // namespace skydb::store
