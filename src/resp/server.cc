// RespServer: option validation, socket set-up, loop threads and shutdown.
#include <arpa/inet.h>
#include <unistd.h>

#include <mutex>

#include "resp/command_table.h"
#include "resp/server_internal.h"
#include "skydb/log.h"

namespace skydb::resp {
namespace {

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

Status ValidateTcp(const RespServerOptions& o) {
  if (!o.tcp_enabled) return Ok();
  if (o.tcp_port < 0 || o.tcp_port > 65535) {
    return Error::InvalidArgument("resp: tcp_port must be 0..65535, not " +
                                  std::to_string(o.tcp_port));
  }
  if (!o.allow_remote && !IsLoopbackHost(o.tcp_host)) {
    return Error::InvalidArgument("resp: tcp_host " + o.tcp_host +
                                  " is not a loopback address; set allow_remote = true (which "
                                  "also requires requirepass) to accept remote clients");
  }
  if (o.allow_remote && o.requirepass.empty()) {
    return Error::InvalidArgument(
        "resp: allow_remote = true requires requirepass: remote clients must authenticate");
  }
  return Ok();
}

class RespServerImpl final : public RespServer {
 public:
  RespServerImpl(const RespServerOptions& options, SessionStore& store, Clock& clock) {
    shared_.options = options;
    shared_.clock = &clock;
    shared_.reply_memory = std::make_unique<ReplyMemory>(options.max_reply_memory);
    ExecutorConfig config{options.requirepass, options.store_description,
                          options.unix_path,   0,
                          options.max_clients, options.threads};
    config.allow_flush = options.allow_flush;
    config.idle_timeout = options.idle_timeout;
    config.notify_classes = ParseNotifyClasses(options.notify_keyspace_events).value_or(0);
    config.acl_storage = options.acl_storage;
    config.acl_file = options.acl_file;
    executor_config_ = config;
    store_ = &store;
  }
  ~RespServerImpl() override { Shutdown(std::chrono::milliseconds(0)); }

  Status Open();
  void Shutdown(std::chrono::milliseconds drain) override;
  RespServerStats Stats() const override;
  int tcp_port() const override { return tcp_port_; }

 private:
  Status OpenListeners(Loop& acceptor);

  ServerShared shared_;
  ExecutorConfig executor_config_;
  SessionStore* store_ = nullptr;
  int tcp_port_ = 0;
  bool created_socket_ = false;
  bool started_ = false;
  Mutex shutdown_mu_;
  bool shut_down_ GUARDED_BY(shutdown_mu_) = false;
};

Status RespServerImpl::OpenListeners(Loop& acceptor) {
  const auto& o = shared_.options;
  if (!o.unix_path.empty()) {
    SKYDB_ASSIGN_OR_RETURN(int fd, ListenUnix(o.unix_path, o.unix_mode, o.unix_group));
    acceptor.AddListener(fd);
    created_socket_ = true;
  }
  if (o.tcp_enabled) {
    SKYDB_ASSIGN_OR_RETURN(int fd, ListenTcp(o.tcp_host, o.tcp_port, &tcp_port_));
    acceptor.AddListener(fd);
    if (o.tls) shared_.tls_listener = fd;
  }
  return Ok();
}

Status RespServerImpl::Open() {
  for (int i = 0; i < shared_.options.threads; ++i) {
    auto loop = std::make_shared<Loop>(shared_);
    SKYDB_RETURN_IF_ERROR(loop->Init());
    shared_.loops.push_back(std::move(loop));
  }
  Status listening = OpenListeners(*shared_.loops.front());
  if (!listening.ok()) {
    if (created_socket_) ::unlink(shared_.options.unix_path.c_str());
    created_socket_ = false;
    return listening;
  }
  executor_config_.tcp_port = tcp_port_;
  shared_.executor = std::make_unique<CommandExecutor>(executor_config_, *store_, *shared_.clock,
                                                       shared_.counters);
  if (Status acl = shared_.executor->acl().Start(); !acl.ok()) {
    if (created_socket_) ::unlink(shared_.options.unix_path.c_str());
    created_socket_ = false;
    return std::move(acl).error().Within("cannot read the ACL users");
  }
  shared_.client_control = std::make_unique<LoopClientControl>(shared_);
  shared_.executor->set_client_control(shared_.client_control.get());
  if (PubSubCarrier* carrier = shared_.options.pubsub_carrier) {
    shared_.executor->pubsub().SetCarrier(carrier);  // attaches the hub to it
  }
  for (auto& loop : shared_.loops) loop->Start();
  started_ = true;
  spdlog::info("resp: listening on {}{}{}{} ({} loop thread{})", shared_.options.unix_path,
               shared_.options.tcp_enabled ? " and tcp port " : "",
               shared_.options.tcp_enabled ? std::to_string(tcp_port_) : "",
               shared_.options.tcp_enabled && shared_.options.tls ? " (TLS only)" : "",
               shared_.options.threads, shared_.options.threads == 1 ? "" : "s");
  return Ok();
}

void RespServerImpl::Shutdown(std::chrono::milliseconds drain) {
  MutexLock lock(shutdown_mu_);
  if (shut_down_ || !started_) return;
  shut_down_ = true;
  if (shared_.options.pubsub_carrier != nullptr) shared_.options.pubsub_carrier->Attach(nullptr);
  auto deadline = std::chrono::steady_clock::now() + drain;
  for (auto& loop : shared_.loops) {
    loop->Post([raw = loop.get(), deadline] { raw->BeginDrain(deadline); });
  }
  for (auto& loop : shared_.loops) loop->Join();
  if (created_socket_) ::unlink(shared_.options.unix_path.c_str());
  spdlog::info("resp: stopped ({} connections served)", shared_.counters.total_connections.load());
}

RespServerStats RespServerImpl::Stats() const {
  const auto& c = shared_.counters;
  RespServerStats stats{c.connected_clients.load(),
                        c.total_connections.load(),
                        c.rejected_connections.load(),
                        c.commands->dispatched(),
                        c.protocol_errors.load(),
                        shared_.reply_memory->held(),
                        c.reply_limit_disconnects.load(),
                        {},
                        {}};
  const auto& specs = AllCommands();
  auto add = [&](size_t slot, std::string name) {
    uint64_t n = c.commands->calls(slot);
    if (n == 0) return;
    stats.command_seconds.emplace_back(name, c.commands->Latency(slot));
    stats.commands.emplace_back(std::move(name), n);
  };
  for (size_t i = 0; i < specs.size(); ++i) add(i, std::string(specs[i].name));
  add(CommandStats::kUnknownSlot, "unknown");
  return stats;
}

}  // namespace
}  // namespace skydb::resp

