// The carrier of pub/sub between daemons that share one PostgreSQL database (shared
// coherence), so that several daemons behave as one Redis server for pub/sub.
//
// The RESP server delivers a PUBLISH to its own subscribers itself and hands the message to
// the carrier, which brings it to the *other* daemons that have subscribers for it; there the
// carrier calls PubSubLocal::DeliverRemote. The carrier also records this daemon's
// subscription set in the database (Announce), so that PUBLISH counts and PUBSUB NUMSUB /
// CHANNELS / NUMPAT answer for every daemon (Remote). A daemon with no peers (a private
// cluster, exclusive coherence, a memory store) has no carrier: delivery is in-process.
//
// Promise (docs/protocol.md, "Pub/sub"): any message a client may send (up to
// store.max_value_bytes), whole and byte for byte, at most once; one publisher's messages on
// one channel in publish order on every daemon. A message published while the carrier cannot
// reach the database reaches this daemon's subscribers only.
//
// Thread-safety: every method may be called from any thread. Nothing waits for the network
// or for a subscriber: requests are queued (bounded) and answered through their callback,
// exactly once, on a carrier thread, or before the call returns where a method says so. A
// callback must not block.
// Ownership: whoever builds the RESP server owns the carrier and keeps it alive until the
// server has shut down (RespServerOptions::pubsub_carrier borrows it); the server attaches
// its PubSubLocal and detaches it when it shuts down.
// Failure: a request that cannot be served (the database is unreachable, the queue is full,
// PostgreSQL did not answer within the carrier's wait bound) is answered with the fallback
// each method names, never by blocking.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/result.h"

namespace skydb {

// One channel (or pattern) and how many subscribers it has.
struct SubscriptionCount {
  bool pattern = false;  // a PSUBSCRIBE pattern, else a SUBSCRIBE channel
  std::string name;
  uint64_t subscribers = 0;
  bool operator==(const SubscriptionCount&) const = default;
};

// What the RESP server gives the carrier.
class PubSubLocal {
 public:
  virtual ~PubSubLocal() = default;
  // A message published on another daemon, for this daemon's subscribers. Never blocks.
  virtual void DeliverRemote(std::string_view channel, std::string_view message) = 0;
  // This daemon's whole subscription set now, re-announced after the carrier reconnects.
  virtual std::vector<SubscriptionCount> Subscriptions() const = 0;
};

class PubSubCarrier {
 public:
  // `remote`: the subscribers on other daemons the message was committed to PostgreSQL for;
  // 0 when it was not carried.
  using Published = std::function<void(uint64_t remote)>;
  using Recorded = std::function<void()>;
  using Answer = std::function<void(Result<std::vector<SubscriptionCount>>)>;

  virtual ~PubSubCarrier() = default;

  // Installs (or, with nullptr, removes) the local side. After Attach(nullptr) returns, the
  // previous one is not running and will not be called again.
  virtual void Attach(PubSubLocal* local) = 0;

  // Carries one message to the other daemons' subscribers. `done` runs once the message is in
  // PostgreSQL's notification queue (or could not be: remote 0); possibly before Publish
  // returns when it cannot be carried at all.
  virtual void Publish(std::string_view channel, std::string_view message, Published done) = 0;

  // This daemon now has `now.subscribers` subscribers to `now.name` (0: none). Recorded in
  // the database; `recorded` runs once it is committed, or once it cannot be (the carrier is
  // down: the whole set is announced again when it is back). Never runs before Announce
  // returns, so the caller may hold its own lock: calls for one name must come in the order
  // its counts changed.
  virtual void Announce(SubscriptionCount now, Recorded recorded) = 0;

  // The other live daemons' subscriptions, summed by name: channels (only `names`, if given)
  // or patterns. An error when the database cannot be asked; possibly before Remote returns.
  virtual void Remote(bool patterns, std::optional<std::vector<std::string>> names,
                      Answer done) = 0;
};

}  // namespace skydb
