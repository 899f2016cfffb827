// The RESP (Redis protocol) server: any Redis client becomes a session-store client.
//
// A RespServer listens on a unix socket (and optionally TCP), parses RESP2 requests (arrays of
// bulk strings and inline commands), runs the session-store subset of Redis's commands against
// a SessionStore and writes Redis-shaped replies. It is event-driven (a few epoll loop threads,
// no thread per client); pipelined requests are all handed to the store before any reply is
// awaited, so pipelined writes share a group commit, and replies leave strictly in request order.
// docs/protocol.md lists the commands, reply shapes, limits and differences from Redis.
//
// Thread-safety: every method may be called from any thread.
// Ownership: the server borrows the store, the clock and the pub/sub carrier; they must outlive
// it. Shut the server
// down (or destroy it) before closing the store so no new request reaches a closing store.
// Failure: NewRespServer returns an error naming the option or the socket that failed; nothing
// is left listening then. Per-connection failures close that connection and are logged.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "skydb/acl_storage.h"
#include "skydb/env.h"
#include "skydb/histogram.h"
#include "skydb/pubsub.h"
#include "skydb/result.h"
#include "skydb/store.h"

namespace skydb {

class TlsContext;  // src/tls/tls_context.h

struct RespServerOptions {
  // Unix socket; empty: none. A stale socket file is replaced only if nothing answers on it.
  std::string unix_path;
  uint32_t unix_mode = 0660;
  std::string unix_group;  // empty: the process's group

  // TCP; off by default. Loopback only unless allow_remote, which requires requirepass.
  bool tcp_enabled = false;
  std::string tcp_host = "127.0.0.1";
  int tcp_port = 6379;  // 0: an ephemeral port (tests); RespServer::tcp_port() tells which
  bool allow_remote = false;
  // Non-null: the TCP listener speaks TLS only, with this context's certificate (resp.tls);
  // the unix socket stays plain.
  std::shared_ptr<TlsContext> tls;

  std::string requirepass;  // empty: no AUTH needed

  size_t max_clients = 10000;
  size_t max_bulk_bytes = 1 << 20;                    // set to store.max_value_bytes
  size_t max_multibulk_length = size_t{1024} * 1024;  // arguments in one command
  size_t max_query_buffer = 64 << 20;                 // bytes of one command being received
  // Reply bytes one connection may hold (built, queued, unsent, claimed for a reply being
  // built): a client past it does not read its replies and is closed; a single reply larger
  // than this is refused with an error. Set it above store.max_value_bytes.
  size_t max_output_buffer = 64 << 20;
  // Reply bytes all connections together may hold: the client whose reply would pass it is
  // closed, so clients that do not read cannot exhaust the daemon's memory. At least
  // max_output_buffer.
  size_t max_reply_memory = size_t{1} << 30;
  size_t max_pipeline = 4096;                 // requests in flight before reading pauses
  std::chrono::milliseconds idle_timeout{0};  // 0: never close idle clients (CONFIG SET timeout)
  // Keyspace notifications at start, as Redis's notify-keyspace-events ("" = off; "Egx");
  // CONFIG SET changes them while the server runs.
  std::string notify_keyspace_events;
  int threads = 1;  // event-loop threads

  // Shown in INFO's persistence section next to the store's own kind ("memory", "tiered").
  std::string store_description;
  bool allow_flush = false;  // resp.allow_flush: FLUSHALL/FLUSHDB delete every key

  // Carries PUBLISH to the other daemons on the same database and back (skydb/pubsub.h);
  // borrowed, it must outlive the server. nullptr: pub/sub is local to this server.
  PubSubCarrier* pubsub_carrier = nullptr;

  // ACL users (ACL SETUSER, AUTH user pass) live here beyond this server and are shared with
  // every server on it; borrowed, it must outlive the server. nullptr: in this server only.
  AclStorage* acl_storage = nullptr;
  std::string acl_file;  // resp.aclfile: ACL SAVE / LOAD, read at start; "": none
};

// Checks the options without touching the OS; the message names the offending option.
Status ValidateRespOptions(const RespServerOptions& options);

struct RespServerStats {
  uint64_t connected_clients = 0;
  uint64_t total_connections = 0;
  uint64_t rejected_connections = 0;  // max clients reached
  uint64_t total_commands = 0;
  uint64_t protocol_errors = 0;
  uint64_t reply_bytes = 0;              // reply bytes all clients hold now
  uint64_t reply_limit_disconnects = 0;  // clients closed by either reply limit
  // Commands run, by lower-case name, only those run at least once; "unknown" counts names
  // the server does not support.
  std::vector<std::pair<std::string, uint64_t>> commands;
  // Each of those commands' replies by time from dispatch to reply (in sync durability a
  // write's includes its COMMIT), in seconds, by the same names.
  std::vector<std::pair<std::string, HistogramSnapshot>> command_seconds;
};

class RespServer {
 public:
  virtual ~RespServer() = default;  // implementations shut down (drain 0 ms) if still running

  // Stops accepting, stops reading new requests, waits up to `drain` for requests already
  // handed to the store to be answered and flushed, then closes every connection and joins the
  // loop threads. Idempotent. Removes the unix socket file it created.
  virtual void Shutdown(std::chrono::milliseconds drain) = 0;

  virtual RespServerStats Stats() const = 0;
  virtual int tcp_port() const = 0;  // the bound TCP port; 0 when TCP is off
};

// Validates the options, binds and listens on every configured socket and starts the loop
// threads: when it returns, clients can connect.
Result<std::unique_ptr<RespServer>> NewRespServer(const RespServerOptions& options,
                                                  SessionStore& store, Clock& clock);

}  // namespace skydb
