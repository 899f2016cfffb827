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

bool PubSubHub::Subscribe(PubSubState& client, const std::string& channel) {
  if (!client.channels.insert(channel).second) return false;
  MutexLock lock(mu_);
  channels_[channel].emplace(client.subscriber.get(), client.subscriber);
  return true;
}

bool PubSubHub::Unsubscribe(PubSubState& client, const std::string& channel) {
  std::string name = channel;  // `channel` may be the element erased next (RemoveAll)
  if (client.channels.erase(name) == 0) return false;
  MutexLock lock(mu_);
  auto it = channels_.find(name);
  if (it != channels_.end()) {
    it->second.erase(client.subscriber.get());
    if (it->second.empty()) channels_.erase(it);
  }
  return true;
}

bool PubSubHub::PSubscribe(PubSubState& client, const std::string& pattern) {
  if (!client.patterns.insert(pattern).second) return false;
  MutexLock lock(mu_);
  patterns_[pattern].emplace(client.subscriber.get(), client.subscriber);
  return true;
}

bool PubSubHub::PUnsubscribe(PubSubState& client, const std::string& pattern) {
  std::string name = pattern;  // `pattern` may be the element erased next (RemoveAll)
  if (client.patterns.erase(name) == 0) return false;
  MutexLock lock(mu_);
  auto it = patterns_.find(name);
  if (it != patterns_.end()) {
    it->second.erase(client.subscriber.get());
    if (it->second.empty()) patterns_.erase(it);
  }
  return true;
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

Result<size_t> PubSubHub::Publish(std::string_view channel, std::string_view message) {
  if (carrier_ != nullptr) {
    size_t bytes = channel.size() + message.size();
    if (bytes > carrier_->max_message_bytes()) {
      return Error::InvalidArgument(PublishTooLarge(bytes, carrier_->max_message_bytes()));
    }
    (void)carrier_->Publish(channel, message);  // a drop is logged by the carrier
  }
  return Deliver(channel, message);
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

std::string PublishTooLarge(size_t bytes, size_t limit) {
  return "ERR message too large to reach the other daemons: channel and message are " +
         std::to_string(bytes) + " bytes, at most " + std::to_string(limit) +
         " can cross PostgreSQL NOTIFY; nothing was delivered";
}

}  // namespace skydb::resp
