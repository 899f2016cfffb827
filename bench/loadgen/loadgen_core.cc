// Pure parts of the load generator (see loadgen_core.h).
#include "loadgen_core.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace skydb::loadgen {
namespace {

// The line up to CRLF starting at `from`; nothing if the CRLF has not arrived yet.
std::optional<std::string_view> Line(std::string_view in, size_t from) {
  size_t end = in.find("\r\n", from);
  if (end == std::string_view::npos) return std::nullopt;
  return in.substr(from, end - from);
}

bool ToInt(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

long ParseAt(std::string_view in, size_t at, Reply* out, int depth) {
  if (depth > 8) return -1;
  if (at >= in.size()) return 0;
  auto line = Line(in, at + 1);
  if (!line) return 0;
  size_t after = at + 1 + line->size() + 2;
  char kind = in[at];
  int64_t n = 0;
  switch (kind) {
    case '+':
    case '-':
      out->type = kind == '+' ? Reply::Type::kSimple : Reply::Type::kError;
      out->text.assign(*line);
      return static_cast<long>(after - at);
    case ':':
      if (!ToInt(*line, &n)) return -1;
      out->type = Reply::Type::kInteger;
      out->integer = n;
      return static_cast<long>(after - at);
    case '$':
      if (!ToInt(*line, &n) || n < -1) return -1;
      if (n == -1) {
        out->type = Reply::Type::kNil;
        return static_cast<long>(after - at);
      }
      if (in.size() < after + static_cast<size_t>(n) + 2) return 0;
      if (in.substr(after + static_cast<size_t>(n), 2) != "\r\n") return -1;
      out->type = Reply::Type::kBulk;
      out->text.assign(in.substr(after, static_cast<size_t>(n)));
      return static_cast<long>(after + static_cast<size_t>(n) + 2 - at);
    case '*': {
      if (!ToInt(*line, &n) || n < -1) return -1;
      if (n == -1) {
        out->type = Reply::Type::kNil;
        return static_cast<long>(after - at);
      }
      out->type = Reply::Type::kArray;
      out->elements.assign(static_cast<size_t>(n), Reply{});
      size_t pos = after;
      for (auto& element : out->elements) {
        long used = ParseAt(in, pos, &element, depth + 1);
        if (used <= 0) return used;
        pos += static_cast<size_t>(used);
      }
      return static_cast<long>(pos - at);
    }
    default:
      return -1;
  }
}

}  // namespace

long ParseReply(std::string_view in, Reply* out) { return ParseAt(in, 0, out, 0); }

void AppendCommand(std::string* out, const std::vector<std::string_view>& args) {
  char head[32];
  int n = std::snprintf(head, sizeof head, "*%zu\r\n", args.size());
  out->append(head, static_cast<size_t>(n));
  for (std::string_view arg : args) {
    n = std::snprintf(head, sizeof head, "$%zu\r\n", arg.size());
    out->append(head, static_cast<size_t>(n));
    out->append(arg);
    out->append("\r\n");
  }
}

std::map<std::string, std::string> ParseInfo(std::string_view text) {
  std::map<std::string, std::string> fields;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    fields[std::string(line.substr(0, colon))] = std::string(line.substr(colon + 1));
  }
  return fields;
}

size_t Histogram::BucketOf(uint64_t ns) {
  if (ns < 128) return static_cast<size_t>(ns);
  int exponent = 63 - std::countl_zero(ns);  // >= 7
  uint64_t sub = (ns >> (exponent - kSubBits)) & ((1u << kSubBits) - 1);
  return 128 + static_cast<size_t>(exponent - 7) * (1u << kSubBits) + static_cast<size_t>(sub);
}

uint64_t Histogram::BucketMid(size_t bucket) {
  if (bucket < 128) return bucket;
  size_t rel = bucket - 128;
  int exponent = static_cast<int>(rel >> kSubBits) + 7;
  uint64_t sub = rel & ((1u << kSubBits) - 1);
  uint64_t width = uint64_t{1} << (exponent - kSubBits);
  uint64_t low = (uint64_t{1} << exponent) + sub * width;
  return low + width / 2;
}

void Histogram::Record(uint64_t ns) {
  ++counts_[BucketOf(ns)];
  ++count_;
  max_ = std::max(max_, ns);
}

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
}

uint64_t Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(BucketMid(i), max_);
  }
  return max_;
}

void LoadTally::Merge(const LoadTally& other) {
  established += other.established;
  attempts += other.attempts;
  errors += other.errors;
  error_replies += other.error_replies;
  bad_replies += other.bad_replies;
  stale_reads += other.stale_reads;
  dropped += other.dropped;
  unfinished += other.unfinished;
  missed += other.missed;
  interactions += other.interactions;
  writes_acked += other.writes_acked;
  expires_acked += other.expires_acked;
  run_writes += other.run_writes;
  read_hits += other.read_hits;
  interaction.Merge(other.interaction);
  get.Merge(other.get);
  set.Merge(other.set);
  expire.Merge(other.expire);
  if (!other.first_failure.empty() &&
      (first_failure.empty() || other.first_failure_ns < first_failure_ns)) {
    first_failure = other.first_failure;
    first_failure_ns = other.first_failure_ns;
  }
}

double CpuCapacityCores(int threads, int cores_available) {
  return std::max(1, std::min(threads, cores_available));
}

