// The pub/sub hub: which connections listen to which channels and patterns, shared by every
// loop thread of one RESP server, and the frames Redis 7 sends subscribers.
//
// A PUBLISH delivers to this server's subscribers through the hub (Deliver) and, when the
// server has a PubSubCarrier (include/skydb/pubsub.h: daemons sharing one database), hands the
// message to the other daemons too; what the carrier brings from them is delivered here
// (DeliverRemote). With a carrier the hub also announces every change of its subscription
// counts, and PUBLISH's count and PUBSUB's answers include the other daemons'.
//
// Thread-safety: every PubSubHub method may be called from any thread; one mutex guards the
// maps. Subscriber::Deliver is called with that mutex held, so it must only queue (it never
// blocks, never calls back into the hub): a publisher never waits for a subscriber. Callbacks
// (`done`, Barrier's continuation) run on any thread, never with the hub's mutex held.
// Ownership: the hub holds a shared_ptr to each subscriber while it has a subscription; a
// connection removes itself (RemoveAll) when it closes. The carrier is borrowed.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
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

// Waits for the recordings of one command's subscription changes: Hold() before each, Then()
// once all are asked for; the continuation runs when the last is recorded (at once if none).
class Barrier : public std::enable_shared_from_this<Barrier> {
 public:
  PubSubCarrier::Recorded Hold();
  void Then(std::function<void()> continuation);

 private:
  void Release();
  std::atomic<int> held_{1};  // Then's own hold
  std::function<void()> continuation_;
};

class PubSubHub final : public PubSubLocal {
 public:
  // Set once, before any client connects; nullptr: this daemon has no peers. Attaches the hub
  // to the carrier (the server detaches it when it shuts down).
  void SetCarrier(PubSubCarrier* carrier);
  PubSubCarrier* carrier() const { return carrier_; }

  // Adds or removes one subscription of `client`, which must have a subscriber; false when it
  // was already (or not) there, as Redis counts it. With a carrier the new count is announced
  // and `recorded` (if given) waits until the database has it.
  bool Subscribe(PubSubState& client, const std::string& channel, Barrier* recorded = nullptr)
      EXCLUDES(mu_);
  bool Unsubscribe(PubSubState& client, const std::string& channel, Barrier* recorded = nullptr)
      EXCLUDES(mu_);
  bool PSubscribe(PubSubState& client, const std::string& pattern, Barrier* recorded = nullptr)
      EXCLUDES(mu_);
  bool PUnsubscribe(PubSubState& client, const std::string& pattern, Barrier* recorded = nullptr)
      EXCLUDES(mu_);
  void RemoveAll(PubSubState& client) EXCLUDES(mu_);  // the connection is closing

  // Delivers to this server's subscribers; the number of receivers (a client subscribed to the
  // channel and to a matching pattern counts, and receives, twice, as in Redis).
  size_t Deliver(std::string_view channel, std::string_view message) EXCLUDES(mu_);
  // Deliver, and with a carrier to the other daemons' subscribers: `done(receivers)` with this
  // daemon's receivers plus those the message was committed for on the others (possibly
  // before Publish returns).
  void Publish(std::string_view channel, std::string_view message,
               std::function<void(size_t receivers)> done) EXCLUDES(mu_);

  // This daemon's PUBSUB CHANNELS [pattern], NUMSUB, NUMPAT (distinct patterns, as Redis 7).
  std::vector<std::string> Channels(std::optional<std::string_view> pattern) const EXCLUDES(mu_);
  size_t NumSub(const std::string& channel) const EXCLUDES(mu_);
  size_t NumPat() const EXCLUDES(mu_);
  // The same over every live daemon on the database (this one's alone without a carrier, or
  // when the database cannot be asked).
  void ChannelsAll(std::optional<std::string> pattern,
                   std::function<void(std::vector<std::string>)> done) const EXCLUDES(mu_);
  void NumSubAll(std::vector<std::string> channels,
                 std::function<void(std::vector<size_t>)> done) const EXCLUDES(mu_);
  void NumPatAll(std::function<void(size_t)> done) const EXCLUDES(mu_);

  // PubSubLocal, for the carrier.
  void DeliverRemote(std::string_view channel, std::string_view message) override {
    Deliver(channel, message);
  }
  std::vector<SubscriptionCount> Subscriptions() const override EXCLUDES(mu_);

 private:
  using Subscribers = std::unordered_map<Subscriber*, std::shared_ptr<Subscriber>>;
  template <typename Map>
  bool Change(Map& map, bool pattern, std::set<std::string>& names, const std::string& name,
              const std::shared_ptr<Subscriber>& subscriber, bool add, Barrier* recorded)
      REQUIRES(mu_);

  PubSubCarrier* carrier_ = nullptr;
  mutable Mutex mu_;
  std::unordered_map<std::string, Subscribers> channels_ GUARDED_BY(mu_);
  std::map<std::string, Subscribers, std::less<>> patterns_ GUARDED_BY(mu_);
};

}  // namespace skydb::resp
