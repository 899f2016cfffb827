// The pub/sub carrier's statements over the tables and functions of schema migration 104
// (src/schema/migrations.cc):
//
//   skydb_pubsub_daemons        (id, heartbeat_at, started_at, description)   one row a daemon
//   skydb_pubsub_subscriptions  (daemon, pattern, name, digest, subscribers)  its channels and
//                                                                             patterns, counted
//   skydb_pubsub_messages       (publisher, seq, readers_left, created_at, channel, message)
//                               messages too large for a NOTIFY payload
//   skydb_pubsub_publish(...)   inserts a batch's rows and NOTIFYs its payloads, in order
//   skydb_pubsub_take(...)      reads rows for one reader, deleting each after its last reader
//
// All three tables are UNLOGGED: what they hold lives as long as the daemons that wrote it, and
// is written again when it is lost (a crash of PostgreSQL empties them; every daemon then
// finds its row gone at its next heartbeat and announces its subscriptions again).
// A daemon counts as alive while its heartbeat is younger than the peer timeout.
//
// Thread-safety: each function uses the connection it is given, on the caller's thread.
// Failure: the statement's error; the connection may then be unusable (Connection::Healthy).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pgconn/pgconn.h"
#include "pgconn/pubsub_payload.h"
#include "skydb/pubsub.h"

namespace skydb::pg::pubsub {

using std::chrono::milliseconds;

// Session settings of a carrier connection: commits do not wait for the WAL flush (nothing it
// writes is meant to survive a crash of PostgreSQL).
Status PrepareSession(Connection& conn);

// Refreshes this daemon's heartbeat. true: its row was gone (swept as dead, or PostgreSQL lost
// its unlogged tables) and was created again; the caller must announce everything again.
Result<bool> Heartbeat(Connection& conn, uint64_t me, const std::string& description);
// This daemon's row and its whole subscription set, replacing what was recorded.
Status Register(Connection& conn, uint64_t me, const std::string& description,
                const std::vector<SubscriptionCount>& all);
// Removes this daemon's row and subscriptions (a clean stop, or a listener that went down).
Status Deregister(Connection& conn, uint64_t me);
// Records changed counts (0 removes the name).
Status RecordCounts(Connection& conn, uint64_t me, const std::vector<SubscriptionCount>& counts);

// The other live daemons' subscriptions to `channels` and all their patterns.
Result<std::vector<RegistryRow>> ReadReach(Connection& conn, uint64_t me, milliseconds alive,
                                           const std::vector<std::string_view>& channels);
// Inserts the batch's rows and NOTIFYs its payloads in one transaction.
Status Send(Connection& conn, uint64_t me, const EncodedBatch& batch);
// The other live daemons' subscriptions, summed by name (PUBSUB).
Result<std::vector<SubscriptionCount>> ReadRemote(
    Connection& conn, uint64_t me, milliseconds alive, bool patterns,
    const std::optional<std::vector<std::string>>& names);

// A large message read by this daemon.
struct Taken {
  uint64_t publisher = 0;
  uint64_t seq = 0;
  std::string channel;
  std::string message;
};
// Reads (publisher, seq) rows as one of their readers; rows already gone are left out.
Result<std::vector<Taken>> Take(Connection& conn,
                                const std::vector<std::pair<uint64_t, uint64_t>>& keys);

// Removes large messages older than `retention` (unread by a reader that died or fell behind)
// and daemons silent for longer than `dead`, with their subscriptions.
Status Sweep(Connection& conn, milliseconds retention, milliseconds dead);

}  // namespace skydb::pg::pubsub
