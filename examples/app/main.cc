// The example app: a web app that runs skydb inside itself through the embedding API.
//
//   app --embed --data-dir DIR --listen 127.0.0.1:PORT
//       a private PostgreSQL under DIR for the app's own data (the visits table, through
//       libpqxx) and skydb's session store on DIR/run/skydb.sock (each visitor's counter and
//       model, through RESP)
//   app --database-url URL --data-dir DIR --listen 127.0.0.1:PORT
//       the same over an external PostgreSQL: the store's table and the visits table there
//
// GET /        the visitor's session (cookie sid): {"count":N,"visits":ROWS,"model":{...}}
// GET /visits  {"visits":ROWS}
// SIGTERM or SIGINT: the HTTP server stops, then skydb (Embedded::Stop) in order.
#include <signal.h>
#include <skydb/embedded.h>
#include <sys/random.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "http_server.h"
#include "resp_client.h"
#include "visits.h"

namespace {

struct Flags {
  bool embed = false;
  std::string data_dir;
  std::string database_url;
  std::string listen = "127.0.0.1:8080";
};

constexpr char kUsage[] =
    "usage: app (--embed | --database-url URL) --data-dir DIR [--listen 127.0.0.1:PORT]\n";

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--embed") {
      flags.embed = true;
    } else if (arg == "--data-dir" && has_value) {
      flags.data_dir = argv[++i];
    } else if (arg == "--database-url" && has_value) {
      flags.database_url = argv[++i];
    } else if (arg == "--listen" && has_value) {
      flags.listen = argv[++i];
    } else {
      std::fprintf(stderr, "app: unknown or incomplete argument %s\n%s", arg.c_str(), kUsage);
      return false;
    }
  }
  if (flags.embed == !flags.database_url.empty() || flags.data_dir.empty()) {
    std::fprintf(stderr, "app: give --data-dir and one of --embed or --database-url\n%s", kUsage);
    return false;
  }
  return true;
}

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (::getrandom(raw.data(), raw.size(), 0) != static_cast<ssize_t>(raw.size())) return "";
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : raw) hex += {kHex[c >> 4], kHex[c & 15]};
  return hex;
}

// A visitor's ~2 KB "model": what an app would keep per session between requests.
std::string NewModel() {
  std::string model = "{\"seed\":\"" + RandomHex(8) + "\",\"weights\":[";
  uint32_t x = 2463534242u;
  for (int i = 0; i < 256; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    model += (i ? "," : "") + std::to_string(x % 1000000);
  }
  return model + "]}";
}

std::string CookieSid(const app::Request& request) {
  auto it = request.headers.find("cookie");
  if (it == request.headers.end()) return "";
  auto at = it->second.find("sid=");
  if (at == std::string::npos) return "";
  std::string sid = it->second.substr(at + 4, 32);
  return sid.find_first_not_of("0123456789abcdef") == std::string::npos && sid.size() == 32 ? sid
                                                                                            : "";
}

app::Response Error(const std::string& what) {
  std::fprintf(stderr, "app: %s\n", what.c_str());
  return app::Reply(500, "{\"error\":\"see the app's log\"}\n");
}

// The app's state, used by the HTTP thread only.
struct App {
  app::RespClient store;
  app::Visits visits;

  app::Response Visit(const app::Request& request) {
    std::string sid = CookieSid(request);
    if (sid.empty()) sid = RandomHex(16);
    int count = 0;
    std::string model;
    auto session = store.Get("session:" + sid);  // "COUNT\nMODEL"
    if (!session && !store.error().empty()) return Error("store GET: " + store.error());
    if (session) {
      auto newline = session->find('\n');
      count = std::atoi(session->substr(0, newline).c_str());
      if (newline != std::string::npos) model = session->substr(newline + 1);
    }
    if (model.empty()) model = NewModel();
    ++count;
    if (!store.Set("session:" + sid, std::to_string(count) + "\n" + model, 86400)) {
      return Error("store SET: " + store.error());
    }
    std::string error;
    long rows = visits.Record(count, error);
    if (rows < 0) return Error("visits: " + error);
    app::Response response =
        app::Reply(200, "{\"count\":" + std::to_string(count) +
                            ",\"visits\":" + std::to_string(rows) + ",\"model\":" + model + "}\n");
    response.headers["Set-Cookie"] = "sid=" + sid + "; Path=/; HttpOnly; SameSite=Strict";
    return response;
  }

  app::Response Handle(const app::Request& request) {
    if (request.method != "GET") return app::Reply(404, "{\"error\":\"GET only\"}\n");
    if (request.path == "/") return Visit(request);
    if (request.path == "/visits") {
      std::string error;
      long rows = visits.Count(error);
      if (rows < 0) return Error("visits: " + error);
      return app::Reply(200, "{\"visits\":" + std::to_string(rows) + "}\n");
    }
    return app::Reply(404, "{\"error\":\"not found\"}\n");
  }
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "app: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
  // The library handles no signals: the app blocks them before any thread starts (threads
  // inherit the mask) and takes them with sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  skydb::EmbeddedOptions options;
  options.data_dir = flags.data_dir;
  options.database_url = flags.database_url;  // empty with --embed: a private cluster
  auto skydb = skydb::Embedded::Start(std::move(options));
  if (!skydb.ok()) return Fail(skydb.error().message);
  if (auto ready = (*skydb)->WaitReady(std::chrono::minutes(2)); !ready.ok()) {
    return Fail(ready.error().message);
  }
  auto state = std::make_shared<App>();
  std::string error;
  if (!state->visits.Open((*skydb)->database_url(), error)) {
    return Fail("cannot open the app's database: " + error);
  }
  if (!state->store.Connect((*skydb)->store_socket())) {
    return Fail("cannot reach the session store: " + state->store.error());
  }
  app::HttpServer http;
  if (!http.Start(
          flags.listen, [state](const app::Request& r) { return state->Handle(r); }, error)) {
    return Fail(error);
  }
  std::printf("app: serving http://%s (database %s, store %s)\n", flags.listen.c_str(),
              skydb::RedactedDatabaseUrl((*skydb)->database_url()).c_str(),
              (*skydb)->store_socket().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::printf("app: %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  http.Stop();
  skydb::Status stopped = (*skydb)->Stop();
  if (!stopped.ok()) return Fail(stopped.error().message);
  return 0;
}
