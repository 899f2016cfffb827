#include "resp/commands.h"

#include <algorithm>

namespace skydb::resp {

size_t CommandStats::BucketOf(uint64_t usec) {
  // The first bucket whose upper bound is >= usec; kBuckets - 1 (+Inf) above the last.
  return static_cast<size_t>(
      std::lower_bound(kLatencyBoundsUsec.begin(), kLatencyBoundsUsec.end(), usec) -
      kLatencyBoundsUsec.begin());
}

HistogramSnapshot CommandStats::Latency(size_t slot) const {
  HistogramSnapshot h;
  for (uint64_t bound : kLatencyBoundsUsec) h.bounds.push_back(static_cast<double>(bound) / 1e6);
  h.counts.resize(kBuckets);
  for (size_t b = 0; b < kBuckets; ++b) {
    h.counts[b] = Count(kBucketsIndex + slot * kBuckets + b);
    h.count += h.counts[b];
  }
  h.sum = static_cast<double>(usec(slot)) / 1e6;
  return h;
}

void ErrorCounts::Clear() {
  MutexLock lock(mu_);
  counts_.clear();
}

void CommandStats::Reset() {
  for (size_t i = 0; i < kCounters; ++i) {
    reset_at_[i].store(per_command_.Sum(i), std::memory_order_relaxed);
  }
  for (auto& n : rejected) n.store(0, std::memory_order_relaxed);
  for (auto& n : failed) n.store(0, std::memory_order_relaxed);
  errors_total.store(0, std::memory_order_relaxed);
  errors.Clear();
}

}  // namespace skydb::resp
