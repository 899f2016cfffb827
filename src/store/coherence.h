// Coherence: what differs between a daemon that owns its table and daemons that share one, at
// the few points where it matters; the runner (op_runner.h) and the store (tiered_store.h) call
// nothing else of it.
//
// Exclusive (store.coherence = "exclusive", the private cluster): memory is authoritative. An
// operation fetches only the values of its reads that left memory; a fill is installed only
// at the version it was asked at (MemoryTier::Fill). Writes commit unconditionally.
//
// Shared (several daemons on one database): PostgreSQL is authoritative. Every operation but a
// blind write (a plain SET) first reads its keys' rows — once this daemon's own uncommitted
// writes to them have committed, so a row is never older than what this daemon wrote — and
// runs against them. Its writes commit under a guard: only if those rows are unchanged, decided
// in the committing transaction with the rows locked; a refused one runs again on fresh rows.
// So every conditional or read-modify-write command has exactly one winner across daemons.
// Memory keeps only uncommitted writes; the session count and SCAN are PostgreSQL's.
//
// Thread-safety: every method may be called from any thread; those taking ShardLocks require
// them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "skydb/durable.h"
#include "skydb/store.h"
#include "store/committer.h"
#include "store/loader.h"
#include "store/memory_tier.h"
#include "store/op_plan.h"
#include "store/scope.h"
#include "store/waiter.h"

namespace skydb::store {

// What an operation reads from PostgreSQL before it runs.
struct Fetch {
  std::vector<std::string> keys;
  std::vector<uint64_t> versions;              // exclusive: the evicted entries' versions
  std::vector<std::shared_ptr<Waiter>> after;  // shared: read once these have fired
  RowSet rows;                                 // the rows read, aligned with `keys`
  bool empty() const { return keys.empty(); }
};

class Coherence {
 public:
  virtual ~Coherence() = default;

  // Before the store serves: the key index (exclusive) or the session count (shared).
  virtual Status Start() = 0;
  // What `plan` must read before it runs; empty: it runs now.
  virtual Fetch WhatToFetch(const ShardLocks& locks, const OpPlan& plan) REQUIRES(locks) = 0;
  // Reads `fetch`'s rows on a reader thread; `then` gets it back with them.
  virtual void Read(Fetch fetch, std::function<void(Result<Fetch>)> then) = 0;
  // The rows are back and the operation's shards locked again: installs them; returns the rows
  // the operation runs against (shared), or null.
  virtual const RowSet* Install(const ShardLocks& locks, Fetch& fetch) REQUIRES(locks) = 0;
  // The condition the operation's writes commit under, or null (unconditional).
  virtual std::shared_ptr<CommitGuard> GuardFor(const OpPlan& plan, const RowSet* rows) = 0;
  // Entries keep their uncommitted write's waiter even when no reply waits for it.
  virtual bool TracksInflight() const = 0;
  // GET may be answered from memory in place (TieredStore::GetInPlace).
  virtual bool ServesFromMemory() const = 0;

  virtual int64_t Count() const = 0;
  virtual void FillCounts(StoreStats& s) const = 0;
  virtual void Scan(uint64_t cursor, std::string pattern, size_t count,
                    std::optional<ValueType> type, StoreCallback<ScanReply> done) = 0;
  // FLUSHALL committed, having removed `in_memory` live keys from memory: what it reports.
  virtual int64_t Flushed(int64_t in_memory) = 0;
  // After each durable sweep, on the maintenance thread.
  virtual void AfterDurableSweep() {}
};

// Reads `fetch.keys`' rows with `loader` into `fetch.rows`; `then` gets it back (on a reader
// thread), or the read's error. Both coherences read through it.
void ReadRows(Loader& loader, Fetch fetch, std::function<void(Result<Fetch>)> then);

// `loader` and `durable` null: the memory-only store (nothing is ever fetched).
std::unique_ptr<Coherence> NewExclusiveCoherence(MemoryTier& tier, Loader* loader,
                                                 DurableBackend* durable);
std::unique_ptr<Coherence> NewSharedCoherence(MemoryTier& tier, Loader& loader,
                                              DurableBackend& durable);

}  // namespace skydb::store