std::optional<std::string> ValidateExpectation(const StoreExpectation& want) {
  static const std::map<std::string, std::vector<std::string>> kAllowed = {
      {"tiered", {"sync", "async"}},
      {"memory", {"none"}},
      {"naive", {"sync"}},
      {"redis", {"always", "everysec", "no", "off"}},
  };
  auto it = kAllowed.find(want.store);
  if (it == kAllowed.end()) {
    return "--expect-store must be tiered, memory, naive or redis, not '" + want.store + "'";
  }
  const auto& ok = it->second;
  if (std::find(ok.begin(), ok.end(), want.durability) == ok.end()) {
    std::string list;
    for (const auto& d : ok) list += (list.empty() ? "" : ", ") + d;
    return "--expect-durability for store " + want.store + " must be one of " + list + ", not '" +
           want.durability + "'";
  }
  return std::nullopt;
}

std::optional<std::string> CheckStore(const StoreExpectation& want,
                                      const std::map<std::string, std::string>& info) {
  auto field = [&info](const std::string& name) -> std::string {
    auto it = info.find(name);
    return it == info.end() ? "(absent)" : it->second;
  };
  if (want.store == "redis") {
    if (!info.contains("redis_version")) return "INFO has no redis_version: not a Redis server";
    if (info.contains("skydb_version")) {
      return "INFO reports skydb_version " + field("skydb_version") +
             ": this is skydb, not redis-server";
    }
    std::string aof = field("config:appendonly"), fsync = field("config:appendfsync");
    if (want.durability == "off") {
      if (aof != "no") return "redis-server has appendonly " + aof + ", the run asked for off";
      return std::nullopt;
    }
    if (aof != "yes") return "redis-server has appendonly " + aof + ", the run asked for yes";
    if (fsync != want.durability) {
      return "redis-server has appendfsync " + fsync + ", the run asked for " + want.durability;
    }
    return std::nullopt;
  }
  if (!info.contains("skydb_version")) {
    return "INFO has no skydb_version: the server is not skydb (the run asked for store " +
           want.store + ")";
  }
  if (field("store_kind") != want.store) {
    return "INFO reports store_kind " + field("store_kind") + ", the run asked for " + want.store;
  }
  if (field("store_durability") != want.durability) {
    return "INFO reports store_durability " + field("store_durability") + ", the run asked for " +
           want.durability;
  }
  return std::nullopt;
}

double CpuFraction(const RunFacts& facts) {
  double budget = facts.wall_seconds * facts.cpu_capacity_cores;
  return budget > 0 ? facts.generator_cpu_seconds / budget : 0;
}

double CpuCores(const RunFacts& facts) {
  return facts.wall_seconds > 0 ? facts.generator_cpu_seconds / facts.wall_seconds : 0;
}

std::vector<std::string> InvalidReasons(const RunFacts& facts, const Limits& limits) {
  std::vector<std::string> reasons;
  char buf[256];
  if (facts.sessions_established < facts.sessions_wanted) {
    std::snprintf(buf, sizeof buf, "only %d of %d sessions were established",
                  facts.sessions_established, facts.sessions_wanted);
    reasons.emplace_back(buf);
  }
  double ratio = facts.attempts > 0
                     ? static_cast<double>(facts.errors) / static_cast<double>(facts.attempts)
                     : (facts.errors > 0 ? 1.0 : 0.0);
  if (ratio > limits.max_error_ratio) {
    std::snprintf(buf, sizeof buf, "%llu errors in %llu interactions (%.4f > limit %.4f)",
                  static_cast<unsigned long long>(facts.errors),
                  static_cast<unsigned long long>(facts.attempts), ratio, limits.max_error_ratio);
    reasons.emplace_back(buf);
  }
  double cpu = CpuFraction(facts);
  if (cpu > limits.max_cpu_fraction) {
    std::snprintf(buf, sizeof buf,
                  "the generator used %.0f%% of its %.2f core(s) (%.2f cores busy, %d load "
                  "thread(s); limit %.0f%%): it may be the bottleneck",
                  cpu * 100, facts.cpu_capacity_cores, CpuCores(facts), facts.threads,
                  limits.max_cpu_fraction * 100);
    reasons.emplace_back(buf);
  }
  // One thread is one epoll loop: a busy one throttles its own connections even when the
  // process as a whole is below the gate. With one thread the process gate already says it.
  if (facts.threads > 1 && facts.wall_seconds > 0) {
    for (size_t t = 0; t < facts.thread_cpu_seconds.size(); ++t) {
      double used = facts.thread_cpu_seconds[t] / facts.wall_seconds;
      if (used <= limits.max_cpu_fraction) continue;
      std::snprintf(buf, sizeof buf,
                    "load thread %zu used %.0f%% of a core (limit %.0f%%): it may be the "
                    "bottleneck for its connections",
                    t, used * 100, limits.max_cpu_fraction * 100);
      reasons.emplace_back(buf);
    }
  }
  if (facts.foreign_cpu_seconds && facts.wall_seconds > 0 &&
      *facts.foreign_cpu_seconds / facts.wall_seconds > limits.max_foreign_cores) {
    std::snprintf(buf, sizeof buf,
                  "other processes used %.2f cores during the window (limit %.2f): the machine "
                  "was not quiet",
                  *facts.foreign_cpu_seconds / facts.wall_seconds, limits.max_foreign_cores);
    reasons.emplace_back(buf);
  }
  if (facts.writes_acked == 0) reasons.emplace_back("no write was acknowledged");
  if (facts.store_mismatch) reasons.push_back("store check: " + *facts.store_mismatch);
  return reasons;
}

}  // namespace skydb::loadgen
