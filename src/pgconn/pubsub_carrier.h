// The PubSubCarrier (include/skydb/pubsub.h) over PostgreSQL: daemons that share one database
// carry pub/sub to each other through LISTEN/NOTIFY and three unlogged tables (schema
// migration 104; statements in pgconn/pubsub_sql.h, wire format in pgconn/pubsub_payload.h).
//
// Two connections per daemon (application_name "skydb pubsub" and "skydb pubsub send"):
//  - the listener LISTENs on "skydb.pubsub", reads each notification's records addressed to
//    this daemon, takes large messages out of skydb_pubsub_messages, and delivers everything
//    in notification order (so one publisher's messages keep their order);
//  - the sender, in batches: reads which other live daemons subscribe to the batch's channels
//    (and their patterns), NOTIFYs the messages that reach one (inline when they fit a payload,
//    else as a row read once by each of those daemons), and answers each PUBLISH with the
//    subscribers it reached; records this daemon's subscription counts; heartbeats; sweeps.
// A daemon is registered (counted by the others) only while its listener is LISTENing, so a
// message another daemon commits for it after its registration reaches it. Each reconnect of
// the listener registers the whole subscription set again.
//
// Waits are bounded: a PUBLISH, SUBSCRIBE or PUBSUB reply waits for PostgreSQL at most
// `wait`; then it is answered as if the carrier were down (this daemon's part only).
//
// Thread-safety: as PubSubCarrier. Three threads: sender, listener, watchdog.
// Ownership: the carrier owns its threads and connections; destroying it answers everything
// still waiting, removes this daemon's registration (best effort) and joins the threads
// (bounded by the statement each is running).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "pgconn/pubsub_payload.h"
#include "skydb/env.h"
#include "skydb/pubsub.h"

namespace skydb::pg {

struct PubSubCarrierOptions {
  std::string conninfo;
  // Redis's glob match (the RESP server's), for other daemons' patterns.
  pubsub::Matcher matches;
  // A daemon whose heartbeat is older than this no longer counts (store.pubsub_peer_timeout);
  // heartbeats come at a fifth of it.
  std::chrono::milliseconds peer_timeout{10000};
  // The longest a reply waits for PostgreSQL (store.write_timeout).
  std::chrono::milliseconds wait{10000};
  // A large message unread this long after its publication is reclaimed.
  std::chrono::milliseconds retention{60000};
  size_t max_queue_messages = 65536;
  size_t max_queue_bytes = 64 << 20;
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::string description;       // this daemon in skydb_pubsub_daemons ("host pid N")
  const Clock* clock = nullptr;  // required: the Env's clock, for every wait bound
};

// Starts the carrier's threads, which connect in the background: never fails.
std::unique_ptr<PubSubCarrier> NewPubSubCarrier(PubSubCarrierOptions options);

}  // namespace skydb::pg
