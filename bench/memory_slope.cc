// Resident bytes per cached session (docs/performance.md): fills the store's memory tier with
// sessions of VALUE_BYTES and reports RSS at each checkpoint and the marginal slope between the
// last two — not RSS ÷ n, which would charge the process's fixed cost to every session.
// The memory tier is the same engine in the memory-only and the tiered store. Prints one JSON
// object. Not a test. Usage: memory_slope [--value-bytes 2080] [--points 1000,10000,100000]
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "skydb/env.h"
#include "skydb/store.h"

namespace {

long RssBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return -1;
}

std::string SessionKey(std::mt19937_64& rng) {
  static const char* hex = "0123456789abcdef";
  std::string key = "sky:session:";
  for (int i = 0; i < 32; ++i) key.push_back(hex[rng() % 16]);
  return key;
}

}  // namespace

int main(int argc, char** argv) {
  size_t value_bytes = 2080;
  std::vector<long> points = {1000, 10000, 100000};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--value-bytes") {
      value_bytes = std::stoul(v);
    } else if (k == "--points") {
      points.clear();
      std::stringstream ss(v);
      for (std::string p; std::getline(ss, p, ',');) points.push_back(std::stol(p));
    } else {
      std::fprintf(stderr, "usage: memory_slope [--value-bytes N] [--points a,b,c]\n");
      return 2;
    }
  }
  auto clock = skydb::NewRealClock();
  skydb::MemoryTierOptions options;
  auto store = skydb::NewMemoryStore(options, *clock);
  std::mt19937_64 rng(7);
  std::string value(value_bytes, '\0');
  malloc_trim(0);
  long rss0 = RssBytes();
  long n = 0;
  std::vector<std::pair<long, long>> rss;  // (sessions, bytes)
  for (long target : points) {
    for (; n < target; ++n) {
      for (auto& c : value) c = static_cast<char>(rng());
      std::promise<bool> done;
      store->Set({SessionKey(rng), value, skydb::Expiry::Default()},
                 [&done](skydb::Result<skydb::SetReply> r) { done.set_value(r.ok()); });
      if (!done.get_future().get()) {
        std::fprintf(stderr, "memory_slope: SET failed at %ld sessions\n", n);
        return 1;
      }
    }
    rss.emplace_back(n, RssBytes());
  }
  auto stats = store->Stats();
  std::printf("{\"value_bytes\":%zu,\"rss_empty\":%ld,\"points\":[", value_bytes, rss0);
  for (size_t i = 0; i < rss.size(); ++i) {
    std::printf("%s{\"sessions\":%ld,\"rss\":%ld}", i ? "," : "", rss[i].first, rss[i].second);
  }
  double slope = 0;
  if (rss.size() >= 2) {
    auto [n1, r1] = rss[rss.size() - 2];
    auto [n2, r2] = rss.back();
    slope = static_cast<double>(r2 - r1) / static_cast<double>(n2 - n1);
  }
  std::printf(
      "],\"marginal_bytes_per_session\":%.0f,\"ratio_to_value\":%.3f,"
      "\"store_accounted_bytes\":%llu,\"count\":%lld}\n",
      slope, slope / static_cast<double>(value_bytes),
      static_cast<unsigned long long>(stats.memory_bytes), static_cast<long long>(store->Count()));
  (void)store->Close(std::chrono::seconds(1));
  return 0;
}
