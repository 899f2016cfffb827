// The pub/sub carrier's wire format and the pure decisions behind it: which other daemons a
// message reaches, how a batch of messages becomes NOTIFY payloads and rows of the large-message
// table, and how a received payload is read back. No I/O (src/pgconn/pubsub_carrier.cc does it).
//
// Every daemon LISTENs on the NOTIFY channel "skydb.pubsub". A payload is text (PostgreSQL
// requires it to be shorter than 8000 bytes and valid in the server's encoding), so it is ASCII:
//
//   payload = "skydb1 " hex(publisher) " " hex(daemon) *("," hex(daemon)) "\n" *record
//   record  = "m" mask " " base64(channel) " " base64(message) "\n"     (inline)
//           | "t" mask " " hex(seq) " " decimal(bytes) "\n"              (in the table)
//
// The header lists the daemons the payload's records are for; a record's mask says which of
// them it is for (hex digit k holds daemons 4k..4k+3 of the list, bit 0 the first). A message
// whose record fits a payload travels inline; a larger one is a row of
// skydb_pubsub_messages (publisher, seq), written once, read and reclaimed by its readers.
// Records keep their publish order within a payload, and payloads within a transaction.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skydb::pg::pubsub {

inline constexpr char kNotifyChannel[] = "skydb.pubsub";
// PostgreSQL refuses a NOTIFY payload of 8000 bytes or more ("payload string too long").
inline constexpr size_t kMaxPayloadBytes = 7999;

std::string Base64(std::string_view in);
std::optional<std::string> Unbase64(std::string_view in);

// Another daemon's channel or pattern, as the registry holds it.
struct RegistryRow {
  uint64_t daemon = 0;
  bool pattern = false;
  std::string name;
  uint64_t subscribers = 0;
};

// Where one message goes: the subscribers on other daemons, and those daemons (sorted).
struct Reach {
  uint64_t receivers = 0;
  std::vector<uint64_t> daemons;
  bool operator==(const Reach&) const = default;
};

using Matcher = std::function<bool(std::string_view pattern, std::string_view channel)>;

// Each channel's reach over `rows`: a daemon's subscribers to the channel plus those of each of
// its patterns that matches it (a client on both counts twice, as Redis counts it).
std::vector<Reach> ComputeReach(const std::vector<RegistryRow>& rows,
                                const std::vector<std::string_view>& channels,
                                const Matcher& matches);

// A message on its way out, with the daemons it is for (not empty).
struct OutMessage {
  std::string_view channel;
  std::string_view message;
  const std::vector<uint64_t>* daemons = nullptr;
};

// A row of skydb_pubsub_messages: read once by each of its `readers` daemons.
struct TableRow {
  uint64_t seq = 0;
  uint64_t readers = 0;
  std::string_view channel;
  std::string_view message;
};

struct EncodedBatch {
  std::vector<std::string> payloads;  // NOTIFY them in this order, in one transaction
  std::vector<TableRow> rows;         // insert them in the same transaction
};

// The payloads and rows that carry `messages`, in order. Table rows are numbered from
// *next_seq on (the publisher's sequence), which is advanced.
EncodedBatch EncodeBatch(uint64_t publisher, uint64_t* next_seq,
                         const std::vector<OutMessage>& messages);

// A record addressed to the daemon reading it.
struct Record {
  bool in_table = false;
  std::string channel;  // inline records
  std::string message;
  uint64_t seq = 0;  // table records
  uint64_t bytes = 0;
};

struct Notification {
  uint64_t publisher = 0;
  std::vector<Record> records;  // only those for `me`, in order
};

// nullopt: not a payload of this format (logged by the caller, never delivered).
std::optional<Notification> DecodePayload(std::string_view payload, uint64_t me);

}  // namespace skydb::pg::pubsub
