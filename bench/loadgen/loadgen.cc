// skydb_loadgen: the Sky.Live load model against any RESP server on a unix socket (skydb,
// redis-server, the naive bench store). N sessions over C connections; each interaction is GET
// then SET key value EX 1800. Closed loop (think time) or open loop (a target rate, latency
// from the intended start). Prints one JSON object: the run's conditions, whether it is valid
// and why not, and — only when valid — throughput and latency. Exit 0 valid, 1 invalid,
// 2 usage error. --threads N spreads the connections over N epoll threads; the CPU gate then
// judges the whole process against min(N, cores) and each thread against one core. Not a test;
// bench/run_all.sh drives it and tests/integration/bench smoke-tests it.
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "control.h"
#include "driver.h"
#include "loadgen_core.h"
#include "proc_tree.h"

namespace {

using nlohmann::ordered_json;
using skydb::loadgen::DriverOptions;
using skydb::loadgen::DriverResult;

struct Flags {
  DriverOptions load;
  std::string value_file;  // framed values (bench/sessiongen), empty: value_bytes of letters
  skydb::loadgen::StoreExpectation expect;
  skydb::loadgen::Limits limits;
  std::vector<int> server_pids;
  std::string commit = "unknown";
  std::vector<std::string> labels;  // key=value, copied into the conditions
};

std::string ReadLoad() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// Reads bench/sessiongen's framing: each value a 4-byte big-endian length, then its bytes.
// Returns the reason the file cannot be used, or nothing.
std::optional<std::string> ReadValues(const std::string& path, std::vector<std::string>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot open " + path;
  unsigned char head[4];
  while (f.read(reinterpret_cast<char*>(head), 4)) {
    uint32_t n = (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) |
                 uint32_t{head[3]};
    if (n < 16 || n > (512u << 20)) return path + ": a value of " + std::to_string(n) + " bytes";
    std::string v(n, '\0');
    if (!f.read(v.data(), n)) return path + ": truncated";
    out->push_back(std::move(v));
  }
  if (out->empty()) return path + ": no values";
  return std::nullopt;
}

void RaiseFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// Reads the server's tree at the window's boundaries from the driver's boundary thread.
class ServerProbe : public skydb::loadgen::WindowHooks {
 public:
  explicit ServerProbe(std::vector<int> pids) : pids_(std::move(pids)) {}
  void OnWindowStart() override {
    cpu0_ = Cpu();
    busy0_ = skydb::loadgen::MachineBusySeconds();
  }
  void OnWindowMiddle() override {
    for (int pid : pids_) middle_.push_back(skydb::loadgen::ReadTreeMemory(pid));
  }
  void OnWindowEnd() override {
    cpu1_ = Cpu();
    busy1_ = skydb::loadgen::MachineBusySeconds();
  }
  double cpu_seconds() const { return cpu1_ - cpu0_; }
  double machine_busy_seconds() const { return busy1_ - busy0_; }
  const std::vector<skydb::loadgen::TreeMemory>& middle() const { return middle_; }

