// PubSubHub: channel and pattern maps under one mutex; delivery only queues.
#include "resp/pubsub.h"

#include "skydb/store.h"

namespace skydb::resp {

std::string MessageFrame(Proto proto, std::string_view pattern, std::string_view channel,
                         std::string_view message) {
  std::string out;
  out.reserve(message.size() + channel.size() + pattern.size() + 48);
  AppendPushHeader(out, pattern.empty() ? 3 : 4, proto);
  if (pattern.empty()) {
    AppendBulk(out, "message");
  } else {
    AppendBulk(out, "pmessage");
    AppendBulk(out, pattern);
  }
  AppendBulk(out, channel);
  AppendBulk(out, message);
  return out;
}

std::string SubscriptionFrame(Proto proto, std::string_view kind, const std::string* name,
                              size_t count) {
  std::string out;
  AppendPushHeader(out, 3, proto);
  AppendBulk(out, kind);
  if (name != nullptr) {
    AppendBulk(out, *name);
  } else {
    AppendNull(out, proto);
  }
  AppendInteger(out, static_cast<int64_t>(count));
  return out;
}

PubSubCarrier::Recorded Barrier::Hold() {
  held_.fetch_add(1, std::memory_order_relaxed);
  return [self = shared_from_this()] { self->Release(); };
}

void Barrier::Then(std::function<void()> continuation) {
  continuation_ = std::move(continuation);
  Release();
}

void Barrier::Release() {
  if (held_.fetch_sub(1, std::memory_order_acq_rel) == 1) continuation_();
}

void PubSubHub::SetCarrier(PubSubCarrier* carrier) {
  carrier_ = carrier;
  if (carrier_ != nullptr) carrier_->Attach(this);
}

template <typename Map>
bool PubSubHub::Change(Map& map, bool pattern, std::set<std::string>& names,
                       const std::string& name, const std::shared_ptr<Subscriber>& subscriber,
                       bool add, Barrier* recorded) {
  std::string key = name;  // `name` may be the element erased next (RemoveAll)
  if (add ? !names.insert(key).second : names.erase(key) == 0) return false;
  size_t left = 0;
  if (add) {
    auto& subscribers = map[key];
    subscribers.emplace(subscriber.get(), subscriber);
    left = subscribers.size();
  } else if (auto it = map.find(key); it != map.end()) {
    it->second.erase(subscriber.get());
    left = it->second.size();
    if (left == 0) map.erase(it);
  }
  // Under the lock, so the carrier sees one name's counts in the order they changed.
  if (carrier_ != nullptr) {
    carrier_->Announce({pattern, std::move(key), left},
                       recorded != nullptr ? recorded->Hold() : PubSubCarrier::Recorded());
  }
  return true;
}

bool PubSubHub::Subscribe(PubSubState& client, const std::string& channel, Barrier* recorded) {
  MutexLock lock(mu_);
  return Change(channels_, false, client.channels, channel, client.subscriber, true, recorded);
}

bool PubSubHub::Unsubscribe(PubSubState& client, const std::string& channel, Barrier* recorded) {
  MutexLock lock(mu_);
  return Change(channels_, false, client.channels, channel, client.subscriber, false, recorded);
}

bool PubSubHub::PSubscribe(PubSubState& client, const std::string& pattern, Barrier* recorded) {
  MutexLock lock(mu_);
  return Change(patterns_, true, client.patterns, pattern, client.subscriber, true, recorded);
}

bool PubSubHub::PUnsubscribe(PubSubState& client, const std::string& pattern, Barrier* recorded) {
  MutexLock lock(mu_);
  return Change(patterns_, true, client.patterns, pattern, client.subscriber, false, recorded);
}

void PubSubHub::RemoveAll(PubSubState& client) {
  while (!client.channels.empty()) Unsubscribe(client, *client.channels.begin());
  while (!client.patterns.empty()) PUnsubscribe(client, *client.patterns.begin());
}

size_t PubSubHub::Deliver(std::string_view channel, std::string_view message) {
  size_t receivers = 0;
  MutexLock lock(mu_);
  auto it = channels_.find(std::string(channel));
  if (it != channels_.end()) {
    auto frame =
        std::make_shared<const std::string>(MessageFrame(Proto::kResp2, {}, channel, message));
    for (auto& [raw, subscriber] : it->second) subscriber->Deliver(frame);
    receivers += it->second.size();
  }
  for (auto& [pattern, subscribers] : patterns_) {
    if (!GlobMatch(pattern, channel)) continue;
    auto frame =
        std::make_shared<const std::string>(MessageFrame(Proto::kResp2, pattern, channel, message));
    for (auto& [raw, subscriber] : subscribers) subscriber->Deliver(frame);
    receivers += subscribers.size();
  }
  return receivers;
}

void PubSubHub::Publish(std::string_view channel, std::string_view message,
                        std::function<void(size_t receivers)> done) {
  size_t local = Deliver(channel, message);
  if (carrier_ == nullptr) return done(local);
  carrier_->Publish(channel, message, [local, done = std::move(done)](uint64_t remote) {
    done(local + static_cast<size_t>(remote));
  });
}

std::vector<std::string> PubSubHub::Channels(std::optional<std::string_view> pattern) const {
  std::vector<std::string> out;
  MutexLock lock(mu_);
  for (const auto& [channel, subscribers] : channels_) {
    if (!pattern || GlobMatch(*pattern, channel)) out.push_back(channel);
  }
  return out;
}

size_t PubSubHub::NumSub(const std::string& channel) const {
  MutexLock lock(mu_);
  auto it = channels_.find(channel);
  return it == channels_.end() ? 0 : it->second.size();
}

size_t PubSubHub::NumPat() const {
  MutexLock lock(mu_);
  return patterns_.size();
}

std::vector<SubscriptionCount> PubSubHub::Subscriptions() const {
  std::vector<SubscriptionCount> out;
  MutexLock lock(mu_);
  out.reserve(channels_.size() + patterns_.size());
  for (const auto& [name, subscribers] : channels_)
    out.push_back({false, name, subscribers.size()});
  for (const auto& [name, subscribers] : patterns_) out.push_back({true, name, subscribers.size()});
  return out;
}

// Each answer is this daemon's, taken now, plus the other daemons' when the carrier brings
// them; an unanswered question (the database is unreachable) leaves this daemon's alone.
void PubSubHub::ChannelsAll(std::optional<std::string> pattern,
                            std::function<void(std::vector<std::string>)> done) const {
  std::vector<std::string> local = Channels(pattern);
  if (carrier_ == nullptr) return done(std::move(local));
  carrier_->Remote(false, std::nullopt,
                   [local = std::move(local), pattern = std::move(pattern),
                    done = std::move(done)](Result<std::vector<SubscriptionCount>> remote) {
                     std::set<std::string> all(local.begin(), local.end());
                     if (remote.ok()) {
                       for (auto& c : *remote) {
                         if (!pattern || GlobMatch(*pattern, c.name)) all.insert(std::move(c.name));
                       }
                     }
                     done({all.begin(), all.end()});
                   });
}

void PubSubHub::NumSubAll(std::vector<std::string> channels,
                          std::function<void(std::vector<size_t>)> done) const {
  std::vector<size_t> counts;
  counts.reserve(channels.size());
  for (const auto& c : channels) counts.push_back(NumSub(c));
  if (carrier_ == nullptr || channels.empty()) return done(std::move(counts));
  std::vector<std::string> names = channels;
  carrier_->Remote(false, std::move(names),
                   [counts = std::move(counts), channels = std::move(channels),
                    done = std::move(done)](Result<std::vector<SubscriptionCount>> remote) mutable {
                     if (remote.ok()) {
                       std::map<std::string_view, uint64_t> by_name;
                       for (const auto& c : *remote) by_name[c.name] += c.subscribers;
                       for (size_t i = 0; i < channels.size(); ++i) {
                         auto it = by_name.find(channels[i]);
                         if (it != by_name.end()) counts[i] += static_cast<size_t>(it->second);
                       }
                     }
                     done(std::move(counts));
                   });
}

void PubSubHub::NumPatAll(std::function<void(size_t)> done) const {
  std::set<std::string> patterns;
  {
    MutexLock lock(mu_);
    for (const auto& [pattern, subscribers] : patterns_) patterns.insert(pattern);
  }
  if (carrier_ == nullptr) return done(patterns.size());
  carrier_->Remote(true, std::nullopt,
                   [patterns = std::move(patterns),
                    done = std::move(done)](Result<std::vector<SubscriptionCount>> remote) mutable {
                     if (remote.ok()) {
                       for (auto& p : *remote) patterns.insert(std::move(p.name));
                     }
                     done(patterns.size());
                   });
}

}  // namespace skydb::resp
