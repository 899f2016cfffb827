#include "store/batch.h"

#include <algorithm>
#include <bit>

namespace skydb::store {
namespace {

// Folds `next` into `into` for the same key: the later write wins, except that a deadline-only
// change after an upsert keeps the upsert's value.
void Fold(DurableWrite& into, DurableWrite next) {
  into.expires_at = next.expires_at;
  if (next.kind == DurableWrite::Kind::kTouch && into.kind == DurableWrite::Kind::kUpsert) return;
  into.kind = next.kind;
  into.value = std::move(next.value);
}

}  // namespace

Batch BuildBatch(std::vector<QueuedWrite> writes) {
  Batch batch;
  batch.rows.reserve(writes.size());
  batch.seqs.reserve(writes.size());
  batch.hashes.reserve(writes.size());
  // Which row holds a key: open addressing on the writes' hashes (one allocation per batch, not
  // one per row), the key itself compared, so writes whose keys share a hash stay apart.
  std::vector<uint32_t> row_plus_one(std::bit_ceil(std::max<size_t>(2 * writes.size(), 2)), 0);
  size_t mask = row_plus_one.size() - 1;
  for (auto& queued : writes) {
    size_t slot = queued.hash & mask;
    while (row_plus_one[slot] != 0) {
      size_t row = row_plus_one[slot] - 1;
      if (batch.hashes[row] == queued.hash && batch.rows[row].key == queued.write.key) break;
      slot = (slot + 1) & mask;
    }
    if (row_plus_one[slot] == 0) {
      batch.rows.push_back(std::move(queued.write));
      batch.seqs.push_back(queued.seq);
      batch.hashes.push_back(queued.hash);
      row_plus_one[slot] = static_cast<uint32_t>(batch.rows.size());
    } else {
      size_t row = row_plus_one[slot] - 1;
      Fold(batch.rows[row], std::move(queued.write));
      batch.seqs[row] = queued.seq;
    }
  }
  return batch;
}

}  // namespace skydb::store
