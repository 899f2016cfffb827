// The exposition format, byte for byte, and the registry around it.
#include "skydb/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "skydb/histogram.h"

namespace skydb {
namespace {

TEST(RenderPrometheusTextTest, GaugeAndCounterWithHelpTypeAndLabels) {
  std::vector<MetricFamily> families = {
      {"things_active", "things now", MetricType::kGauge, {{{}, 3, {}}}},
      {"things_total",
       "things ever",
       MetricType::kCounter,
       {{{{"kind", "a"}}, 10, {}}, {{{"kind", "b"}, {"x", "y"}}, 0.5, {}}}}};
  EXPECT_EQ(RenderPrometheusText(families),
            "# HELP things_active things now\n"
            "# TYPE things_active gauge\n"
            "things_active 3\n"
            "# HELP things_total things ever\n"
            "# TYPE things_total counter\n"
            "things_total{kind=\"a\"} 10\n"
            "things_total{kind=\"b\",x=\"y\"} 0.5\n");
}

TEST(RenderPrometheusTextTest, EscapesLabelValuesAndHelp) {
  std::vector<MetricFamily> families = {{"m",
                                         "back\\slash\nnew \"quoted\"",
                                         MetricType::kGauge,
                                         {{{{"path", "C:\\dir \"x\"\nnext"}}, 1, {}}}}};
  EXPECT_EQ(RenderPrometheusText(families),
            "# HELP m back\\\\slash\\nnew \"quoted\"\n"
            "# TYPE m gauge\n"
            "m{path=\"C:\\\\dir \\\"x\\\"\\nnext\"} 1\n");
}

TEST(RenderPrometheusTextTest, SpecialAndLargeValues) {
  auto render = [](double v) {
    std::string text = RenderPrometheusText({{"v", "h", MetricType::kGauge, {{{}, v, {}}}}});
    return text.substr(text.rfind(' ') + 1);
  };
  EXPECT_EQ(render(std::numeric_limits<double>::infinity()), "+Inf\n");
  EXPECT_EQ(render(-std::numeric_limits<double>::infinity()), "-Inf\n");
  EXPECT_EQ(render(std::nan("")), "NaN\n");
  EXPECT_EQ(render(1073741824), "1073741824\n");
  EXPECT_EQ(render(-2), "-2\n");
  EXPECT_EQ(render(0.25), "0.25\n");
  EXPECT_EQ(render(1e300), "1e+300\n");
  EXPECT_EQ(render(0.1 + 0.2), "0.30000000000000004\n");  // 15 digits would not read back
}

TEST(RenderPrometheusTextTest, HistogramBucketsAreCumulativeEndingInInf) {
  AtomicHistogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) h.Observe(v);
  MetricSample sample{{{"op", "commit"}}, 0, h.Snapshot()};
  std::string text =
      RenderPrometheusText({{"lat_seconds", "latency", MetricType::kHistogram, {sample}}});
  EXPECT_EQ(text,
            "# HELP lat_seconds latency\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{op=\"commit\",le=\"0.1\"} 2\n"
            "lat_seconds_bucket{op=\"commit\",le=\"1\"} 3\n"
            "lat_seconds_bucket{op=\"commit\",le=\"10\"} 4\n"
            "lat_seconds_bucket{op=\"commit\",le=\"+Inf\"} 5\n"
            "lat_seconds_sum{op=\"commit\"} 55.65\n"
            "lat_seconds_count{op=\"commit\"} 5\n");
}

TEST(AtomicHistogramTest, BoundsAreInclusiveAndCountIsTheSumOfBuckets) {
  AtomicHistogram h({1, 2});
  h.Observe(1);
  h.Observe(2);
  h.Observe(2.5);
  auto s = h.Snapshot();
  EXPECT_EQ(s.counts, (std::vector<uint64_t>{1, 1, 1}));
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.sum, 5.5);
}

TEST(AtomicHistogramTest, ConcurrentObservationsAreAllCounted) {
  AtomicHistogram h(ExponentialBounds(1, 2, 4));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h] {
      for (int i = 0; i < 10000; ++i) h.Observe(1);
    });
  }
  for (auto& t : threads) t.join();
  auto s = h.Snapshot();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_DOUBLE_EQ(s.sum, 40000);
}

