// A lock-free histogram with fixed bucket bounds, for hot paths (the store's commit loop) that
// must not depend on the metrics library. Snapshot() gives the value the metrics layer renders.
//
// Thread-safety: Observe and Snapshot may run concurrently from any thread. A snapshot's count
// is the sum of its buckets; its sum may lag a concurrent Observe by that one observation.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace skydb {

struct HistogramSnapshot {
  std::vector<double> bounds;    // upper bounds (le), ascending; +Inf is implied
  std::vector<uint64_t> counts;  // per bucket, not cumulative; bounds.size() + 1 entries
  uint64_t count = 0;
  double sum = 0;
};

class AtomicHistogram {
 public:
  // `bounds` must be ascending and finite.
  explicit AtomicHistogram(std::vector<double> bounds);

  void Observe(double value);
  HistogramSnapshot Snapshot() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// `count` bounds: start, start·factor, start·factor², ...
std::vector<double> ExponentialBounds(double start, double factor, int count);

}  // namespace skydb
