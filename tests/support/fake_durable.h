// An in-memory DurableBackend for the store's unit tests: a map standing in for sky_sessions,
// with switches to fail or hold commits and a log of every write it was asked to commit.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "skydb/durable.h"

namespace skydb::testing {

// State shared between the backend given to a store and the test (which keeps a handle after
// the store took ownership of the backend, and can hand it to a second store as a "restart").
struct FakeDurableState {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, DurableValue> rows;
  std::vector<DurableWrite> log;  // every committed write, in commit order
  std::vector<size_t> batch_sizes;
  bool fail_commits = false;
  bool hold_commits = false;  // commits block until released
  int held = 0;               // commits blocked by hold_commits now
  int sweeps = 0;
  // The backend that answers ExpiredBetween (the first to ask, until it stops announcing): the
  // announcer lock's holder.
  const void* announcer = nullptr;
  const void* fields_announcer = nullptr;  // the same for FieldsExpiredBetween
  int delete_alls = 0;                     // FLUSHALLs committed
  // Runs inside a guarded commit, after its locks and before it reads the rows:
  // another daemon's write landing in the window the guard closes.
  std::function<void(std::map<std::string, DurableValue>& rows)> before_guard;
  // Runs after a row was read, outside the lock: a read whose answer is delayed in flight.
  std::function<void(const std::string& key)> after_read;
  // Runs inside a guarded commit once its guards are checked and the refused ones reported
  // (CommitRequest::on_refused), before its writes.
  std::function<void()> after_guards;
  bool fail_after_guards = false;  // the next commit fails after its guards (then resets)
  int guarded_commits = 0;         // guards that held (their writes committed)
  int refused_commits = 0;         // guards whose rows had changed
};

class FakeDurable final : public DurableBackend {
 public:
  explicit FakeDurable(std::shared_ptr<FakeDurableState> state) : state_(std::move(state)) {}
  std::string Describe() const override { return "fake durable"; }

  Result<CommitResult> Commit(int /*writer*/, const CommitRequest& request) override {
    std::unique_lock<std::mutex> lock(state_->mu);
    WaitWhileHeld(lock);
    if (state_->fail_commits) return Error::Unavailable("fake: connection refused");
    CommitResult result;
    result.refused.assign(request.guards.size(), false);
    bool any_refused = false;
    if (!request.guards.empty() && state_->before_guard) state_->before_guard(state_->rows);
    for (size_t g = 0; g < request.guards.size(); ++g) {
      const RowGuard& guard = request.guards[g];
      std::vector<std::optional<DurableValue>> rows(guard.keys.size());
      for (size_t i = 0; i < guard.keys.size(); ++i) {
        auto it = state_->rows.find(guard.keys[i]);
        if (it == state_->rows.end()) continue;
        if (it->second.expires_at == 0 || it->second.expires_at > request.now) {
          rows[i] = it->second;
        }
      }
      result.refused[g] = !guard.unchanged(rows);
      any_refused = any_refused || result.refused[g];
      ++(result.refused[g] ? state_->refused_commits : state_->guarded_commits);
    }
    std::set<std::string> left_out;
    for (size_t g = 0; g < request.guards.size(); ++g) {
      if (result.refused[g])
        left_out.insert(request.guards[g].owns.begin(), request.guards[g].owns.end());
    }
    if (any_refused && request.on_refused) request.on_refused(result.refused);
    if (!request.guards.empty() && state_->after_guards) state_->after_guards();
    if (std::exchange(state_->fail_after_guards, false)) {
      return Error::Unavailable("fake: the commit failed after its guards");
    }
    auto kept = [&](const std::vector<DurableWrite>& writes) {
      std::vector<DurableWrite> out;
      for (const auto& w : writes) {
        if (left_out.count(w.key) == 0) out.push_back(w);
      }
      return out;
    };
    std::vector<DurableWrite> rows = kept(request.rows), fields = kept(request.fields);
    // Checked before anything is applied: a failed commit changes nothing.
    SKYDB_RETURN_IF_ERROR(CheckDistinct(rows, false));
    SKYDB_RETURN_IF_ERROR(CheckDistinct(fields, true));
    if (request.delete_all && !any_refused) {
      state_->rows.clear();
      ++state_->delete_alls;
    }
    ApplyLocked(rows);
    for (const auto& key : request.cleared) {
      auto it = state_->rows.find(key);
      if (left_out.count(key) == 0 && it != state_->rows.end()) it->second.fields.clear();
    }
    ApplyFieldsLocked(fields);
    if (!rows.empty() || !fields.empty())
      state_->batch_sizes.push_back(rows.size() + fields.size());
    return result;
  }

