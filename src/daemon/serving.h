// The client-facing half of the daemon: the session store and the Redis-protocol listener.
//
// Opened once PostgreSQL is ready (the store needs the migrated schema), closed before
// PostgreSQL stops: listener first (no new requests; in-flight ones are answered), then the
// store (queued writes are committed). A store that cannot open is an error, except that
// `skydb dev` with store.allow_memory_fallback serves a memory store and says so loudly.
//
// Thread-safety: Open and Stop may be called from different threads (the supervisor's ready
// callback and the signal thread); Stop waits for an Open in progress.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/resp.h"
#include "skydb/result.h"
#include "skydb/store.h"
#include "skydb/tune.h"

namespace skydb::daemon {

// The listener's options from configuration; the socket defaults to DATA_DIR/run/skydb.sock.
RespServerOptions RespOptionsFrom(const Config& config);

class Serving {
 public:
  Serving(Config config, Clock& clock, bool allow_fallback);
  ~Serving();

  // `conninfo` empty: a memory store (store.kind = memory).
  Status Open(const std::string& conninfo, const std::string& description, const Pools& pools);
  void Stop(std::chrono::milliseconds drain, std::chrono::milliseconds flush);
  // "tiered (sync) on <description>, listening on <socket>", for the banner.
  std::string Describe() const;
  // True once Stop has begun (an Open then fails because of it, not because of the store).
  bool stopped() const;

  // For metrics and /status; nullopt while not open. Never waits for an Open in progress.
  std::optional<StoreStats> StoreStatsNow() const;
  std::optional<RespServerStats> RespStatsNow() const;
  std::string StoreDescription() const;

 private:
  Config config_;
  Clock& clock_;
  bool allow_fallback_;
  mutable std::mutex mu_;
  std::unique_ptr<SessionStore> store_;
  std::unique_ptr<RespServer> server_;
  std::string store_text_;
  std::string description_suffix_;
  bool stopped_ = false;
  // What the stats accessors read: published at the end of Open, cleared at the start of Stop.
  mutable std::mutex stats_mu_;
  SessionStore* open_store_ = nullptr;  // guarded by stats_mu_
  RespServer* open_server_ = nullptr;   // guarded by stats_mu_
  std::string open_description_;        // guarded by stats_mu_
};

}  // namespace skydb::daemon