TEST(ExponentialBoundsTest, Grows) {
  EXPECT_EQ(ExponentialBounds(0.5, 2, 4), (std::vector<double>{0.5, 1, 2, 4}));
}

TEST(ValidateFamiliesTest, AcceptsWellFormedFamilies) {
  AtomicHistogram h({1, 2});
  EXPECT_TRUE(
      ValidateFamilies({{"a_total", "h", MetricType::kCounter, {{{{"x", "1"}}, 1, {}}}},
                        {"ns:b_bytes", "h", MetricType::kGauge, {}},
                        {"c_seconds", "h", MetricType::kHistogram, {{{}, 0, h.Snapshot()}}}})
          .ok());
}

TEST(ValidateFamiliesTest, RejectsWhatTheFormatOrConventionsForbid) {
  struct Case {
    const char* why;
    MetricFamily family;
    const char* message;
  };
  HistogramSnapshot descending{{2, 1}, {0, 0, 0}, 0, 0};
  std::vector<Case> cases = {
      {"counter without _total", {"a", "h", MetricType::kCounter, {}}, "must end in _total"},
      {"gauge with _total", {"a_total", "h", MetricType::kGauge, {}}, "only counters"},
      {"bad name", {"1a", "h", MetricType::kGauge, {}}, "is not valid"},
      {"no help", {"a", "", MetricType::kGauge, {}}, "has no help"},
      {"bad label", {"a", "h", MetricType::kGauge, {{{{"a-b", "x"}}, 1, {}}}}, "invalid label"},
      {"reserved label",
       {"a", "h", MetricType::kGauge, {{{{"__x", "x"}}, 1, {}}}},
       "invalid label"},
      {"le on a histogram",
       {"a", "h", MetricType::kHistogram, {{{{"le", "1"}}, 0, {}}}},
       "invalid label"},
      {"repeated labels", {"a", "h", MetricType::kGauge, {{{}, 1, {}}, {{}, 2, {}}}}, "twice"},
      {"descending bounds", {"a", "h", MetricType::kHistogram, {{{}, 0, descending}}}, "ascend"},
  };
  for (const auto& c : cases) {
    Status s = ValidateFamilies({c.family});
    ASSERT_FALSE(s.ok()) << c.why;
    EXPECT_NE(s.error().message.find(c.message), std::string::npos)
        << c.why << ": " << s.error().message;
  }
  Status dup =
      ValidateFamilies({{"a", "h", MetricType::kGauge, {}}, {"a", "h", MetricType::kGauge, {}}});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("declared twice"), std::string::npos);
}

TEST(MetricsRegistryTest, InstrumentsThenCollectorsInRegistrationOrder) {
  MetricsRegistry registry;
  Counter& requests = registry.AddCounter("requests_total", "requests");
  Gauge& temperature = registry.AddGauge("temperature_celsius", "temperature");
  AtomicHistogram& sizes = registry.AddHistogram("size_bytes", "sizes", {10});
  int collected = 0;
  registry.AddCollector([&collected](std::vector<MetricFamily>& out) {
    ++collected;
    out.push_back({"collected_items", "items", MetricType::kGauge, {{{}, 7, {}}}});
  });
  requests.Add();
  requests.Add(2);
  temperature.Set(-3.5);
  sizes.Observe(11);
  auto families = registry.Collect();
  ASSERT_EQ(families.size(), 4u);
  EXPECT_EQ(families[0].name, "requests_total");
  EXPECT_EQ(families[0].samples[0].value, 3);
  EXPECT_EQ(families[1].samples[0].value, -3.5);
  EXPECT_EQ(families[2].samples[0].histogram.counts, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(families[3].name, "collected_items");
  EXPECT_EQ(collected, 1);
  EXPECT_TRUE(ValidateFamilies(families).ok());
  std::string text = registry.Render();
  EXPECT_NE(text.find("requests_total 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("size_bytes_bucket{le=\"+Inf\"} 1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace skydb
