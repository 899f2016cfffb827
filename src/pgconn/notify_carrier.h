// Pub/sub between daemons through PostgreSQL LISTEN/NOTIFY: a PubSubCarrier
// (include/skydb/pubsub.h) over one dedicated connection that both LISTENs and NOTIFYs.
//
// Every daemon on the same database LISTENs on one channel, "skydb.pubsub" (a quoted
// identifier). A PUBLISH becomes `SELECT pg_notify('skydb.pubsub', payload)` on the carrier's
// own thread; the payload is the RESP channel's length, ':', and base64 of channel + message,
// so any bytes travel and the text stays under PostgreSQL's 8000-byte payload limit: channel
// plus message may be at most kMaxNotifyMessageBytes. A notification whose sender is this
// carrier's own backend (PQbackendPID) is dropped: the daemon delivered it locally already.
//
// A lost connection is reopened with a bounded backoff (100 ms doubling to 5 s), logged once
// per outage; messages published, or notified by others, during the outage are lost.
//
// Thread-safety: as PubSubCarrier; the carrier's thread is the only user of its connection.
// Ownership: the carrier owns its thread and connection; destroying it stops both (bounded by
// the statement in progress).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "skydb/pubsub.h"

namespace skydb::pg {

inline constexpr char kNotifyChannel[] = "skydb.pubsub";
// base64 of 5,900 bytes plus the length prefix stays below NOTIFY's 8000-byte payload limit.
inline constexpr size_t kMaxNotifyMessageBytes = 5900;

struct NotifyCarrierOptions {
  std::string conninfo;
  size_t max_queue = 4096;  // messages waiting for the connection; more are dropped (logged)
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
};

// Starts the carrier's thread, which connects in the background: never fails.
std::unique_ptr<PubSubCarrier> NewNotifyCarrier(NotifyCarrierOptions options);

// The NOTIFY payload for (channel, message) and back; nullopt for a payload that is not one.
std::string EncodeNotifyPayload(std::string_view channel, std::string_view message);
std::optional<std::pair<std::string, std::string>> DecodeNotifyPayload(std::string_view payload);

}  // namespace skydb::pg
