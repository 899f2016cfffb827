// Key gates: one key's operations take effect in the order they were called, whatever one of
// them had to load first.
//
// Most operations run at once under their shards' locks. One that must first read something
// from PostgreSQL (an evicted value; with shared coherence, its keys' rows) joins the gate of
// every key it touches, and so does every later operation on one of those keys: each gate is a
// queue, and an operation runs once it heads the gate of every key it touches. Gates are joined
// under all of an operation's shard locks at once, so every gate orders any two operations the
// same way and no two wait for each other.
//
// Thread-safety: the functions below require the shard locks of every key they touch (the
// operation's keys). A GatedOp's Start and Fail run with no lock held, each at most once and
// never both.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skydb/result.h"
#include "store/memory_tier.h"
#include "store/shard_locks.h"

namespace skydb::store {

class GatedOp : public std::enable_shared_from_this<GatedOp> {
 public:
  explicit GatedOp(std::vector<std::string> keys) : keys_(std::move(keys)) {}
  virtual ~GatedOp() = default;
  GatedOp(const GatedOp&) = delete;
  GatedOp& operator=(const GatedOp&) = delete;

  // Its keys, distinct: the gates it waits in.
  const std::vector<std::string>& keys() const { return keys_; }

  // Runs Start once, unless the operation was claimed already (started or failed).
  static void Launch(const std::shared_ptr<GatedOp>& op);
  // Launches every operation of `ready` (none holds a lock), iteratively: an operation that
  // finishes inside another's Launch adds the ones it frees to the same list.
  static void LaunchAll(std::vector<std::shared_ptr<GatedOp>> ready);
  // Fails an operation KeyGates::Withdraw took out of its gates.
  static void FailWithdrawn(const std::shared_ptr<GatedOp>& op, Error error) {
    op->Fail(std::move(error));
  }

 protected:
  // It heads the gate of each of its keys: it runs (and later leaves its gates).
  virtual void Start() = 0;
  // It was taken out of its gates without running; its caller gets `error`.
  virtual void Fail(Error error) = 0;

 private:
  friend class KeyGates;
  const std::vector<std::string> keys_;
  std::atomic<int> blocked_{0};       // gates it does not head yet
  std::atomic<bool> claimed_{false};  // started or failed
};

class KeyGates {
 public:
  // What waits for `keys`: whether any has a gate, and the error of a stalled one.
  struct Check {
    bool gated = false;
    std::optional<Error> stalled;
  };
  static Check Inspect(const ShardLocks& locks, MemoryTier& tier,
                       const std::vector<std::string>& keys) REQUIRES(locks);
  // Whether `key` has a gate (its shard is locked).
  static bool IsGated(Shard& shard, const std::string& key) REQUIRES(shard.mu) {
    return !shard.gates.empty() && shard.gates.count(key) != 0;
  }
  // Queues `op` in the gate of each of its keys; true when it heads them all (launch it once
  // the locks are released).
  static bool Join(const ShardLocks& locks, MemoryTier& tier, const std::shared_ptr<GatedOp>& op)
      REQUIRES(locks);
  // Takes `op` out of every gate it is in; returns the operations that head all of theirs now.
  static std::vector<std::shared_ptr<GatedOp>> Leave(const ShardLocks& locks, MemoryTier& tier,
                                                     const GatedOp& op) REQUIRES(locks);
  // `head`'s commit passed store.write_timeout undecided: its gates refuse newcomers with
  // `error` until it leaves, and the operations waiting behind it are returned, to be
  // withdrawn (Withdraw) and failed.
  static std::vector<std::shared_ptr<GatedOp>> Stall(const ShardLocks& locks, MemoryTier& tier,
                                                     const GatedOp& head, const Error& error)
      REQUIRES(locks);
  // Takes `op` out of its gates unless it was claimed already (started or failed); `locks`
  // hold its keys. true: it is withdrawn, and the caller fails it (GatedOp::FailWithdrawn)
  // once the locks are released. `ready`: the operations that head all of their gates now.
  static bool Withdraw(const ShardLocks& locks, MemoryTier& tier,
                       const std::shared_ptr<GatedOp>& op,
                       std::vector<std::shared_ptr<GatedOp>>* ready) REQUIRES(locks);
};

}  // namespace skydb::store