 private:
  double Cpu() const {
    double total = 0;
    for (int pid : pids_) total += skydb::loadgen::TreeCpuSeconds(pid);
    return total;
  }
  std::vector<int> pids_;
  double cpu0_ = 0, cpu1_ = 0;
  double busy0_ = 0, busy1_ = 0;
  std::vector<skydb::loadgen::TreeMemory> middle_;
};

ordered_json Latency(const skydb::loadgen::Histogram& h) {
  auto us = [&h](double q) { return static_cast<double>(h.Quantile(q)) / 1000.0; };
  return {{"count", h.count()},   {"p50_us", us(0.50)},
          {"p95_us", us(0.95)},   {"p99_us", us(0.99)},
          {"p999_us", us(0.999)}, {"max_us", static_cast<double>(h.max()) / 1000.0}};
}

ordered_json Conditions(const Flags& f, const std::map<std::string, std::string>& info,
                        const std::string& load_start) {
  utsname u{};
  uname(&u);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  auto field = [&info](const char* name) {
    auto it = info.find(name);
    return it == info.end() ? std::string() : it->second;
  };
  std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  ordered_json c = {
      {"commit", f.commit},
      {"finished_utc", when},
      {"host", host},
      {"kernel", u.release},
      {"cores_online", sysconf(_SC_NPROCESSORS_ONLN)},
      {"cores_available", skydb::loadgen::CoresAvailable()},
      {"load_start", load_start},
      {"load_end", ReadLoad()},
      {"server_redis_version", field("redis_version")},
      {"server_skydb_version", field("skydb_version")},
      {"store_kind", field("store_kind")},
      {"store_durability", field("store_durability")},
      {"store_description", field("store_description")},
      {"redis_appendonly", field("config:appendonly")},
      {"redis_appendfsync", field("config:appendfsync")},
      {"expected_store", f.expect.store},
      {"expected_durability", f.expect.durability},
      {"value_bytes", f.load.value_bytes},
      {"value_file", f.value_file},
      {"value_count", f.load.values ? f.load.values->size() : 0},
      {"expire_ratio", f.load.expire_ratio},
      {"ttl_seconds", f.load.ttl_seconds},
      {"sessions", f.load.sessions},
      {"connections", f.load.connections},
      {"threads", f.load.threads},
      {"loop", f.load.populate   ? "populate"
               : f.load.rate > 0 ? "open"
                                 : "closed"},
      {"target_rate", f.load.rate},
      {"think_ms", f.load.think_ms},
      {"warmup_s", f.load.warmup_seconds},
      {"duration_s", f.load.duration_seconds},
  };
  for (const auto& label : f.labels) {
    auto eq = label.find('=');
    c["label_" + label.substr(0, eq)] = eq == std::string::npos ? "" : label.substr(eq + 1);
  }
  return c;
}

int Run(const Flags& f) {
  RaiseFileLimit();
  std::string load_start = ReadLoad();
  std::map<std::string, std::string> info_before;
  std::string control_error =
      skydb::loadgen::ReadServerInfo(f.load.socket_path, f.expect.store, &info_before);
  std::optional<std::string> mismatch =
      control_error.empty() ? skydb::loadgen::CheckStore(f.expect, info_before)
                            : std::optional<std::string>("cannot read INFO: " + control_error);

  ServerProbe probe(f.server_pids);
  DriverResult r = skydb::loadgen::RunLoad(f.load, probe);
  std::map<std::string, std::string> info_after;
  skydb::loadgen::ReadServerInfo(f.load.socket_path, f.expect.store, &info_after);

  const skydb::loadgen::LoadTally& t = r.tally;
  skydb::loadgen::RunFacts facts;
  facts.sessions_wanted = f.load.connections;
  facts.sessions_established = t.established;
  facts.attempts = t.attempts;
  facts.errors = t.errors;
  facts.writes_acked = t.writes_acked;
  facts.generator_cpu_seconds = r.cpu_seconds;
  facts.wall_seconds = r.window_seconds;
  facts.cpu_capacity_cores =
      skydb::loadgen::CpuCapacityCores(r.threads, skydb::loadgen::CoresAvailable());
  facts.threads = r.threads;
  facts.thread_cpu_seconds = r.thread_cpu_seconds;
  facts.store_mismatch = mismatch;
  if (!f.server_pids.empty()) {
    facts.foreign_cpu_seconds =
        std::max(0.0, probe.machine_busy_seconds() - probe.cpu_seconds() - r.cpu_seconds);
  }
  auto reasons = skydb::loadgen::InvalidReasons(facts, f.limits);
  auto per_second = [&r](double seconds) -> ordered_json {
    if (r.window_seconds <= 0) return nullptr;
    return seconds / r.window_seconds;
  };
  ordered_json thread_cores = ordered_json::array();
  for (double s : r.thread_cpu_seconds) thread_cores.push_back(per_second(s));
  bool probed = !f.server_pids.empty() && !f.load.populate;

  ordered_json out;
  out["valid"] = reasons.empty();
  out["invalid_reasons"] = reasons;
  out["conditions"] = Conditions(f, info_before, load_start);
  // The generator's CPU three ways: the fraction of its capacity (the gate), the cores it kept
  // busy, and each load thread's share of its one core (the per-thread gate). The server's
  // cores and the machine's say whether, on a shared machine, the server had room to go faster.
  out["checks"] = {
      {"sessions_established", t.established},
      {"attempts", t.attempts},
      {"errors", t.errors},
      {"error_replies", t.error_replies},
      {"bad_replies", t.bad_replies},
      {"stale_reads", t.stale_reads},
      {"dropped_connections", t.dropped},
      {"unfinished", t.unfinished},
      {"max_error_ratio", f.limits.max_error_ratio},
      {"generator_threads", r.threads},
      {"generator_cpu_fraction", skydb::loadgen::CpuFraction(facts)},
      {"generator_cpu_capacity_cores", facts.cpu_capacity_cores},
      {"generator_cpu_cores", skydb::loadgen::CpuCores(facts)},
      {"generator_thread_cpu_cores", thread_cores},
      {"max_cpu_fraction", f.limits.max_cpu_fraction},
      {"server_cpu_cores", probed ? per_second(probe.cpu_seconds()) : ordered_json(nullptr)},
      {"machine_busy_cores",
       probed ? per_second(probe.machine_busy_seconds()) : ordered_json(nullptr)},
      {"foreign_cpu_cores", facts.foreign_cpu_seconds && r.window_seconds > 0
                                ? ordered_json(*facts.foreign_cpu_seconds / r.window_seconds)
                                : ordered_json(nullptr)},
      {"max_foreign_cores", f.limits.max_foreign_cores},
      {"writes_acked", t.writes_acked},
      {"run_writes", t.run_writes},
      {"store_check", mismatch ? *mismatch : "ok"},
      {"first_failure", t.first_failure},
  };
  if (reasons.empty()) {
    double secs = r.window_seconds;
    ordered_json res = {
        {"window_s", secs},
        {"interactions", t.interactions},
        {"interactions_per_s", secs > 0 ? static_cast<double>(t.interactions) / secs : 0},
        {"writes_per_s", secs > 0 ? static_cast<double>(t.writes_acked) / secs : 0},
        {"expires_per_s", secs > 0 ? static_cast<double>(t.expires_acked) / secs : 0},
        {"read_hits", t.read_hits},
        {"missed_intended_starts", t.missed},
        {"interaction", Latency(t.interaction)},
        {"get", Latency(t.get)},
        {"set", Latency(t.set)},
        {"expire", Latency(t.expire)},
        {"generator_threads", r.threads},
    };
    if (f.load.rate > 0 && !f.load.populate) {
      double achieved = secs > 0 ? static_cast<double>(t.interactions) / secs : 0;
      res["saturated"] = t.missed > 0 || achieved < 0.95 * f.load.rate;
    }
    if (probed) {
      res["server_cpu_s"] = probe.cpu_seconds();
      res["server_cpu_us_per_write"] =
          t.writes_acked > 0 ? probe.cpu_seconds() / static_cast<double>(t.writes_acked) * 1e6 : 0;
      ordered_json mem = ordered_json::array();
      for (const auto& m : probe.middle()) {
        mem.push_back({{"pid", m.pid},
                       {"root_rss_kib", m.root_rss_kib},
                       {"root_pss_kib", m.root_pss_kib},
                       {"descendants", m.descendants},
                       {"descendants_pss_kib", m.descendants_pss_kib}});
      }
      res["server_memory_mid_window"] = mem;
    }
    auto counter = [&](const char* name) -> ordered_json {
      auto a = info_after.find(name), b = info_before.find(name);
      if (a == info_after.end() || b == info_before.end()) return nullptr;
      return std::stoll(a->second) - std::stoll(b->second);
    };
    res["server_counters_delta"] = {{"store_writes", counter("store_writes")},
                                    {"store_commits", counter("store_commits")},
                                    {"store_committed_rows", counter("store_committed_rows")},
                                    {"aof_bytes", counter("aof_current_size")}};
    out["result"] = res;
  } else {
    out["result"] = nullptr;
  }
  std::cout << out.dump() << std::endl;
  return reasons.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"skydb_loadgen: the Sky.Live load model over RESP (one JSON result on stdout)"};
  app.add_option("--socket", f.load.socket_path, "server's unix socket")->required();
  app.add_option("--expect-store", f.expect.store, "tiered | memory | naive | redis")->required();
  app.add_option("--expect-durability", f.expect.durability,
                 "tiered: sync|async; memory: none; naive: sync; redis: always|everysec|no|off")
      ->required();
  app.add_option("--connections", f.load.connections,
                 "concurrent connections (sessions "
                 "established)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--sessions", f.load.sessions, "sessions (keys); default = connections");
  app.add_option("--value-bytes", f.load.value_bytes, "bytes per SET value")
      ->check(CLI::Range(16, 512 << 20));
  app.add_option("--value-file", f.value_file,
                 "values to write (bench/sessiongen's framing); --value-bytes becomes their mean");
  app.add_option("--expire-ratio", f.load.expire_ratio,
                 "fraction of interactions that are cold reads: GET then EXPIRE, no SET")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--ttl", f.load.ttl_seconds, "SET ... EX seconds")->check(CLI::Range(1, 1 << 30));
  app.add_option("--key-prefix", f.load.key_prefix, "key prefix (default: unique per run)");
  app.add_option("--warmup", f.load.warmup_seconds, "seconds excluded before the window")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--duration", f.load.duration_seconds, "measured seconds")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--drain", f.load.drain_seconds,
                 "seconds in-window interactions may finish "
                 "after the window")
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--think-ms", f.load.think_ms, "closed loop: pause between interactions")
      ->check(CLI::Range(0.0, 3600000.0));
  app.add_option("--rate", f.load.rate, "open loop: interactions/s in total (0: closed loop)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--threads", f.load.threads,
                 "epoll threads, each driving its share of the connections (default 1)")
      ->check(CLI::Range(1, 64));
  app.add_flag("--populate", f.load.populate, "one interaction per session, then stop");
  app.add_option("--establish-timeout", f.load.establish_seconds, "seconds for every PING");
  app.add_option("--max-error-ratio", f.limits.max_error_ratio, "errors/interactions gate")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--max-cpu-fraction", f.limits.max_cpu_fraction,
                 "generator CPU gate: a fraction of min(threads, cores), and of one core for "
                 "each thread")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--max-foreign-cores", f.limits.max_foreign_cores,
                 "gate on other processes' CPU during the window, in cores (needs --server-pid)")
      ->check(CLI::Range(0.0, 64.0));
  app.add_option("--server-pid", f.server_pids, "server process (tree) for CPU and memory");
  app.add_option("--commit", f.commit, "source commit, for the conditions");
  app.add_option("--label", f.labels, "key=value copied into the conditions (repeatable)");
  app.add_option("--seed", f.load.seed, "random seed");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is 0; every usage error is 2
  }
  if (auto bad = skydb::loadgen::ValidateExpectation(f.expect)) {
    std::fprintf(stderr, "skydb_loadgen: %s\n", bad->c_str());
    return 2;
  }
  if (app.count("--sessions") == 0) f.load.sessions = f.load.connections;
  if (f.load.sessions < f.load.connections) {
    std::fprintf(stderr, "skydb_loadgen: --sessions (%ld) must be at least --connections (%d)\n",
                 f.load.sessions, f.load.connections);
    return 2;
  }
  if (f.load.threads > f.load.connections) {
    std::fprintf(stderr,
                 "skydb_loadgen: --threads (%d) must be at most --connections (%d): each thread "
                 "drives its own connections\n",
                 f.load.threads, f.load.connections);
    return 2;
  }
  if (!f.value_file.empty()) {
    auto values = std::make_shared<std::vector<std::string>>();
    if (auto bad = ReadValues(f.value_file, values.get())) {
      std::fprintf(stderr, "skydb_loadgen: --value-file: %s\n", bad->c_str());
      return 2;
    }
    size_t total = 0;
    for (const auto& v : *values) total += v.size();
    f.load.value_bytes = total / values->size();
    f.load.values = std::move(values);
  }
  if (app.count("--key-prefix") == 0) {
    f.load.key_prefix =
        "lg:" + std::to_string(getpid()) + ":" + std::to_string(std::time(nullptr)) + ":";
  }
  return Run(f);
}