namespace skydb {

Status ValidateRespOptions(const RespServerOptions& o) {
  if (o.unix_path.empty() && !o.tcp_enabled) {
    return Error::InvalidArgument("resp: neither a unix socket path nor TCP is configured");
  }
  if (o.unix_mode > 0777) return Error::InvalidArgument("resp: unix_mode must be at most 0777");
  if (o.threads < 1 || o.threads > 64) {
    return Error::InvalidArgument("resp: threads must be 1..64, not " + std::to_string(o.threads));
  }
  if (o.max_clients < 1) return Error::InvalidArgument("resp: max_clients must be at least 1");
  if (o.max_bulk_bytes < 1 || o.max_multibulk_length < 1 || o.max_pipeline < 1) {
    return Error::InvalidArgument(
        "resp: max_bulk_bytes, max_multibulk_length and max_pipeline must be at least 1");
  }
  if (o.max_query_buffer < o.max_bulk_bytes + 1024) {
    return Error::InvalidArgument(
        "resp: max_query_buffer must exceed max_bulk_bytes by at least 1 KiB (a SET carries "
        "its value plus the command and key)");
  }
  if (o.max_output_buffer < (1 << 20)) {
    return Error::InvalidArgument("resp: max_output_buffer must be at least 1 MiB");
  }
  if (o.max_reply_memory < o.max_output_buffer) {
    return Error::InvalidArgument(
        "resp: max_reply_memory must be at least max_output_buffer (one client's limit)");
  }
  if (!resp::ParseNotifyClasses(o.notify_keyspace_events)) {
    return Error::InvalidArgument("resp: notify_keyspace_events '" + o.notify_keyspace_events +
                                  "': " + std::string(resp::kBadNotifyClasses));
  }
  return resp::ValidateTcp(o);
}

Result<std::unique_ptr<RespServer>> NewRespServer(const RespServerOptions& options,
                                                  SessionStore& store, Clock& clock) {
  SKYDB_RETURN_IF_ERROR(ValidateRespOptions(options));
  auto server = std::make_unique<resp::RespServerImpl>(options, store, clock);
  SKYDB_RETURN_IF_ERROR(server->Open());
  return std::unique_ptr<RespServer>(std::move(server));
}

}  // namespace skydb
