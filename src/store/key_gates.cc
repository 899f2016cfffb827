#include "store/key_gates.h"

#include <algorithm>
#include <deque>

namespace skydb::store {

void GatedOp::Launch(const std::shared_ptr<GatedOp>& op) {
  if (!op->claimed_.exchange(true)) op->Start();
}

void GatedOp::LaunchAll(std::vector<std::shared_ptr<GatedOp>> ready) {
  // The list of the outermost LaunchAll on this thread: an operation finishing inside Start
  // frees the next one on its keys, which would otherwise start inside it, and so on down a
  // long queue of one key.
  thread_local std::deque<std::shared_ptr<GatedOp>>* pending = nullptr;
  if (pending != nullptr) {
    for (auto& op : ready) pending->push_back(std::move(op));
    return;
  }
  std::deque<std::shared_ptr<GatedOp>> local(std::make_move_iterator(ready.begin()),
                                             std::make_move_iterator(ready.end()));
  pending = &local;
  while (!local.empty()) {
    std::shared_ptr<GatedOp> op = std::move(local.front());
    local.pop_front();
    Launch(op);
  }
  pending = nullptr;
}

KeyGates::Check KeyGates::Inspect(const ShardLocks& locks, MemoryTier& tier,
                                  const std::vector<std::string>& keys) {
  Check check;
  for (const auto& key : keys) {
    Shard& shard = tier.ShardFor(KeyHash(key));
    locks.Holds(shard);
    if (shard.gates.empty()) continue;
    auto it = shard.gates.find(key);
    if (it == shard.gates.end()) continue;
    check.gated = true;
    if (it->second.stalled && !check.stalled) check.stalled = it->second.stalled;
  }
  return check;
}

bool KeyGates::Join(const ShardLocks& locks, MemoryTier& tier, const std::shared_ptr<GatedOp>& op) {
  int blocked = 0;
  for (const auto& key : op->keys()) {
    Shard& shard = tier.ShardFor(KeyHash(key));
    locks.Holds(shard);
    Gate& gate = shard.gates[key];
    if (!gate.ops.empty()) ++blocked;
    gate.ops.push_back(op);
  }
  // Set before the locks are released: nothing can leave these gates meanwhile.
  op->blocked_.store(blocked);
  return blocked == 0;
}

std::vector<std::shared_ptr<GatedOp>> KeyGates::Leave(const ShardLocks& locks, MemoryTier& tier,
                                                      const GatedOp& op) {
  std::vector<std::shared_ptr<GatedOp>> ready;
  for (const auto& key : op.keys()) {
    Shard& shard = tier.ShardFor(KeyHash(key));
    locks.Holds(shard);
    auto it = shard.gates.find(key);
    if (it == shard.gates.end()) continue;
    auto& ops = it->second.ops;
    auto mine = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.get() == &op; });
    if (mine == ops.end()) continue;
    bool was_head = mine == ops.begin();
    ops.erase(mine);
    if (was_head) it->second.stalled.reset();  // a stall is its head's
    if (ops.empty()) {
      shard.gates.erase(it);
    } else if (was_head && ops.front()->blocked_.fetch_sub(1) == 1) {
      ready.push_back(ops.front());
    }
  }
  return ready;
}

std::vector<std::shared_ptr<GatedOp>> KeyGates::Stall(const ShardLocks& locks, MemoryTier& tier,
                                                      const GatedOp& head, const Error& error) {
  std::vector<std::shared_ptr<GatedOp>> behind;
  for (const auto& key : head.keys()) {
    Shard& shard = tier.ShardFor(KeyHash(key));
    locks.Holds(shard);
    auto it = shard.gates.find(key);
    if (it == shard.gates.end() || it->second.ops.empty() || it->second.ops.front().get() != &head)
      continue;
    it->second.stalled = error;
    behind.insert(behind.end(), std::next(it->second.ops.begin()), it->second.ops.end());
  }
  return behind;
}

bool KeyGates::Withdraw(const ShardLocks& locks, MemoryTier& tier,
                        const std::shared_ptr<GatedOp>& op,
                        std::vector<std::shared_ptr<GatedOp>>* ready) {
  if (op->claimed_.exchange(true)) return false;
  std::vector<std::shared_ptr<GatedOp>> freed = Leave(locks, tier, *op);
  ready->insert(ready->end(), freed.begin(), freed.end());
  return true;
}

}  // namespace skydb::store
