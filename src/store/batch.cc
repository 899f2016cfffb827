#include "store/batch.h"

#include <string_view>
#include <unordered_map>

namespace skydb::store {
namespace {

// Folds `next` into `into` for the same key: the later write wins, except that a deadline-only
// change after an upsert keeps the upsert's value. `into.key` is left alone: the batch's index
// holds views of it.
void Fold(DurableWrite& into, DurableWrite next) {
  into.expires_at = next.expires_at;
  if (next.kind == DurableWrite::Kind::kTouch && into.kind == DurableWrite::Kind::kUpsert) return;
  into.kind = next.kind;
  into.value = std::move(next.value);
}

}  // namespace

Batch BuildBatch(std::vector<QueuedWrite> writes) {
  Batch batch;
  // Reserved up front: the index's views point into rows' keys, which must not move.
  batch.rows.reserve(writes.size());
  batch.seqs.reserve(writes.size());
  std::unordered_map<std::string_view, size_t> row_of;
  for (auto& queued : writes) {
    auto found = row_of.find(queued.write.key);
    if (found == row_of.end()) {
      batch.rows.push_back(std::move(queued.write));
      batch.seqs.push_back(queued.seq);
      row_of.emplace(batch.rows.back().key, batch.rows.size() - 1);
    } else {
      Fold(batch.rows[found->second], std::move(queued.write));
      batch.seqs[found->second] = queued.seq;
    }
  }
  return batch;
}

}  // namespace skydb::store
