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
#include "skydb/mutex.h"
#include "skydb/pubsub.h"
#include "skydb/resp.h"
#include "skydb/result.h"
#include "skydb/store.h"
#include "skydb/tune.h"

namespace skydb::daemon {

// The listener's options from configuration; the socket defaults to DATA_DIR/run/skydb.sock,
// its group to `app_group` (the app's, daemon/app_access.h) when resp.socket_group is unset.
RespServerOptions RespOptionsFrom(const Config& config, const std::string& app_group = "");

// What the lifecycle opens once the database is ready and closes first when it stops: the
// store and its listener (an interface, so the lifecycle is unit-tested without them).
class ClientService {
 public:
  virtual ~ClientService() = default;
  // `conninfo` empty: a memory store (store.kind = memory).
  virtual Status Open(const std::string& conninfo, const std::string& description,
                      const Pools& pools) = 0;
  virtual void Stop(std::chrono::milliseconds drain, std::chrono::milliseconds flush) = 0;
  // True once Stop has begun (an Open then fails because of it, not because of the store).
  virtual bool stopped() const = 0;
  // "tiered (sync) on <description>, listening on <socket>", for the banner.
  virtual std::string Describe() const = 0;
  virtual std::string SocketPath() const = 0;
  // For metrics and /status; nullopt while not open. Never waits for an Open in progress.
  virtual std::optional<StoreStats> StoreStatsNow() const = 0;
  virtual std::optional<RespServerStats> RespStatsNow() const = 0;
  virtual std::string StoreDescription() const = 0;
};

class Serving final : public ClientService {
 public:
  // `tls`: resp.tls's certificate (the lifecycle loads and reloads it); null without resp.tls.
  Serving(Config config, Clock& clock, bool allow_fallback, std::string app_group = "",
          std::shared_ptr<TlsContext> tls = nullptr);
  ~Serving() override;

  Status Open(const std::string& conninfo, const std::string& description,
              const Pools& pools) override;
  void Stop(std::chrono::milliseconds drain, std::chrono::milliseconds flush) override;
  std::string Describe() const override;
  bool stopped() const override;
  std::string SocketPath() const override { return RespOptionsFrom(config_).unix_path; }
  std::optional<StoreStats> StoreStatsNow() const override;
  std::optional<RespServerStats> RespStatsNow() const override;
  std::string StoreDescription() const override;

 private:
  Config config_;
  Clock& clock_;
  bool allow_fallback_;
  std::string app_group_;
  std::shared_ptr<TlsContext> tls_;
  mutable Mutex mu_;
  std::unique_ptr<SessionStore> store_ GUARDED_BY(mu_);
  std::unique_ptr<PubSubCarrier> carrier_ GUARDED_BY(mu_);   // with a database only
  std::unique_ptr<AclStorage> acl_storage_ GUARDED_BY(mu_);  // with a database only
  std::unique_ptr<RespServer> server_ GUARDED_BY(mu_);
  std::string store_text_ GUARDED_BY(mu_);
  std::string description_suffix_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
  // What the stats accessors read: published at the end of Open, cleared at the start of Stop.
  mutable Mutex stats_mu_;
  SessionStore* open_store_ GUARDED_BY(stats_mu_) = nullptr;
  RespServer* open_server_ GUARDED_BY(stats_mu_) = nullptr;
  std::string open_description_ GUARDED_BY(stats_mu_);
};

}  // namespace skydb::daemon
