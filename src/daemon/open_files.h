// The daemon's open-file limit: every client connection is a descriptor, so a soft limit of
// 1024 (the usual shell default) would cap resp.max_clients (default 10000) far below its value.
//
// Thread-safety: call once at start, before threads exist. Failure: logged, never fatal (the
// listener then refuses the connections it cannot hold with a clear error).
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace skydb::daemon {

// The soft limit to ask for: the hard limit, but never above the kernel's per-process ceiling
// (fs.nr_open; RLIM_INFINITY is not accepted for RLIMIT_NOFILE), never below the current soft.
rlim_t WantedOpenFileLimit(rlim_t soft, rlim_t hard, uint64_t nr_open);

// Raises RLIMIT_NOFILE's soft limit to WantedOpenFileLimit and logs what it did; warns when
// the result cannot hold `max_clients` connections plus the daemon's own descriptors.
void RaiseOpenFileLimit(uint64_t max_clients);

}  // namespace skydb::daemon
