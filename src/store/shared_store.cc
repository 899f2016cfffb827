#include "store/shared_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <type_traits>
#include <variant>

namespace skydb::store {

Status SharedStore::Start() {
  SKYDB_RETURN_IF_ERROR(RefreshCount());
  spdlog::info("store: shared coherence on {}: {} live sessions", core_->durable()->Describe(),
               sessions_.load());
  core_->SetDurableSweepHook([this] {
    Status counted = RefreshCount();
    if (!counted.ok()) spdlog::warn("store: {}", counted.error().message);
  });
  return core_->Start(/*load_index=*/false);
}

Status SharedStore::RefreshCount() {
  auto count = core_->durable()->CountLive(core_->tier().WallMs());
  if (!count.ok()) return std::move(count).error().Within("count sessions");
  sessions_ = count->sessions;
  expiring_ = count->expiring;
  return Ok();
}

template <typename T, typename Then>
void SharedStore::WithRows(std::vector<std::string> keys, StoreCallback<T> done, Then then) {
  core_->tier().counters().misses += keys.size();
  std::vector<std::string> asked = keys;
  uint64_t asked_at = core_->tier().BeginRowReads(keys);
  core_->loader()->Read(std::move(keys),
                        [this, asked = std::move(asked), asked_at, done = std::move(done),
                         then = std::move(then)](Result<std::vector<Row>> rows) mutable {
                          if (!rows.ok()) {
                            core_->tier().EndRowReads(asked);
                            return done(std::move(rows).error());
                          }
                          // A WATCHed transaction wrote one of these keys and its guard may still
                          // refuse it: read them again once it is decided.
                          if (auto hold = core_->HoldOn(asked)) {
                            core_->tier().EndRowReads(asked);
                            return hold->Park([this, asked, done, then](Status lifted) mutable {
                              if (!lifted.ok()) return done(std::move(lifted).error());
                              WithRows(std::move(asked), std::move(done), std::move(then));
                            });
                          }
                          RowSet set;
                          set.asked_at = asked_at;
                          set.rows.reserve(asked.size());
                          for (size_t i = 0; i < asked.size(); ++i)
                            set.rows.emplace_back(asked[i], std::move((*rows)[i]));
                          set.reread = [this, &set, &asked]() -> Status {
                            set.asked_at = core_->tier().CommitStamp();
                            auto again = core_->loader()->ReadAgain(asked);
                            if (!again.ok()) return std::move(again).error();
                            for (size_t i = 0; i < asked.size(); ++i)
                              set.rows[i].second = std::move((*again)[i]);
                            return Ok();
                          };
                          then(std::move(done), &set);
                          core_->tier().EndRowReads(asked);
                        });
}

void SharedStore::Read(ReadKind kind, std::string key, std::optional<Expiry> change,
                       StoreCallback<std::optional<std::string>> done) {
  std::vector<std::string> keys{key};
  WithRows(std::move(keys), std::move(done),
           [this, kind, key = std::move(key), change](auto reply, const RowSet* rows) mutable {
             core_->ReadWith(kind, std::move(key), change, std::move(reply), rows);
           });
}

void SharedStore::Get(std::string key, StoreCallback<std::optional<std::string>> done) {
  Read(ReadKind::kGet, std::move(key), std::nullopt, std::move(done));
}

void SharedStore::GetEx(std::string key, std::optional<Expiry> change,
                        StoreCallback<std::optional<std::string>> done) {
  Read(change ? ReadKind::kGetEx : ReadKind::kGet, std::move(key), change, std::move(done));
}

void SharedStore::GetDel(std::string key, StoreCallback<std::optional<std::string>> done) {
  Read(ReadKind::kGetDel, std::move(key), std::nullopt, std::move(done));
}

void SharedStore::Set(SetRequest request, StoreCallback<SetReply> done) {
  bool plain = request.condition == SetCondition::kAlways && !request.return_old &&
               request.expiry.kind != Expiry::Kind::kKeep;
  if (plain) return core_->Set(std::move(request), std::move(done));
  std::vector<std::string> keys{request.key};
  WithRows(std::move(keys), std::move(done),
           [this, request = std::move(request)](auto reply, const RowSet* rows) mutable {
             core_->SetWith(std::move(request), std::move(reply), rows);
           });
}

void SharedStore::Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  if (keys.empty()) return done(int64_t{0});
  std::vector<std::string> asked = keys;
  WithRows(std::move(asked), std::move(done),
           [this, keys = std::move(keys)](auto reply, const RowSet* rows) mutable {
             core_->DeleteWith(std::move(keys), std::move(reply), rows);
           });
}

void SharedStore::Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) {
  if (keys.empty()) return done(int64_t{0});
  std::vector<std::string> asked = keys;
  WithRows(std::move(asked), std::move(done),
           [this, keys = std::move(keys)](auto reply, const RowSet* rows) mutable {
             core_->ExistsWith(std::move(keys), std::move(reply), rows);
           });
}

