// The pub/sub hub: which connections listen to which channels and patterns, shared by every
// loop thread of one RESP server, and the frames Redis 7 sends subscribers.
//
// A PUBLISH delivers to this server's subscribers through the hub (Deliver) and, when the
// server has a PubSubCarrier (include/skydb/pubsub.h), hands the message to the other daemons
// too; what the carrier brings from them is delivered here with Deliver.
//
// Thread-safety: every PubSubHub method may be called from any thread; one mutex guards the
// maps. Subscriber::Deliver is called with that mutex held, so it must only queue (it never
// blocks, never calls back into the hub): a publisher never waits for a subscriber.
// Ownership: the hub holds a shared_ptr to each subscriber while it has a subscription; a
// connection removes itself (RemoveAll) when it closes. The carrier is borrowed.
// Failure: Publish refuses a message the carrier cannot carry (too large), delivering it
// nowhere, so a message never reaches some daemons and not others.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "resp/encoder.h"
#include "skydb/mutex.h"
#include "skydb/pubsub.h"
#include "skydb/result.h"

namespace skydb::resp {

// A message's frame (MessageFrame, RESP2), built once per PUBLISH and shared by every
// subscriber it reaches.
using SharedFrame = std::shared_ptr<const std::string>;

// Where the hub delivers one subscriber's messages (a connection, in the server).
class Subscriber {
 public:
  virtual ~Subscriber() = default;
  // The frame of one message: a channel's, or a pattern's ("pmessage") when it matched.
  virtual void Deliver(const SharedFrame& frame) = 0;
};

// One client's subscriptions, kept with its protocol state (ClientState::pubsub).
struct PubSubState {
  std::shared_ptr<Subscriber> subscriber;  // null: this client cannot subscribe
  std::set<std::string> channels;
  std::set<std::string> patterns;
  size_t count() const { return channels.size() + patterns.size(); }
};

// "message ch payload" (*3, or >3 in RESP3) or, with a pattern, "pmessage pat ch payload".
std::string MessageFrame(Proto proto, std::string_view pattern, std::string_view channel,
                         std::string_view message);
// A (p)(un)subscribe confirmation: kind, the name (null when there is none) and the count of
// subscriptions left, pushed in RESP3 as Redis 7 does.
std::string SubscriptionFrame(Proto proto, std::string_view kind, const std::string* name,
                              size_t count);

class PubSubHub {
 public:
  // Set once, before any client connects; nullptr: delivery is local only.
  void SetCarrier(PubSubCarrier* carrier) { carrier_ = carrier; }
  PubSubCarrier* carrier() const { return carrier_; }

  // Adds or removes one subscription of `client`, which must have a subscriber; false when it
  // was already (or not) there, as Redis counts it.
  bool Subscribe(PubSubState& client, const std::string& channel) EXCLUDES(mu_);
  bool Unsubscribe(PubSubState& client, const std::string& channel) EXCLUDES(mu_);
  bool PSubscribe(PubSubState& client, const std::string& pattern) EXCLUDES(mu_);
  bool PUnsubscribe(PubSubState& client, const std::string& pattern) EXCLUDES(mu_);
  void RemoveAll(PubSubState& client) EXCLUDES(mu_);  // the connection is closing

  // Delivers to this server's subscribers; the number of receivers (a client subscribed to the
  // channel and to a matching pattern counts, and receives, twice, as in Redis).
  size_t Deliver(std::string_view channel, std::string_view message) EXCLUDES(mu_);
  // Deliver, and hands the message to the carrier if there is one. The count is this server's
  // receivers only. An error (nothing delivered) when the carrier can never carry it.
  Result<size_t> Publish(std::string_view channel, std::string_view message) EXCLUDES(mu_);

  // PUBSUB CHANNELS [pattern], NUMSUB, NUMPAT (distinct patterns, as Redis 7 counts them).
  std::vector<std::string> Channels(std::optional<std::string_view> pattern) const EXCLUDES(mu_);
  size_t NumSub(const std::string& channel) const EXCLUDES(mu_);
  size_t NumPat() const EXCLUDES(mu_);

 private:
  using Subscribers = std::unordered_map<Subscriber*, std::shared_ptr<Subscriber>>;

  PubSubCarrier* carrier_ = nullptr;
  mutable Mutex mu_;
  std::unordered_map<std::string, Subscribers> channels_ GUARDED_BY(mu_);
  std::map<std::string, Subscribers, std::less<>> patterns_ GUARDED_BY(mu_);
};

// The error PUBLISH replies when the carrier cannot carry a message of this size.
std::string PublishTooLarge(size_t bytes, size_t limit);

}  // namespace skydb::resp
