// Exclusive coherence (coherence.h): this daemon owns its table and memory is authoritative.
#include <spdlog/spdlog.h>

#include "store/coherence.h"

namespace skydb::store {
namespace {

class ExclusiveCoherence final : public Coherence {
 public:
  ExclusiveCoherence(MemoryTier& tier, Loader* loader, DurableBackend* durable)
      : tier_(tier), loader_(loader), durable_(durable) {}

  Status Start() override {
    if (durable_ == nullptr) return Ok();
    int64_t before = tier_.count();
    SKYDB_RETURN_IF_ERROR(
        durable_->LoadIndex(tier_.WallMs(), [&](DurableBackend::IndexEntry entry) {
          tier_.AddIndexed(std::move(entry.key), entry.expires_at, entry.type);
        }));
    spdlog::info("store: loaded the index of {} live sessions from {}", tier_.count() - before,
                 durable_->Describe());
    return Ok();
  }

  // The reads whose values left memory, each at the version its fill must find.
  Fetch WhatToFetch(const ShardLocks& locks, const OpPlan& plan) override {
    Fetch fetch;
    if (plan.reads.empty() || loader_ == nullptr) return fetch;
    UnixMillis now = tier_.WallMs();
    for (const auto& key : plan.reads) {
      Shard& shard = tier_.ShardFor(KeyHash(key));
      locks.Holds(shard);
      uint64_t version = tier_.EvictedVersion(shard, key, now);
      if (version == 0) continue;
      fetch.keys.push_back(key);
      fetch.versions.push_back(version);
    }
    return fetch;
  }

  void Read(Fetch fetch, std::function<void(Result<Fetch>)> then) override {
    tier_.counters().misses += fetch.keys.size();
    ReadRows(*loader_, std::move(fetch), std::move(then));
  }

  const RowSet* Install(const ShardLocks& locks, Fetch& fetch) override {
    for (size_t i = 0; i < fetch.keys.size(); ++i) {
      Shard& shard = tier_.ShardFor(KeyHash(fetch.keys[i]));
      locks.Holds(shard);
      tier_.Fill(shard, fetch.keys[i], fetch.versions[i], fetch.rows.rows[i].second);
    }
    return nullptr;  // memory holds the truth again
  }

  std::shared_ptr<CommitGuard> GuardFor(const OpPlan&, const RowSet*) override { return nullptr; }
  bool TracksInflight() const override { return false; }
  bool ServesFromMemory() const override { return true; }

  int64_t Count() const override { return tier_.count(); }
  void FillCounts(StoreStats& s) const override {
    s.sessions = tier_.count();
    s.expiring = tier_.expiring();
  }
  void Scan(uint64_t cursor, std::string pattern, size_t count, std::optional<ValueType> type,
            StoreCallback<ScanReply> done) override {
    done(tier_.Scan(cursor, pattern, std::max<size_t>(count, 1), type));
  }
  int64_t Flushed(int64_t in_memory) override { return in_memory; }

 private:
  MemoryTier& tier_;
  Loader* loader_;
  DurableBackend* durable_;
};

}  // namespace

std::unique_ptr<Coherence> NewExclusiveCoherence(MemoryTier& tier, Loader* loader,
                                                 DurableBackend* durable) {
  return std::make_unique<ExclusiveCoherence>(tier, loader, durable);
}

}  // namespace skydb::store
