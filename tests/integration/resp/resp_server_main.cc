// resp_test_server: a memory store behind the RESP server on a unix socket, for integration
// tests with real clients (redis-cli, python3-redis, redis-benchmark). Like Dragonfly's
// ok_main: the protocol alone, without PostgreSQL or the supervisor.
//
//   resp_test_server --socket PATH [--default-ttl-ms 0] [--requirepass PW] [--max-clients N]
//                    [--idle-timeout-ms N] [--max-value-bytes N] [--threads N]
//
// Prints "ready" on stdout once listening; SIGTERM or SIGINT shuts it down (drain 5 s).
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "skydb/resp.h"
#include "skydb/store.h"

namespace {

bool ParseArgs(int argc, char** argv, skydb::RespServerOptions* resp,
               skydb::MemoryTierOptions* memory) {
  memory->default_ttl = std::chrono::milliseconds(0);
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    long long n = std::atoll(value.c_str());
    if (flag == "--socket") {
      resp->unix_path = value;
    } else if (flag == "--default-ttl-ms") {
      memory->default_ttl = std::chrono::milliseconds(n);
    } else if (flag == "--requirepass") {
      resp->requirepass = value;
    } else if (flag == "--max-clients") {
      resp->max_clients = static_cast<size_t>(n);
    } else if (flag == "--idle-timeout-ms") {
      resp->idle_timeout = std::chrono::milliseconds(n);
    } else if (flag == "--max-value-bytes") {
      memory->max_value_bytes = static_cast<size_t>(n);
      resp->max_bulk_bytes = static_cast<size_t>(n);
    } else if (flag == "--max-output-buffer") {
      resp->max_output_buffer = static_cast<size_t>(n);
    } else if (flag == "--allow-flush") {
      resp->allow_flush = n != 0;
    } else if (flag == "--threads") {
      resp->threads = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  return !resp->unix_path.empty();
}

}  // namespace

int main(int argc, char** argv) {
  skydb::RespServerOptions options;
  skydb::MemoryTierOptions memory;
  if (!ParseArgs(argc, argv, &options, &memory)) {
    std::fprintf(stderr, "usage: resp_test_server --socket PATH [flags]\n");
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

  spdlog::set_default_logger(spdlog::stderr_color_mt("resp_test_server"));  // stdout: "ready"
  auto clock = skydb::NewRealClock();
  auto store = skydb::NewMemoryStore(memory, *clock);
  options.store_description = "memory (test server)";
  auto server = skydb::NewRespServer(options, *store, *clock);
  if (!server.ok()) {
    std::fprintf(stderr, "resp_test_server: %s\n", server.error().message.c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  (*server)->Shutdown(std::chrono::seconds(5));
  (void)store->Close(std::chrono::seconds(5));
  return 0;
}
