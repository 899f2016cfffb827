// A server's process tree from /proc: CPU time, and memory as PSS (RSS overstates shared pages,
// e.g. PostgreSQL's shared_buffers counted once per backend). Linux only; unreadable entries
// count as zero.
#pragma once

#include <cstdint>

namespace skydb::loadgen {

// Cores this process may run on (its affinity mask).
int CoresAvailable();

// User + system CPU seconds of `root` and every live descendant, including children they
// have reaped; 0 when root <= 0.
double TreeCpuSeconds(int root);

// User + nice + system CPU seconds of the whole machine since boot (/proc/stat).
double MachineBusySeconds();

struct TreeMemory {
  int pid = 0;
  uint64_t root_rss_kib = 0;
  uint64_t root_pss_kib = 0;
  int descendants = 0;
  uint64_t descendants_pss_kib = 0;
};
TreeMemory ReadTreeMemory(int root);

}  // namespace skydb::loadgen
