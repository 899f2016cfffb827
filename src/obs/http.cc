// HttpEndpoints over cpp-httplib: /metrics, /healthz, /readyz, /status on one loopback port or
// one unix socket.
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <thread>

#include "os/listen_socket.h"
#include "skydb/obs.h"
#include "tls/tls_context.h"

namespace skydb {
namespace {

constexpr const char* kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";

// An httplib::Server (or SSLServer, for http.tls) that serves a socket skydb made
// (os/listen_socket.h). httplib's own bind sets SO_REUSEPORT, which let a second daemon share the
// port and split scrapes and /readyz with the first, and it cannot set a unix socket's mode
// before it listens.
template <class Base>
class Adopting final : public Base {
 public:
  using Base::Base;
  ~Adopting() override {
    int fd = this->svr_sock_.exchange(INVALID_SOCKET);
    if (fd != INVALID_SOCKET) ::close(fd);  // adopted, never served
  }
  // Takes ownership of the listening `fd`; listen_after_bind() serves it, stop() closes it.
  void Adopt(int fd) {
    // httplib's accept loop is written for the blocking sockets it makes itself.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    this->svr_sock_ = fd;
  }
};

// The server for `options`: HTTPS when it carries a TLS context, whose certificate (reloaded
// on SIGHUP) every handshake takes.
std::unique_ptr<httplib::Server> MakeServer(const HttpOptions& options,
                                            std::function<void(int)>& adopt) {
  if (options.tls) {
    std::shared_ptr<TlsContext> tls = options.tls;
    auto server = std::make_unique<Adopting<httplib::SSLServer>>([tls](SSL_CTX& ctx) {
      tls->Attach(&ctx);
      return true;
    });
    adopt = [raw = server.get()](int fd) { raw->Adopt(fd); };
    return server;
  }
  auto server = std::make_unique<Adopting<httplib::Server>>();
  adopt = [raw = server.get()](int fd) { raw->Adopt(fd); };
  return server;
}

bool IsLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

class HttpEndpointsImpl final : public HttpEndpoints {
 public:
  HttpEndpointsImpl(const HttpOptions& options, HttpHandlers handlers)
      : handlers_(std::move(handlers)),
        tls_(options.tls),
        server_owned_(MakeServer(options, adopt_)),
        server_(*server_owned_) {
    // Scrapes are few; two workers keep a slow /metrics from blocking /healthz.
    server_.new_task_queue = [] { return new httplib::ThreadPool(2); };
    server_.set_read_timeout(5, 0);
    server_.set_write_timeout(5, 0);
    server_.set_keep_alive_max_count(100);
    Route();
  }
  ~HttpEndpointsImpl() override { Shutdown(); }

  Status Bind(const HttpOptions& options) {
    SKYDB_ASSIGN_OR_RETURN(int fd, Listen(options));
    adopt_(fd);
    unix_path_ = options.unix_path;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket already listens (connections queue); wait for the accept loop so that an
    // early Shutdown finds it running (stop() before it runs would be lost).
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    spdlog::info("http: /metrics, /healthz, /readyz, /status on {}{}",
                 unix_path_.empty() ? options.bind + ":" + std::to_string(port_) : unix_path_,
                 tls_ ? " (HTTPS only: " + tls_->Describe() + ")" : "");
    return Ok();
  }

  int port() const override { return port_; }

  void Shutdown() override {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
    if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
  }

 private:
  void Route() {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(handlers_.metrics(), kPrometheusType);
    });
    server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    server_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      Readiness r = handlers_.readiness();
      res.status = r.ready ? 200 : 503;
      res.set_content(r.reason + "\n", "text/plain");
    });
    server_.Get("/status", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(handlers_.status_json(), "application/json");
    });
  }

  // The listening socket, or why there is none in words that name the key to change.
  Result<int> Listen(const HttpOptions& options) {
    if (!options.unix_path.empty()) {
      auto fd = ListenUnix(options.unix_path, options.unix_mode, options.unix_group);
      if (fd.ok()) return fd;
      return Error{fd.error().code, "http: cannot listen on " + options.unix_path + " (" +
                                        fd.error().message +
                                        "); check http.listen, http.socket_mode and "
                                        "http.socket_group"};
    }
    auto fd = ListenTcp(options.bind, options.any_port ? 0 : options.port, &port_);
    if (fd.ok()) return fd;
    return Error::Conflict("http: cannot listen on " + options.bind + ":" +
                           std::to_string(options.port) + " (" + fd.error().message +
                           "); set http.port to a free port, or 0 to turn the HTTP endpoints off");
  }

  HttpHandlers handlers_;
  std::shared_ptr<TlsContext> tls_;  // outlives the server: its context calls back into it
  std::function<void(int)> adopt_;
  std::unique_ptr<httplib::Server> server_owned_;
  httplib::Server& server_;
  std::thread thread_;
  int port_ = 0;
  std::string unix_path_;  // removed at Shutdown
};

}  // namespace

Status ValidateHttpOptions(const HttpOptions& options) {
  if (!options.unix_path.empty()) {
    if (options.unix_mode > 0777) {
      return Error::InvalidArgument("http.socket_mode must be at most 0777");
    }
    return Ok();  // bind, port and allow_remote are unused
  }
  if (options.port < 0 || options.port > 65535) {
    return Error::InvalidArgument("http.port must be 0..65535, not " +
                                  std::to_string(options.port));
  }
  if (options.port != 0 && !options.allow_remote && !IsLoopback(options.bind)) {
    return Error::InvalidArgument("http.bind " + options.bind +
                                  " is not a loopback address; the endpoints carry no "
                                  "authentication, so set http.allow_remote = true only behind "
                                  "a firewall that admits just your Prometheus");
  }
  return Ok();
}

Result<std::unique_ptr<HttpEndpoints>> NewHttpEndpoints(const HttpOptions& options,
                                                        HttpHandlers handlers) {
  SKYDB_RETURN_IF_ERROR(ValidateHttpOptions(options));
  if (!options.enabled()) return Error::InvalidArgument("http.port is 0: the endpoints are off");
  auto server = std::make_unique<HttpEndpointsImpl>(options, std::move(handlers));
  SKYDB_RETURN_IF_ERROR(server->Bind(options));
  return std::unique_ptr<HttpEndpoints>(std::move(server));
}

}  // namespace skydb
