// The carrier's listener: LISTEN, read the records addressed to this daemon, take the large
// messages out of their table, deliver everything in notification order.
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include "pgconn/pubsub_threads.h"

namespace skydb::pg::pubsub {
namespace {

// The large messages one Take may bring back at once (at least one, whatever its size).
constexpr uint64_t kFetchBytes = 16 << 20;

}  // namespace

Listener::Listener(Shared& shared)
    : s_(shared), backoff_(shared.options.min_backoff, shared.options.max_backoff) {}

void Listener::Run() {
  while (!s_.stopping.load()) {
    if (!conn_ && !Connect()) {
      s_.listener_wake.Wait(backoff_.Next());
      continue;
    }
    s_.listener_wake.Wait(std::chrono::milliseconds(1000), PQsocket(conn_->native()));
    if (s_.stopping.load()) break;
    if (Receive()) continue;
    if (outage_.Report()) {
      spdlog::warn(
          "pubsub: lost the PostgreSQL connection that brings messages from other daemons; "
          "reconnecting (their messages meanwhile do not reach this daemon)");
    }
    conn_.reset();
    s_.listening.store(false);
    s_.sender_wake.Wake();  // deregister: the others stop counting this daemon
  }
  s_.listening.store(false);
}

bool Listener::Connect() {
  auto opened = OpenCarrierConnection(s_, "skydb pubsub", "pubsub listener");
  Status listening = opened.ok()
                         ? opened.value().Run(std::string("LISTEN \"") + kNotifyChannel + "\"")
                         : Status(opened.error());
  if (!listening.ok()) {
    if (outage_.Report()) {
      spdlog::warn("pubsub: cannot LISTEN for messages from other daemons: {}; retrying",
                   listening.error().message);
    }
    return false;
  }
  conn_ = std::move(opened).value();
  backoff_.Reset();
  s_.listening.store(true);
  s_.sender_wake.Wake();  // register: the others count this daemon from now on
  if (outage_.Recover()) spdlog::info("pubsub: receiving messages from other daemons again");
  return true;
}

bool Listener::Receive() {
  pg_conn* raw = conn_->native();
  if (PQconsumeInput(raw) == 0 || !conn_->Healthy()) return false;
  std::vector<Item> items;
  while (PGnotify* notify = PQnotifies(raw)) {
    auto decoded = DecodePayload(notify->extra, s_.me);
    PQfreemem(notify);
    if (!decoded) {
      spdlog::debug("pubsub: ignored a notification on \"{}\" that is not skydb's", kNotifyChannel);
      continue;
    }
    if (decoded->publisher == s_.me) continue;  // delivered here when it was published
    for (auto& record : decoded->records) items.push_back({decoded->publisher, std::move(record)});
  }
  return items.empty() || Deliver(items);
}

bool Listener::Deliver(std::vector<Item>& items) {
  std::map<Key, Taken> fetched;
  size_t fetched_until = 0;  // items before it were asked for already
  for (size_t i = 0; i < items.size(); ++i) {
    Record& record = items[i].record;
    if (!record.in_table) {
      DeliverOne(record.channel, record.message);
      continue;
    }
    if (i >= fetched_until) {
      fetched.clear();
      if (!Fetch(items, i, &fetched_until, &fetched)) return false;
    }
    auto it = fetched.find({items[i].publisher, record.seq});
    if (it == fetched.end()) {
      if (missing_.Report()) {
        spdlog::warn(
            "pubsub: a large message from another daemon was reclaimed before this daemon "
            "read it (it fell behind by more than {} ms); it is lost here",
            s_.options.retention.count());
      }
      continue;
    }
    missing_.Recover();
    DeliverOne(it->second.channel, it->second.message);
    fetched.erase(it);
  }
  return true;
}

bool Listener::Fetch(const std::vector<Item>& items, size_t from, size_t* end,
                     std::map<Key, Taken>* fetched) {
  std::vector<Key> keys;
  uint64_t bytes = 0;
  size_t i = from;
  for (; i < items.size(); ++i) {
    const Record& record = items[i].record;
    if (!record.in_table) continue;
    if (!keys.empty() && bytes + record.bytes > kFetchBytes) break;
    keys.emplace_back(items[i].publisher, record.seq);
    bytes += record.bytes;
  }
  *end = i;
  auto taken = Take(*conn_, keys);
  if (!taken.ok()) {
    if (!conn_->Healthy()) return false;
    spdlog::error("pubsub: cannot read large messages from other daemons: {}",
                  taken.error().message);
    return true;  // they count as missing
  }
  for (auto& t : *taken) {
    Key key{t.publisher, t.seq};
    fetched->emplace(key, std::move(t));
  }
  return true;
}

void Listener::DeliverOne(std::string_view channel, std::string_view message) {
  MutexLock lock(s_.local_mu);
  if (s_.local != nullptr) s_.local->DeliverRemote(channel, message);
}

}  // namespace skydb::pg::pubsub
