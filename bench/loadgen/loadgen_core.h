// The load generator's pure parts: RESP reply parsing, command encoding, the INFO text format,
// a latency histogram and the load threads' tallies that merge exactly, the store check and the
// validity gates. No I/O here, so every rule that
// decides whether a run is reported can be unit-tested without a server.
//
// Thread-safety: values only; nothing is shared.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skydb::loadgen {

// One RESP2 reply.
struct Reply {
  enum class Type { kSimple, kError, kInteger, kBulk, kNil, kArray };
  Type type = Type::kNil;
  std::string text;  // simple string, error message or bulk payload
  int64_t integer = 0;
  std::vector<Reply> elements;  // kArray
};

// Parses one reply from the front of `in`. Returns the bytes it used (> 0) when a whole reply is
// there, 0 when more bytes are needed, -1 when the bytes are not RESP2.
long ParseReply(std::string_view in, Reply* out);

// Appends a RESP2 command (an array of bulk strings) to `out`.
void AppendCommand(std::string* out, const std::vector<std::string_view>& args);

// INFO's "field:value" lines (section headers and blank lines skipped).
std::map<std::string, std::string> ParseInfo(std::string_view text);

// Latency histogram in nanoseconds: exact below 128 ns, then 64 sub-buckets per power of two
// (at most 1.6% relative error). The maximum is kept exactly.
class Histogram {
 public:
  void Record(uint64_t ns);
  void Merge(const Histogram& other);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  // The value at quantile q (0 < q <= 1): the midpoint of the bucket holding the ceil(q·n)-th
  // smallest sample, never above the maximum. 0 when empty.
  uint64_t Quantile(double q) const;
  // Every bucket, the count and the maximum equal: what merging must preserve exactly.
  bool operator==(const Histogram&) const = default;

 private:
  static constexpr int kSubBits = 6;
  static constexpr size_t kBuckets = 128 + (64 - 7) * (1 << kSubBits);
  static size_t BucketOf(uint64_t ns);
  static uint64_t BucketMid(size_t bucket);
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

// What one load thread counted over its own connections. The threads' tallies add up to the
// run's: every counter and histogram bucket is summed, the maximum is the largest, and the
// first failure is the earliest any thread saw.
struct LoadTally {
  int established = 0;    // connections that answered PING
  uint64_t attempts = 0;  // interactions started, warm-up included
  uint64_t errors = 0;    // error_replies + bad_replies + stale_reads + dropped + unfinished
  uint64_t error_replies = 0;
  uint64_t bad_replies = 0;      // a reply of the wrong shape (not a bulk or nil for GET, not +OK)
  uint64_t stale_reads = 0;      // GET did not return the value this session last wrote
  uint64_t dropped = 0;          // connections lost during the load
  uint64_t unfinished = 0;       // in-window interactions still in flight at the drain deadline
  uint64_t missed = 0;           // open loop: intended starts in the window never started
  uint64_t interactions = 0;     // completed, started in the window
  uint64_t writes_acked = 0;     // SET +OK, interactions started in the window
  uint64_t expires_acked = 0;    // cold reads' EXPIRE answered, interactions in the window
  uint64_t run_writes = 0;       // SET +OK over the whole run, warm-up and drain included
  uint64_t read_hits = 0;        // GETs in the window that found a value
  Histogram interaction;         // start (intended in open loop) → SET or EXPIRE reply
  Histogram get;                 // GET sent → reply
  Histogram set;                 // SET sent → reply
  Histogram expire;              // EXPIRE sent → reply (cold reads)
  std::string first_failure;     // the first error seen, verbatim, for the report
  int64_t first_failure_ns = 0;  // when (steady clock), so the earliest wins a merge

  void Merge(const LoadTally& other);
};

// The CPU the generator can use: one core per load thread, at most the cores it may run on,
// and never less than one.
double CpuCapacityCores(int threads, int cores_available);

// What the run asked the server to be. `store`: tiered | memory | naive (skydb's INFO
// store_kind, or the naive bench store's) or redis (a real redis-server). `durability`: for
// skydb sync | async | none; for redis always | everysec | no (the appendfsync policy, with
// appendonly on) or off (appendonly off).
struct StoreExpectation {
  std::string store;
  std::string durability;
};

// Checks the server's INFO fields (and, for redis, CONFIG GET appendonly/appendfsync answers
// merged into `info` as "config:appendonly" / "config:appendfsync") against the expectation.
// Returns the reason it does not match, or nothing when it does.
std::optional<std::string> CheckStore(const StoreExpectation& want,
                                      const std::map<std::string, std::string>& info);

// Whether a combination of --store/--durability can be checked at all (a usage error if not).
std::optional<std::string> ValidateExpectation(const StoreExpectation& want);

// Facts of a finished run that decide whether it may be reported.
struct RunFacts {
  int sessions_wanted = 0;           // connections the run asked for
  int sessions_established = 0;      // connections that answered PING before the load started
  uint64_t attempts = 0;             // interactions started (warm-up included)
  uint64_t errors = 0;               // error replies, wrong or stale replies, dropped connections
  uint64_t writes_acked = 0;         // SETs answered +OK in the measured window
  double generator_cpu_seconds = 0;  // this process, user + system, over the measured window
  double wall_seconds = 0;           // the measured window
  double cpu_capacity_cores = 1;     // what the generator can use: CpuCapacityCores
  int threads = 1;                   // load threads (each one epoll loop: at most one core)
  std::vector<double> thread_cpu_seconds;     // each load thread's own CPU over the window
  std::optional<std::string> store_mismatch;  // from CheckStore
  // CPU the machine spent on neither the generator nor the server's process tree during the
  // window (nullopt when the server's processes are unknown).
  std::optional<double> foreign_cpu_seconds;
};

struct Limits {
  double max_error_ratio = 0.001;  // errors / attempts above this: invalid
  // Generator CPU / (wall × capacity) above this: invalid; with several load threads, also
  // any one thread's CPU / wall (one loop cannot use more than one core).
  double max_cpu_fraction = 0.70;
  double max_foreign_cores = 0.25;  // other processes' CPU / wall above this: invalid
};

// Every reason the run is invalid, in a fixed order; empty when it is valid.
std::vector<std::string> InvalidReasons(const RunFacts& facts, const Limits& limits);

// The generator's CPU (the whole process) as a fraction of what it has.
double CpuFraction(const RunFacts& facts);

// The generator's CPU in cores: the whole process's CPU seconds per wall second.
double CpuCores(const RunFacts& facts);

}  // namespace skydb::loadgen
