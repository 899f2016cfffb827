// The load itself: C non-blocking unix-socket connections on one epoll thread, each owning a
// share of N sessions; an interaction is GET key, then SET key value EX ttl, then (closed loop)
// think time or (open loop) the connection's next scheduled start. Open-loop latency runs from
// the intended start, so a slow server cannot hide its queueing (no coordinated omission).
//
// Thread-safety: RunLoad is self-contained and may run once per process at a time.
// Failure: connection and protocol failures are counted in the result, never thrown.
#pragma once

#include <cstdint>
#include <string>

#include "loadgen_core.h"

namespace skydb::loadgen {

struct DriverOptions {
  std::string socket_path;
  int connections = 64;
  long sessions = 64;         // >= connections; connection c owns sessions c, c+C, c+2C, ...
  size_t value_bytes = 2080;  // >= 16 (the first 16 bytes carry the write's counter)
  int ttl_seconds = 1800;
  std::string key_prefix = "lg:";
  double warmup_seconds = 2;
  double duration_seconds = 10;
  double drain_seconds = 10;  // after the window: how long in-window interactions may finish
  double think_ms = 0;        // closed loop: pause between a connection's interactions
  double rate = 0;            // > 0: open loop at this many interactions/s in total
  bool populate = false;      // one interaction per session, no warm-up, then stop
  double establish_seconds = 5;
  uint64_t seed = 1;
};

struct DriverResult {
  int established = 0;
  std::string first_failure;  // the first error seen, verbatim, for the report
  uint64_t attempts = 0;      // interactions started, warm-up included
  uint64_t errors = 0;        // error_replies + bad_replies + stale_reads + dropped + unfinished
  uint64_t error_replies = 0;
  uint64_t bad_replies = 0;   // a reply of the wrong shape (not a bulk or nil for GET, not +OK)
  uint64_t stale_reads = 0;   // GET did not return the value this session last wrote
  uint64_t dropped = 0;       // connections lost during the load
  uint64_t unfinished = 0;    // in-window interactions still in flight at the drain deadline
  uint64_t missed = 0;        // open loop: intended starts in the window never started
  uint64_t interactions = 0;  // completed, started in the window
  uint64_t writes_acked = 0;  // SET +OK, interactions started in the window
  uint64_t read_hits = 0;     // GETs in the window that found a value
  double window_seconds = 0;
  double cpu_seconds = 0;  // this process over the window
  Histogram interaction;   // start (intended in open loop) → SET reply
  Histogram get;           // GET sent → reply
  Histogram set;           // SET sent → reply
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