  Result<std::optional<DurableValue>> Read(int, const std::string& key, UnixMillis now) override {
    std::optional<DurableValue> row;
    std::function<void(const std::string&)> after;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      auto it = state_->rows.find(key);
      if (it != state_->rows.end() && (it->second.expires_at == 0 || it->second.expires_at > now)) {
        row = it->second;
        // A hash's or set's fields past their own deadlines are not read; with none left the
        // key is gone, as PostgreSQL's reads say.
        std::erase_if(row->fields, [now](const DurableField& f) {
          return f.expires_at != 0 && f.expires_at <= now;
        });
        if (row->type != ValueType::kString && row->fields.empty()) row.reset();
      }
      after = state_->after_read;
    }
    if (after) after(key);
    return row;
  }

  Result<LiveCount> CountLive(UnixMillis now) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    LiveCount count;
    for (const auto& [key, row] : state_->rows) {
      if (row.expires_at != 0 && row.expires_at <= now) continue;
      ++count.sessions;
      if (row.expires_at != 0) ++count.expiring;
    }
    return count;
  }

  // Like the real backend: hash order, keys sharing a hash returned together.
  Result<ScanReply> ScanKeys(int, uint64_t cursor, size_t count, UnixMillis now,
                             std::optional<ValueType> type) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    std::vector<std::pair<uint64_t, std::string>> live;
    for (const auto& [key, row] : state_->rows) {
      if (row.expires_at != 0 && row.expires_at <= now) continue;
      if (type && row.type != *type) continue;
      uint64_t h = 1469598103934665603ULL;
      for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
      h >>= 4;
      if (h >= cursor) live.emplace_back(h, key);
    }
    std::sort(live.begin(), live.end());
    ScanReply reply;
    for (size_t i = 0; i < live.size(); ++i) {
      if (reply.keys.size() >= count && live[i].first != live[i - 1].first) {
        reply.next_cursor = live[i].first;
        break;
      }
      reply.keys.push_back(live[i].second);
    }
    return reply;
  }

  Status LoadIndex(UnixMillis now, const std::function<void(IndexEntry entry)>& visit) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (const auto& [key, row] : state_->rows) {
      if (row.expires_at == 0 || row.expires_at > now) {
        visit({key, row.expires_at, row.value.size(), row.type});
      }
    }
    return Ok();
  }

  Result<std::vector<std::string>> ExpiredBetween(UnixMillis after, UnixMillis upto,
                                                  int limit) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->announcer == nullptr) state_->announcer = this;
    std::vector<std::string> keys;
    if (state_->announcer != this) return keys;
    for (const auto& [key, row] : state_->rows) {
      bool passed = row.expires_at > after && row.expires_at <= upto;
      if (passed && keys.size() < static_cast<size_t>(limit)) keys.push_back(key);
    }
    return keys;
  }

  Result<std::vector<ExpiredFields>> FieldsExpiredBetween(UnixMillis after, UnixMillis upto,
                                                          int limit) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->fields_announcer == nullptr) state_->fields_announcer = this;
    std::vector<ExpiredFields> hashes;
    if (state_->fields_announcer != this) return hashes;
    for (const auto& entry : state_->rows) {
      const DurableValue& row = entry.second;
      auto passed = [&](const DurableField& f) {
        bool hash_lived = row.expires_at == 0 || row.expires_at > f.expires_at;
        return f.expires_at > after && f.expires_at <= upto && hash_lived;
      };
      auto outlives = [&](const DurableField& f) {
        return f.expires_at == 0 || f.expires_at > upto;
      };
      if (!std::any_of(row.fields.begin(), row.fields.end(), passed)) continue;
      if (hashes.size() >= static_cast<size_t>(limit)) break;
      hashes.push_back({entry.first, std::none_of(row.fields.begin(), row.fields.end(), outlives)});
    }
    return hashes;
  }

  void StopAnnouncing(Announcing what) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    const void*& holder =
        what == Announcing::kExpiredFields ? state_->fields_announcer : state_->announcer;
    if (holder == this) holder = nullptr;
  }

  Result<int64_t> SweepExpired(UnixMillis now, int limit) override {
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->sweeps;
    int64_t deleted = 0;
    for (auto it = state_->rows.begin(); it != state_->rows.end() && deleted < limit;) {
      if (it->second.expires_at != 0 && it->second.expires_at <= now) {
        it = state_->rows.erase(it);
        ++deleted;
      } else {
        ++it;
      }
    }
    return deleted;
  }

 private:
  // Like PostgreSQL's ON CONFLICT: a row may be written only once in one statement.
  static Status CheckDistinct(const std::vector<DurableWrite>& writes, bool fields) {
    std::set<std::string> seen;
    for (const auto& w : writes) {
      if (!seen.insert(fields ? w.key + '\0' + w.field : w.key).second) {
        return Error::Unavailable(
            "fake: ON CONFLICT DO UPDATE command cannot affect row a second time");
      }
    }
    return Ok();
  }

  // Commits the rows (state_->mu held).
  void ApplyLocked(const std::vector<DurableWrite>& writes) {
    for (const auto& w : writes) {
      state_->log.push_back(w);
      switch (w.kind) {
        case DurableWrite::Kind::kUpsert:
          state_->rows[w.key] = {w.value, w.expires_at, ValueType::kString, w.version, {}};
          break;
        case DurableWrite::Kind::kCollection: {
          DurableValue& row = state_->rows[w.key];
          row.value.clear();
          row.expires_at = w.expires_at;
          row.type = w.type;
          row.version = w.version;
          break;
        }
        case DurableWrite::Kind::kDelete:
          state_->rows.erase(w.key);
          break;
        case DurableWrite::Kind::kTouch: {
          auto it = state_->rows.find(w.key);
          if (it != state_->rows.end()) {
            it->second.expires_at = w.expires_at;
            it->second.version = w.version;
          }
          break;
        }
        default:
          break;
      }
    }
  }

  // Commits the field writes; a field of a key with no row is refused, as the foreign key does.
  void ApplyFieldsLocked(const std::vector<DurableWrite>& writes) {
    for (const auto& w : writes) {
      state_->log.push_back(w);
      auto row = state_->rows.find(w.key);
      if (row == state_->rows.end()) continue;
      auto& fields = row->second.fields;
      auto it = std::find_if(fields.begin(), fields.end(),
                             [&](const DurableField& f) { return f.name == w.field; });
      if (w.kind == DurableWrite::Kind::kFieldDelete) {
        if (it != fields.end()) fields.erase(it);
      } else if (it != fields.end()) {
        it->value = w.value.str();
        it->expires_at = w.expires_at;
      } else {
        fields.push_back({w.field, w.value.str(), w.expires_at});
      }
    }
  }

  void WaitWhileHeld(std::unique_lock<std::mutex>& lock) {
    if (!state_->hold_commits) return;
    ++state_->held;
    state_->cv.notify_all();
    state_->cv.wait(lock, [&] { return !state_->hold_commits; });
    --state_->held;
  }

  std::shared_ptr<FakeDurableState> state_;
};

}  // namespace skydb::testing