void SharedStore::Expire(std::string key, Expiry expiry, ExpireCondition condition,
                         StoreCallback<bool> done) {
  std::vector<std::string> keys{key};
  WithRows(std::move(keys), std::move(done),
           [this, key = std::move(key), expiry, condition](auto reply, const RowSet* rows) mutable {
             core_->ExpireWith(std::move(key), expiry, condition, std::move(reply), rows);
           });
}

void SharedStore::Increment(IncrRequest request, StoreCallback<IncrReply> done) {
  std::vector<std::string> keys{request.key};
  WithRows(std::move(keys), std::move(done),
           [this, request = std::move(request)](auto reply, const RowSet* rows) mutable {
             core_->IncrementWith(std::move(request), std::move(reply), rows);
           });
}

void SharedStore::Ttl(std::string key, StoreCallback<TtlReply> done) {
  std::vector<std::string> keys{key};
  WithRows(std::move(keys), std::move(done),
           [this, key = std::move(key)](auto reply, const RowSet* rows) mutable {
             core_->TtlWith(std::move(key), std::move(reply), rows);
           });
}

void SharedStore::Watch(std::vector<std::string> keys, std::shared_ptr<WatchList> into,
                        StoreCallback<bool> done) {
  into->AddNames(keys);
  std::vector<std::string> asked = keys;
  WithRows(std::move(asked), std::move(done),
           [this, keys = std::move(keys), into = std::move(into)](auto reply,
                                                                  const RowSet* rows) mutable {
             core_->WatchWith(std::move(keys), std::move(into), std::move(reply), rows);
           });
}

void SharedStore::Transact(std::vector<TxOp> ops, std::shared_ptr<WatchList> watched,
                           StoreCallback<bool> done) {
  std::vector<std::string> keys;
  for (const auto& op : ops) {
    std::visit(
        [&keys](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, tx::Set> || std::is_same_v<T, tx::Increment>) {
            keys.push_back(o.request.key);
          } else if constexpr (std::is_same_v<T, tx::Delete> || std::is_same_v<T, tx::Exists>) {
            keys.insert(keys.end(), o.keys.begin(), o.keys.end());
          } else {
            keys.push_back(o.key);
          }
        },
        op);
  }
  if (watched) {
    // Names, not keys(): the rows of a WATCH just before may still be being read (the one
    // reader answers in order, so they are there by the time this transaction runs).
    for (auto& name : watched->names()) keys.push_back(std::move(name));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  if (keys.empty())
    return core_->TransactWith(std::move(ops), std::move(watched), std::move(done), nullptr);
  WithRows(std::move(keys), std::move(done),
           [this, ops = std::move(ops), watched = std::move(watched)](auto reply,
                                                                      const RowSet* rows) mutable {
             core_->TransactWith(std::move(ops), std::move(watched), std::move(reply), rows);
           });
}

void SharedStore::Scan(uint64_t cursor, std::string pattern, size_t count,
                       StoreCallback<ScanReply> done) {
  count = std::max<size_t>(count, 1);
  // The table is paged by a 60-bit hash: a cursor past it (SCAN -1 wraps there, as in Redis)
  // has nothing left to return.
  if (cursor >= (uint64_t{1} << 60)) return done(ScanReply{});
  core_->loader()->Run([this, cursor, pattern = std::move(pattern), count, done](int reader) {
    if (reader < 0) return done(Error::Unavailable("the store is shutting down"));
    auto page = core_->durable()->ScanKeys(reader, cursor, count, core_->tier().WallMs());
    if (!page.ok()) return done(std::move(page).error().Within("SCAN"));
    ScanReply reply;
    reply.next_cursor = page->next_cursor;
    for (auto& key : page->keys) {
      Shard& shard = core_->tier().ShardFor(KeyHash(key));
      {
        // Deleted here, not committed yet: already gone for this daemon's clients.
        MutexLock lock(shard.mu);
        if (core_->tier().HasPendingDelete(shard, key)) continue;
      }
      if (pattern.empty() || GlobMatch(pattern, key)) reply.keys.push_back(std::move(key));
    }
    done(std::move(reply));
  });
}

// PostgreSQL's rows are the truth here; the count is refreshed with the next durable sweep.
void SharedStore::DeleteAll(StoreCallback<int64_t> done) {
  core_->DeleteAll([this, done = std::move(done)](Result<int64_t> r) {
    if (!r.ok()) return done(std::move(r).error());
    int64_t before = sessions_.exchange(0);
    expiring_ = 0;
    done(before);
  });
}

StoreStats SharedStore::Stats() const {
  StoreStats s = core_->Stats();
  s.sessions = sessions_.load();
  s.expiring = expiring_.load();
  return s;
}

}  // namespace skydb::store
