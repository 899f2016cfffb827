#include "daemon/serving.h"

#include <spdlog/spdlog.h>

#include "pgconn/pubsub_carrier.h"
#include "schema/acl_rows.h"
#include "skydb/app_env.h"

namespace skydb::daemon {

RespServerOptions RespOptionsFrom(const Config& config, const std::string& app_group) {
  RespServerOptions o;
  o.unix_path = StoreSocketPath(config);
  o.unix_group = config.resp.socket_group.empty() ? app_group : config.resp.socket_group;
  o.tcp_enabled = config.resp.tcp_port != 0;
  o.tcp_host = config.resp.bind;
  o.tcp_port = static_cast<int>(config.resp.tcp_port);
  o.allow_remote = config.resp.allow_remote;
  o.requirepass = config.resp.requirepass;
  o.acl_file = config.resp.aclfile;
  o.max_clients = static_cast<size_t>(config.resp.max_clients);
  o.idle_timeout = config.resp.idle_timeout;
  o.threads = static_cast<int>(config.resp.threads);
  o.max_bulk_bytes = config.store.max_value_bytes;
  // A command carrying the largest value, its key and framing must fit the query buffer.
  o.max_query_buffer = std::max<size_t>(o.max_query_buffer, config.store.max_value_bytes + 65536);
  // A reply carrying the largest value must fit one client's reply limit, and that limit the
  // server-wide one.
  o.max_output_buffer =
      std::max<size_t>(config.resp.max_output_buffer, config.store.max_value_bytes + 65536);
  o.max_reply_memory = std::max<size_t>(config.resp.max_reply_memory, o.max_output_buffer);
  o.allow_flush = config.resp.allow_flush;
  o.notify_keyspace_events = config.resp.notify_keyspace_events;
  return o;
}

Serving::Serving(Config config, Clock& clock, bool allow_fallback, std::string app_group,
                 std::shared_ptr<TlsContext> tls)
    : config_(std::move(config)),
      clock_(clock),
      allow_fallback_(allow_fallback),
      app_group_(std::move(app_group)),
      tls_(std::move(tls)) {}

Serving::~Serving() { Stop(std::chrono::milliseconds(0), std::chrono::milliseconds(0)); }

Status Serving::Open(const std::string& conninfo, const std::string& description,
                     const Pools& pools) {
  MutexLock lock(mu_);
  if (stopped_) return Error::Unavailable("skydb is stopping");
  StoreOpenRequest request{config_.store,       conninfo,
                           description,         pools.store_pool,
                           pools.store_writers, SharedCoherence(config_.store)};
  if (conninfo.empty()) request.config.kind = StoreKind::kMemory;
  auto store = OpenSessionStore(request, clock_);
  if (!store.ok() && allow_fallback_ && request.config.kind != StoreKind::kMemory) {
    spdlog::error(
        "STORE FALLBACK: {}; serving a MEMORY-ONLY store because "
        "store.allow_memory_fallback = true: nothing written survives a restart",
        store.error().message);
    request.config.kind = StoreKind::kMemory;
    store = OpenSessionStore(request, clock_);
    description_suffix_ = " (FALLBACK: PostgreSQL could not be opened)";
  }
  if (!store.ok()) return std::move(store).error();
  store_ = std::move(store).value();
  RespServerOptions options = RespOptionsFrom(config_, app_group_);
  if (config_.resp.tls) options.tls = tls_;
  // Only daemons sharing one database (shared coherence) have peers to carry pub/sub to; a
  // private cluster, exclusive coherence and a memory store deliver in-process.
  // LISTEN needs a session, which a transaction pooler does not keep: there only a direct
  // store.pubsub_database_url carries it.
  const StoreConfig& stored = config_.store;
  bool pooled = stored.pooler == Pooler::kTransaction;
  std::string listen_url = !stored.pubsub_database_url.empty() ? stored.pubsub_database_url
                           : pooled                            ? ""
                                                               : conninfo;
  bool carried = !conninfo.empty() && request.config.kind != StoreKind::kMemory && request.shared;
  if (carried && listen_url.empty()) {
    spdlog::warn(
        "pubsub: PUBLISH reaches this daemon's subscribers only: store.pooler = transaction "
        "and no store.pubsub_database_url (LISTEN needs a direct connection)");
  }
  if (carried && !listen_url.empty()) {
    pg::PubSubCarrierOptions carrier;
    carrier.conninfo = listen_url;
    carrier.matches = GlobMatch;
    carrier.peer_timeout = stored.pubsub_peer_timeout;
    carrier.wait = stored.write_timeout;
    carrier.clock = &clock_;
    carrier_ = pg::NewPubSubCarrier(std::move(carrier));
    options.pubsub_carrier = carrier_.get();
  }
  if (!conninfo.empty() && request.config.kind != StoreKind::kMemory) {
    acl_storage_ = schema::NewPgAclStorage(conninfo, /*named_statements=*/!pooled);
    options.acl_storage = acl_storage_.get();
  }
  StoreStats stats = store_->Stats();
  options.store_description =
      stats.kind + " " + stats.durability + " " + description + description_suffix_;
  // Before the server copies it: INFO shows what the daemon opened.
  if (request.shared && request.config.kind != StoreKind::kMemory) {
    options.store_description += ", shared coherence";
  }
  auto server = NewRespServer(options, *store_, clock_);
  if (!server.ok()) {
    (void)store_->Close(std::chrono::seconds(5));
    store_.reset();
    carrier_.reset();
    acl_storage_.reset();
    return std::move(server).error().Within("cannot listen for clients");
  }
  server_ = std::move(server).value();
  store_text_ =
      stats.kind + " store (" + stats.durability +
      (request.shared && request.config.kind != StoreKind::kMemory ? ", shared coherence" : "") +
      ")" + (request.config.kind == StoreKind::kMemory ? "" : " on " + description) +
      description_suffix_ + ", " + std::to_string(stats.sessions) + " sessions, listening on " +
      options.unix_path +
      (options.tcp_enabled ? " and " + options.tcp_host + ":" +
                                 std::to_string(server_->tcp_port()) + (options.tls ? " (TLS)" : "")
                           : "");
  MutexLock stats_lock(stats_mu_);
  open_store_ = store_.get();
  open_server_ = server_.get();
  open_description_ = options.store_description;
  return Ok();
}

void Serving::Stop(std::chrono::milliseconds drain, std::chrono::milliseconds flush) {
  MutexLock lock(mu_);
  stopped_ = true;
  {
    MutexLock stats_lock(stats_mu_);
    open_store_ = nullptr;
    open_server_ = nullptr;
  }
  if (server_) {
    server_->Shutdown(drain);
    server_.reset();
  }
  carrier_.reset();  // after the server: it borrowed the carrier
  acl_storage_.reset();
  if (store_) {
    Status closed = store_->Close(flush);
    if (!closed.ok()) spdlog::error("store: {}", closed.error().message);
    store_.reset();
  }
}

std::optional<StoreStats> Serving::StoreStatsNow() const {
  MutexLock lock(stats_mu_);
  if (open_store_ == nullptr) return std::nullopt;
  return open_store_->Stats();
}

std::optional<RespServerStats> Serving::RespStatsNow() const {
  MutexLock lock(stats_mu_);
  if (open_server_ == nullptr) return std::nullopt;
  return open_server_->Stats();
}

std::string Serving::StoreDescription() const {
  MutexLock lock(stats_mu_);
  return open_description_;
}

bool Serving::stopped() const {
  MutexLock lock(mu_);
  return stopped_;
}

std::string Serving::Describe() const {
  MutexLock lock(mu_);
  return store_text_;
}

}  // namespace skydb::daemon
