// The carrier of pub/sub messages between daemons that share one PostgreSQL database.
//
// The RESP server delivers a PUBLISH to its own subscribers itself and hands the message to
// the carrier, which brings it to every *other* daemon on the carrier; there the carrier calls
// the receiver the RESP server installed, which delivers to that daemon's subscribers. A
// carrier therefore never hands a daemon back its own messages (no double delivery).
// Delivery between daemons is at most once: a message published while the carrier is cut off
// from the database is lost (docs/protocol.md).
//
// Thread-safety: every method may be called from any thread. Publish never waits for the
// network or for a subscriber: it queues (bounded) and returns. The receiver is called on the
// carrier's own thread, one message at a time, and must not block.
// Ownership: whoever builds the RESP server owns the carrier and keeps it alive until the
// server has shut down (RespServerOptions::pubsub_carrier borrows it).
// Failure: Publish reports a message the carrier can never carry (too large) as an error and a
// full queue or an outage as `false` from Publish's result, never by blocking.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "skydb/result.h"

namespace skydb {

class PubSubCarrier {
 public:
  // Receives (channel, message) published on another daemon.
  using Receiver = std::function<void(std::string channel, std::string message)>;

  virtual ~PubSubCarrier() = default;

  // The most bytes of channel plus message one Publish can carry; larger ones are refused.
  virtual size_t max_message_bytes() const = 0;

  // Queues the message for the other daemons. InvalidArgument when channel plus message exceed
  // max_message_bytes(); true when queued, false when it was dropped (the queue is full or the
  // database is unreachable; logged once per episode).
  virtual Result<bool> Publish(std::string_view channel, std::string_view message) = 0;

  // Installs (or, with nullptr, removes) the receiver. After SetReceiver(nullptr) returns, the
  // previous receiver is not running and will not be called again.
  virtual void SetReceiver(Receiver receiver) = 0;
};

}  // namespace skydb
