#include "store/batch.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

namespace skydb::store {
namespace {

using WriteKind = DurableWrite::Kind;

bool IsRow(WriteKind k) {
  return k == WriteKind::kUpsert || k == WriteKind::kDelete || k == WriteKind::kTouch ||
         k == WriteKind::kCollection;
}

// Folds `next` into `into` for the same key's row: the later write wins, except that a
// deadline-only change keeps the value (or collection) it follows.
void FoldRow(DurableWrite& into, DurableWrite next) {
  into.expires_at = next.expires_at;
  into.version = next.version;
  if (next.kind == WriteKind::kTouch &&
      (into.kind == WriteKind::kUpsert || into.kind == WriteKind::kCollection))
    return;
  into.kind = next.kind;
  into.type = next.type;
  into.value = std::move(next.value);
}

// Open addressing over the writes' hashes: one allocation per batch, not one per row; the key
// itself is compared, so keys sharing a hash stay apart.
class KeySlots {
 public:
  explicit KeySlots(size_t n) : slots_(std::bit_ceil(std::max<size_t>(2 * n, 2)), 0) {}
  // The index (plus one) stored for `key`, or the empty slot to store it in.
  uint32_t& Find(const std::string& key, uint64_t hash, const std::vector<std::string>& keys) {
    size_t mask = slots_.size() - 1;
    for (size_t slot = hash & mask;; slot = (slot + 1) & mask) {
      uint32_t at = slots_[slot];
      if (at == 0 || keys[at - 1] == key) return slots_[slot];
    }
  }

 private:
  std::vector<uint32_t> slots_;
};

struct KeyFolds {
  int row = -1;                // index in Batch::rows
  bool cleared = false;        // in Batch::cleared
  bool deleted = false;        // a kDelete came: its fields go with it, unless the key returns
  std::vector<size_t> fields;  // indexes in Batch::fields (live ones)
};

void Clear(Batch& batch, KeyFolds& f, const std::string& key) {
  if (!f.cleared) batch.cleared.push_back(key);
  f.cleared = true;
}

}  // namespace

bool Batch::only_upserts() const {
  if (!cleared.empty() || !fields.empty()) return false;
  return std::all_of(rows.begin(), rows.end(),
                     [](const DurableWrite& w) { return w.kind == WriteKind::kUpsert; });
}

namespace {

// BuildBatch's state: the batch so far, and per key what was folded into it.
class BatchBuilder {
 public:
  explicit BatchBuilder(size_t n) : slots_(n) {
    batch_.rows.reserve(n);
    batch_.keys.reserve(n);
    batch_.seqs.reserve(n);
    batch_.hashes.reserve(n);
  }

  void Add(QueuedWrite& queued) {
    DurableWrite& w = queued.write;
    KeyFolds& f = FoldsOf(queued);
    if (w.kind == WriteKind::kDelete || w.kind == WriteKind::kFieldsClear) {
      for (size_t i : f.fields) dropped_[i] = true;
      f.fields.clear();
      if (w.kind == WriteKind::kFieldsClear) return Clear(batch_, f, w.key);
      f.deleted = true;  // the row's delete takes its fields along
    } else if (f.deleted && w.kind != WriteKind::kTouch) {
      // Deleted, then written again: the row's delete is folded away, so its old fields (it
      // may have been a hash) go first.
      Clear(batch_, f, w.key);
      f.deleted = false;
    }
    if (!IsRow(w.kind)) return AddField(f, std::move(w));
    if (f.row < 0) {
      f.row = static_cast<int>(batch_.rows.size());
      batch_.rows.push_back(std::move(w));
    } else {
      FoldRow(batch_.rows[static_cast<size_t>(f.row)], std::move(w));
    }
  }

  Batch Finish() {
    if (std::find(dropped_.begin(), dropped_.end(), true) != dropped_.end()) {
      std::vector<DurableWrite> live;
      for (size_t i = 0; i < batch_.fields.size(); ++i) {
        if (!dropped_[i]) live.push_back(std::move(batch_.fields[i]));
      }
      batch_.fields.swap(live);
    }
    return std::move(batch_);
  }

 private:
  KeyFolds& FoldsOf(const QueuedWrite& queued) {
    uint32_t& at = slots_.Find(queued.write.key, queued.hash, batch_.keys);
    if (at == 0) {
      batch_.keys.push_back(queued.write.key);
      batch_.seqs.push_back(queued.seq);
      batch_.hashes.push_back(queued.hash);
      folds_.emplace_back();
      at = static_cast<uint32_t>(batch_.keys.size());
    }
    batch_.seqs[at - 1] = queued.seq;
    return folds_[at - 1];
  }

  void AddField(KeyFolds& f, DurableWrite w) {
    std::string id = w.key + '\0' + w.field;
    auto [it, fresh] = field_at_.try_emplace(std::move(id), batch_.fields.size());
    if (fresh || dropped_[it->second]) {
      it->second = batch_.fields.size();
      f.fields.push_back(batch_.fields.size());
      batch_.fields.push_back(std::move(w));
      dropped_.push_back(false);
    } else {
      batch_.fields[it->second] = std::move(w);
    }
  }

  Batch batch_;
  KeySlots slots_;
  std::vector<KeyFolds> folds_;
  std::vector<bool> dropped_;                         // per Batch::fields: superseded by a clear
  std::unordered_map<std::string, size_t> field_at_;  // key + '\0' + field -> Batch::fields
};

}  // namespace

Batch BuildBatch(std::vector<QueuedWrite> writes) {
  BatchBuilder builder(writes.size());
  for (auto& queued : writes) builder.Add(queued);
  return builder.Finish();
}

}  // namespace skydb::store
