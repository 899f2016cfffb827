#include "skydb/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace skydb {
namespace {

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// Integers print exactly ("42", not "4.2e+01"); other values in the shortest of 15 or 17
// significant digits that reads back as the same double ("0.1", not "0.10000000000000001").
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.15g", v);
  if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void AppendEscaped(std::string& out, const std::string& text, bool quotes) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void AppendLabels(std::string& out, const MetricLabels& labels, const char* extra_name = nullptr,
                  const std::string& extra_value = "") {
  if (labels.empty() && extra_name == nullptr) return;
  out += '{';
  bool first = true;
  auto add = [&](const std::string& name, const std::string& value) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    AppendEscaped(out, value, true);
    out += '"';
  };
  for (const auto& [name, value] : labels) add(name, value);
  if (extra_name != nullptr) add(extra_name, extra_value);
  out += '}';
}

void AppendLine(std::string& out, const std::string& name, const MetricLabels& labels, double value,
                const char* extra_name = nullptr, const std::string& extra_value = "") {
  out += name;
  AppendLabels(out, labels, extra_name, extra_value);
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

void AppendHistogram(std::string& out, const std::string& name, const MetricSample& sample) {
  const HistogramSnapshot& h = sample.histogram;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    AppendLine(out, name + "_bucket", sample.labels, static_cast<double>(cumulative), "le",
               FormatValue(h.bounds[i]));
  }
  AppendLine(out, name + "_bucket", sample.labels, static_cast<double>(h.count), "le", "+Inf");
  AppendLine(out, name + "_sum", sample.labels, h.sum);
  AppendLine(out, name + "_count", sample.labels, static_cast<double>(h.count));
}

bool IsNameChar(char c, bool first, bool colon_ok) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  if (colon_ok && c == ':') return true;
  return first ? alpha : alpha || (c >= '0' && c <= '9');
}

bool IsValidName(const std::string& name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status ValidateSamples(const MetricFamily& family) {
  std::set<MetricLabels> seen;
  for (const auto& sample : family.samples) {
    for (const auto& [label, value] : sample.labels) {
      if (!IsValidName(label, false) || label.rfind("__", 0) == 0 ||
          (family.type == MetricType::kHistogram && label == "le")) {
        return Error::InvalidArgument("metric " + family.name + ": invalid label name '" + label +
                                      "'");
      }
    }
    if (!seen.insert(sample.labels).second) {
      return Error::InvalidArgument("metric " + family.name + ": a label set appears twice");
    }
    const auto& bounds = sample.histogram.bounds;
    for (size_t i = 1; i < bounds.size(); ++i) {
      if (!(bounds[i - 1] < bounds[i])) {
        return Error::InvalidArgument("metric " + family.name + ": bucket bounds must ascend");
      }
    }
  }
  return Ok();
}

}  // namespace

std::string RenderPrometheusText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const auto& family : families) {
    out += "# HELP " + family.name + ' ';
    AppendEscaped(out, family.help, false);
    out += "\n# TYPE " + family.name + ' ' + TypeName(family.type) + '\n';
    for (const auto& sample : family.samples) {
      if (family.type == MetricType::kHistogram) {
        AppendHistogram(out, family.name, sample);
      } else {
        AppendLine(out, family.name, sample.labels, sample.value);
      }
    }
  }
  return out;
}

Status ValidateFamilies(const std::vector<MetricFamily>& families) {
  std::set<std::string> names;
  for (const auto& family : families) {
    if (!IsValidName(family.name, true)) {
      return Error::InvalidArgument("metric name '" + family.name + "' is not valid");
    }
    if (!names.insert(family.name).second) {
      return Error::InvalidArgument("metric " + family.name + " is declared twice");
    }
    if (family.help.empty())
      return Error::InvalidArgument("metric " + family.name + " has no help");
    if (family.type == MetricType::kCounter && !EndsWith(family.name, "_total")) {
      return Error::InvalidArgument("counter " + family.name + " must end in _total");
    }
    if (family.type != MetricType::kCounter && EndsWith(family.name, "_total")) {
      return Error::InvalidArgument("only counters end in _total, not " + family.name);
    }
    SKYDB_RETURN_IF_ERROR(ValidateSamples(family));
  }
  return Ok();
}

void Counter::Add(double amount) {
  double v = value_.load(std::memory_order_relaxed);
  while (!value_.compare_exchange_weak(v, v + amount, std::memory_order_relaxed)) {
  }
}

Counter& MetricsRegistry::AddCounter(std::string name, std::string help) {
  MutexLock lock(mu_);
  Counter& c = counters_.emplace_back();
  instruments_.push_back({std::move(name), std::move(help), MetricType::kCounter, &c});
  return c;
}

Gauge& MetricsRegistry::AddGauge(std::string name, std::string help) {
  MutexLock lock(mu_);
  Gauge& g = gauges_.emplace_back();
  instruments_.push_back({std::move(name), std::move(help), MetricType::kGauge, nullptr, &g});
  return g;
}

AtomicHistogram& MetricsRegistry::AddHistogram(std::string name, std::string help,
                                               std::vector<double> bounds) {
  MutexLock lock(mu_);
  AtomicHistogram& h = histograms_.emplace_back(std::move(bounds));
  instruments_.push_back(
      {std::move(name), std::move(help), MetricType::kHistogram, nullptr, nullptr, &h});
  return h;
}

void MetricsRegistry::AddCollector(Collector collector) {
  MutexLock lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::vector<MetricFamily> MetricsRegistry::Collect() const {
  std::vector<MetricFamily> out;
  std::vector<Collector> collectors;
  {
    MutexLock lock(mu_);
    for (const auto& in : instruments_) {
      MetricSample sample;
      if (in.counter != nullptr) sample.value = in.counter->value();
      if (in.gauge != nullptr) sample.value = in.gauge->value();
      if (in.histogram != nullptr) sample.histogram = in.histogram->Snapshot();
      out.push_back({in.name, in.help, in.type, {std::move(sample)}});
    }
    collectors = collectors_;
  }
  for (const auto& collect : collectors) collect(out);  // outside the lock: they may be slow
  return out;
}

}  // namespace skydb
