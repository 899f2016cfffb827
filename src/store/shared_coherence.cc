// Shared coherence (coherence.h): several daemons on one database; PostgreSQL is authoritative.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>

#include "store/coherence.h"

namespace skydb::store {
namespace {

class SharedCoherence final : public Coherence {
 public:
  SharedCoherence(MemoryTier& tier, Loader& loader, DurableBackend& durable)
      : tier_(tier), loader_(loader), durable_(durable) {}

  Status Start() override {
    SKYDB_RETURN_IF_ERROR(RefreshCount());
    spdlog::info("store: shared coherence on {}: {} live sessions", durable_.Describe(),
                 sessions_.load());
    return Ok();
  }

  // Every key's row, once this daemon's own uncommitted writes to them have committed: while
  // the operation heads their gates nothing new is written to them here, so the rows it reads
  // are never older than this daemon's writes.
  Fetch WhatToFetch(const ShardLocks& locks, const OpPlan& plan) override {
    Fetch fetch;
    if (plan.blind) return fetch;
    UnixMillis now = tier_.WallMs();
    for (const auto& key : plan.keys) {
      Shard& shard = tier_.ShardFor(KeyHash(key));
      locks.Holds(shard);
      Found found = tier_.Lookup(shard, key, now);
      if (found.pending) fetch.after.push_back(found.pending);
      fetch.keys.push_back(key);
    }
    return fetch;
  }

  void Read(Fetch fetch, std::function<void(Result<Fetch>)> then) override {
    tier_.counters().misses += fetch.keys.size();
    std::vector<std::shared_ptr<Waiter>> after = std::move(fetch.after);
    AfterAll(after,
             [this, fetch = std::move(fetch), then = std::move(then)](Status committed) mutable {
               if (!committed.ok()) return then(std::move(committed).error());
               ReadRows(loader_, std::move(fetch), std::move(then));
             });
  }

  const RowSet* Install(const ShardLocks&, Fetch& fetch) override {
    return fetch.empty() ? nullptr : &fetch.rows;
  }

  // The rows as read: the writes commit only if no other daemon changed them meanwhile.
  std::shared_ptr<CommitGuard> GuardFor(const OpPlan& /*plan*/, const RowSet* rows) override {
    if (rows == nullptr) return nullptr;
    auto guard = std::make_shared<CommitGuard>();
    std::vector<std::pair<std::string, uint64_t>> expected;
    for (const auto& [key, row] : rows->rows) expected.emplace_back(key, RowFingerprint(row));
    std::sort(expected.begin(), expected.end());
    expected.erase(std::unique(expected.begin(), expected.end(),
                               [](const auto& a, const auto& b) { return a.first == b.first; }),
                   expected.end());
    std::vector<uint64_t> fingerprints;
    for (auto& [key, fingerprint] : expected) {
      guard->check.keys.push_back(key);
      fingerprints.push_back(fingerprint);
    }
    guard->check.unchanged = [fingerprints = std::move(fingerprints)](const std::vector<Row>& now) {
      for (size_t i = 0; i < fingerprints.size(); ++i) {
        if (RowFingerprint(now[i]) != fingerprints[i]) return false;
      }
      return true;
    };
    return guard;
  }

  bool TracksInflight() const override { return true; }
  bool ServesFromMemory() const override { return false; }  // the row must be read first

  int64_t Count() const override { return sessions_.load(); }
  void FillCounts(StoreStats& s) const override {
    s.sessions = sessions_.load();
    s.expiring = expiring_.load();
  }

  void Scan(uint64_t cursor, std::string pattern, size_t count, std::optional<ValueType> type,
            StoreCallback<ScanReply> done) override {
    count = std::max<size_t>(count, 1);
    // The table is paged by a 60-bit hash: a cursor past it (SCAN -1 wraps there, as in Redis)
    // has nothing left to return.
    if (cursor >= (uint64_t{1} << 60)) return done(ScanReply{});
    loader_.Run([this, cursor, pattern = std::move(pattern), count, type, done](int reader) {
      if (reader < 0) return done(Error::Unavailable("the store is shutting down"));
      auto page = durable_.ScanKeys(reader, cursor, count, tier_.WallMs(), type);
      if (!page.ok()) return done(std::move(page).error().Within("SCAN"));
      ScanReply reply;
      reply.next_cursor = page->next_cursor;
      for (auto& key : page->keys) {
        Shard& shard = tier_.ShardFor(KeyHash(key));
        {
          // Deleted here, not committed yet: already gone for this daemon's clients.
          MutexLock lock(shard.mu);
          if (tier_.HasPendingDelete(shard, key)) continue;
        }
        if (pattern.empty() || GlobMatch(pattern, key)) reply.keys.push_back(std::move(key));
      }
      done(std::move(reply));
    });
  }

  // PostgreSQL's rows are the truth here; the count is refreshed with the next durable sweep.
  int64_t Flushed(int64_t) override {
    expiring_ = 0;
    return sessions_.exchange(0);
  }

  void AfterDurableSweep() override {
    Status counted = RefreshCount();
    if (!counted.ok()) spdlog::warn("store: {}", counted.error().message);
  }

 private:
  Status RefreshCount() {
    auto count = durable_.CountLive(tier_.WallMs());
    if (!count.ok()) return std::move(count).error().Within("count sessions");
    sessions_ = count->sessions;
    expiring_ = count->expiring;
    return Ok();
  }

  MemoryTier& tier_;
  Loader& loader_;
  DurableBackend& durable_;
  std::atomic<int64_t> sessions_{0};
  std::atomic<int64_t> expiring_{0};
};

}  // namespace

std::unique_ptr<Coherence> NewSharedCoherence(MemoryTier& tier, Loader& loader,
                                              DurableBackend& durable) {
  return std::make_unique<SharedCoherence>(tier, loader, durable);
}

}  // namespace skydb::store
