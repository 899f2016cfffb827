// The load itself: C non-blocking unix-socket connections, each owning a share of N sessions,
// spread over T epoll threads, each owning a contiguous share of the connections and so of
// their sessions (no state is shared between threads). An interaction is GET key, then SET key
// value EX ttl, then (closed loop) think time or (open loop) the connection's next scheduled
// start. Open-loop latency runs from the intended start, so a slow server cannot hide its
// queueing (no coordinated omission).
//
// Every thread starts its interactions on the same schedule (one warm-up, one window) and counts
// into its own LoadTally; RunLoad merges them. The process's CPU (every thread) is read at the
// window's boundaries, and each load thread reads its own.
//
// Thread-safety: RunLoad is self-contained and may run once per process at a time; the hooks
// are called from a thread of its own.
// Failure: connection and protocol failures are counted in the result, never thrown.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loadgen_core.h"

namespace skydb::loadgen {

struct DriverOptions {
  std::string socket_path;
  int connections = 64;
  long sessions = 64;         // >= connections; connection c owns sessions c, c+C, c+2C, ...
  size_t value_bytes = 2080;  // >= 16 (the first 16 bytes carry the write's counter)
  // When set and not empty: connection c writes values[c % size] (each >= 16 bytes, the first
  // 16 replaced by the counter) instead of value_bytes of letters.
  std::shared_ptr<const std::vector<std::string>> values;
  // The fraction of interactions that are cold reads: GET then EXPIRE key ttl, no SET (the
  // runtime slides an unchanged session's deadline). Spread evenly over each connection's
  // interactions; never in a populate run.
  double expire_ratio = 0;
  int ttl_seconds = 1800;
  std::string key_prefix = "lg:";
  double warmup_seconds = 2;
  double duration_seconds = 10;
  double drain_seconds = 10;  // after the window: how long in-window interactions may finish
  double think_ms = 0;        // closed loop: pause between a connection's interactions
  double rate = 0;            // > 0: open loop at this many interactions/s in total (each
                              // connection rate / C, so each thread its connections' share)
  int threads = 1;            // epoll threads, 1..connections
  bool populate = false;      // one interaction per session, no warm-up, then stop
  double establish_seconds = 5;
  uint64_t seed = 1;
};

struct DriverResult {
  int threads = 1;  // load threads that ran
  LoadTally tally;  // every thread's, merged
  double window_seconds = 0;
  double cpu_seconds = 0;                  // this process, every thread, over the window
  std::vector<double> thread_cpu_seconds;  // each load thread's own, over the window
};

// Called at the start and at the end of the measured window (for server CPU readings) and at
// its middle (for memory samples).
struct WindowHooks {
  virtual ~WindowHooks() = default;
  virtual void OnWindowStart() {}
  virtual void OnWindowMiddle() {}
  virtual void OnWindowEnd() {}
};

DriverResult RunLoad(const DriverOptions& options, WindowHooks& hooks);

}  // namespace skydb::loadgen
