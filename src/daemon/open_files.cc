#include "daemon/open_files.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace skydb::daemon {
namespace {

constexpr uint64_t kOwnDescriptors = 256;  // PostgreSQL pool, logs, pipes, listeners, slack

uint64_t ReadNrOpen() {
  std::ifstream in("/proc/sys/fs/nr_open");
  uint64_t value = 0;
  if (!(in >> value)) return 1048576;  // the kernel's default
  return value;
}

}  // namespace

rlim_t WantedOpenFileLimit(rlim_t soft, rlim_t hard, uint64_t nr_open) {
  rlim_t ceiling = hard == RLIM_INFINITY ? static_cast<rlim_t>(nr_open)
                                         : std::min<rlim_t>(hard, static_cast<rlim_t>(nr_open));
  return std::max(soft, ceiling);
}

void RaiseOpenFileLimit(uint64_t max_clients) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    spdlog::warn("cannot read the open-file limit: {}", std::strerror(errno));
    return;
  }
  rlim_t before = limit.rlim_cur;
  rlim_t wanted = WantedOpenFileLimit(limit.rlim_cur, limit.rlim_max, ReadNrOpen());
  if (wanted > before) {
    limit.rlim_cur = wanted;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      spdlog::warn("cannot raise the open-file limit from {} to {}: {}", before, wanted,
                   std::strerror(errno));
      limit.rlim_cur = before;
    } else {
      spdlog::info("open-file limit raised from {} to {} (the hard limit)", before, wanted);
    }
  }
  if (limit.rlim_cur < max_clients + kOwnDescriptors) {
    spdlog::warn(
        "the open-file limit is {} (hard {}), too low for resp.max_clients = {}: "
        "clients beyond about {} will be refused; raise LimitNOFILE (systemd) or "
        "ulimit -Hn, or lower resp.max_clients",
        limit.rlim_cur, limit.rlim_max, max_clients,
        limit.rlim_cur > kOwnDescriptors ? limit.rlim_cur - kOwnDescriptors : 0);
  }
}

}  // namespace skydb::daemon
