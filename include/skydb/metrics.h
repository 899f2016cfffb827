// Metrics: families of samples rendered in the Prometheus text exposition format (0.0.4), and a
// small registry of counters, gauges and histograms plus collectors that read values at scrape
// time (the store's and the server's own stats structs).
//
// RenderPrometheusText is a pure function: every family gets its # HELP and # TYPE lines,
// label values and help text are escaped as the format requires, histograms get cumulative
// _bucket lines ending in le="+Inf", then _sum and _count.
//
// Thread-safety: Counter, Gauge and AtomicHistogram are lock-free; MetricsRegistry may be
// added to and collected from any thread. Ownership: the registry owns its instruments;
// references it hands out stay valid for its lifetime.
// Failure: ValidateFamilies names the family and what is wrong with it.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "skydb/histogram.h"
#include "skydb/mutex.h"
#include "skydb/result.h"

namespace skydb {

enum class MetricType { kCounter, kGauge, kHistogram };

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricSample {
  MetricLabels labels;
  double value = 0;             // counters and gauges
  HistogramSnapshot histogram;  // histograms
};

struct MetricFamily {
  std::string name;  // counters end in _total; units in the name: _seconds, _bytes
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<MetricSample> samples;
};

std::string RenderPrometheusText(const std::vector<MetricFamily>& families);

// Metric and label names match the format's grammar, counters end in _total, no family name
// repeats, histogram bounds ascend, and no sample repeats a label set.
Status ValidateFamilies(const std::vector<MetricFamily>& families);

class Counter {
 public:
  void Add(double amount = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class MetricsRegistry {
 public:
  // Appends families whose values are read at scrape time. Must not block for long: it runs
  // on the scrape path.
  using Collector = std::function<void(std::vector<MetricFamily>& out)>;

  Counter& AddCounter(std::string name, std::string help);
  Gauge& AddGauge(std::string name, std::string help);
  AtomicHistogram& AddHistogram(std::string name, std::string help, std::vector<double> bounds);
  void AddCollector(Collector collector);

  // Instruments first, in registration order, then each collector's families.
  std::vector<MetricFamily> Collect() const;
  std::string Render() const { return RenderPrometheusText(Collect()); }

 private:
  struct Instrument {
    std::string name;
    std::string help;
    MetricType type;
    Counter* counter = nullptr;
    Gauge* gauge = nullptr;
    AtomicHistogram* histogram = nullptr;
  };
  mutable Mutex mu_;
  std::deque<Counter> counters_ GUARDED_BY(mu_);  // deques: references survive growth
  std::deque<Gauge> gauges_ GUARDED_BY(mu_);
  std::deque<AtomicHistogram> histograms_ GUARDED_BY(mu_);
  std::vector<Instrument> instruments_ GUARDED_BY(mu_);
  std::vector<Collector> collectors_ GUARDED_BY(mu_);
};

}  // namespace skydb
