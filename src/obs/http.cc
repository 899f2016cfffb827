// HttpEndpoints over cpp-httplib: /metrics, /healthz, /readyz, /status on one loopback port.
#include <arpa/inet.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "skydb/obs.h"

namespace skydb {
namespace {

constexpr const char* kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";

bool IsLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

class HttpEndpointsImpl final : public HttpEndpoints {
 public:
  explicit HttpEndpointsImpl(HttpHandlers handlers) : handlers_(std::move(handlers)) {
    // Scrapes are few; two workers keep a slow /metrics from blocking /healthz.
    server_.new_task_queue = [] { return new httplib::ThreadPool(2); };
    server_.set_read_timeout(5, 0);
    server_.set_write_timeout(5, 0);
    server_.set_keep_alive_max_count(100);
    Route();
  }
  ~HttpEndpointsImpl() override { Shutdown(); }

  Status Bind(const HttpOptions& options) {
    int port = options.any_port
                   ? server_.bind_to_any_port(options.bind)
                   : (server_.bind_to_port(options.bind, options.port) ? options.port : -1);
    if (port < 0) {
      return Error::Conflict("http: cannot listen on " + options.bind + ":" +
                             std::to_string(options.port) +
                             " (in use, or not an address of this host); set http.port to a "
                             "free port, or 0 to turn the HTTP endpoints off");
    }
    port_ = port;
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket already listens (connections queue); wait for the accept loop so that an
    // early Shutdown finds it running (stop() before it runs would be lost).
    for (int i = 0; i < 5000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    spdlog::info("http: /metrics, /healthz, /readyz, /status on {}:{}", options.bind, port_);
    return Ok();
  }

  int port() const override { return port_; }

  void Shutdown() override {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
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

  HttpHandlers handlers_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace

Status ValidateHttpOptions(const HttpOptions& options) {
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
  if (options.port == 0 && !options.any_port)
    return Error::InvalidArgument("http.port is 0: the endpoints are off");
  auto server = std::make_unique<HttpEndpointsImpl>(std::move(handlers));
  SKYDB_RETURN_IF_ERROR(server->Bind(options));
  return std::unique_ptr<HttpEndpoints>(std::move(server));
}

}  // namespace skydb
