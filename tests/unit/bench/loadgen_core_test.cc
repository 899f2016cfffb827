// The load generator's pure rules: reply parsing, INFO, the histogram, merging the load
// threads' tallies, the store check and every validity gate, without a server.
#include "loadgen_core.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace skydb::loadgen {
namespace {

TEST(LoadgenParseReply, ReadsEveryShape) {
  Reply r;
  EXPECT_EQ(ParseReply("+OK\r\n", &r), 5);
  EXPECT_EQ(r.type, Reply::Type::kSimple);
  EXPECT_EQ(r.text, "OK");
  EXPECT_EQ(ParseReply("-ERR no\r\n", &r), 9);
  EXPECT_EQ(r.type, Reply::Type::kError);
  EXPECT_EQ(r.text, "ERR no");
  EXPECT_EQ(ParseReply(":-42\r\n", &r), 6);
  EXPECT_EQ(r.integer, -42);
  EXPECT_EQ(ParseReply("$-1\r\n", &r), 5);
  EXPECT_EQ(r.type, Reply::Type::kNil);
  EXPECT_EQ(ParseReply("$5\r\na\r\nbc\r\n", &r), 11);
  EXPECT_EQ(r.type, Reply::Type::kBulk);
  EXPECT_EQ(r.text, "a\r\nbc");
  EXPECT_EQ(ParseReply("*2\r\n$1\r\nx\r\n:1\r\n+extra", &r), 15);
  ASSERT_EQ(r.elements.size(), 2u);
  EXPECT_EQ(r.elements[0].text, "x");
  EXPECT_EQ(r.elements[1].integer, 1);
}

TEST(LoadgenParseReply, AsksForMoreAtEveryCutOfAWholeReply) {
  const std::string whole = "*2\r\n$3\r\nabc\r\n+OK\r\n";
  Reply r;
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    EXPECT_EQ(ParseReply(whole.substr(0, cut), &r), 0) << "cut at " << cut;
  }
  EXPECT_EQ(ParseReply(whole, &r), static_cast<long>(whole.size()));
}

TEST(LoadgenParseReply, RejectsWhatIsNotResp) {
  Reply r;
  EXPECT_EQ(ParseReply("hello\r\n", &r), -1);
  EXPECT_EQ(ParseReply("$x\r\n", &r), -1);
  EXPECT_EQ(ParseReply("$-2\r\n", &r), -1);
  EXPECT_EQ(ParseReply("$3\r\nabcd\r\n", &r), -1);  // payload longer than announced
  EXPECT_EQ(ParseReply(":\r\n", &r), -1);
}

TEST(LoadgenAppendCommand, EncodesAnArrayOfBulkStrings) {
  std::string out;
  AppendCommand(&out, {"SET", "k", "v\r\n", "EX", "1800"});
  EXPECT_EQ(out, "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n$2\r\nEX\r\n$4\r\n1800\r\n");
}

TEST(LoadgenParseInfo, ReadsFieldsAndSkipsHeaders) {
  auto f = ParseInfo(
      "# Server\r\nredis_version:7.0.0\r\n\r\n# Persistence\r\nstore_kind:tiered\r\n"
      "store_description:private cluster at /d:x\r\n");
  EXPECT_EQ(f["redis_version"], "7.0.0");
  EXPECT_EQ(f["store_kind"], "tiered");
  EXPECT_EQ(f["store_description"], "private cluster at /d:x");
  EXPECT_EQ(f.count("# Server"), 0u);
}

TEST(LoadgenHistogram, IsExactForSmallValuesAndWithinTwoPercentAboveThem) {
  Histogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.Quantile(0.5), 50u);
  EXPECT_EQ(h.Quantile(0.99), 99u);
  EXPECT_EQ(h.Quantile(1.0), 100u);
  EXPECT_EQ(h.max(), 100u);

  Histogram big;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values;
  for (int i = 0; i < 10000; ++i) values.push_back(1000 + rng() % 50'000'000);
  for (uint64_t v : values) big.Record(v);
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.95, 0.99, 0.999}) {
    auto exact = static_cast<double>(values[static_cast<size_t>(std::ceil(q * 10000)) - 1]);
    EXPECT_NEAR(static_cast<double>(big.Quantile(q)), exact, exact * 0.016) << "q=" << q;
  }
  EXPECT_EQ(big.max(), values.back());
  EXPECT_LE(big.Quantile(1.0), big.max());
}

TEST(LoadgenHistogram, MergesAndReportsZeroWhenEmpty) {
  Histogram a, b;
  EXPECT_EQ(a.Quantile(0.99), 0u);
  a.Record(10);
  b.Record(1'000'000);
  a.Merge(b);
  EXPECT_EQ(a.count(), 2u);
  EXPECT_EQ(a.max(), 1'000'000u);
  EXPECT_EQ(a.Quantile(0.5), 10u);
}

TEST(LoadgenHistogram, MergingThreadsIsExactlyRecordingInOne) {
  // Three "threads" each record their share; the merge must equal one histogram that saw
  // every sample, bucket for bucket, so no quantile moves when the load is split.
  std::mt19937_64 rng(11);
  Histogram whole, parts[3];
  for (int i = 0; i < 30000; ++i) {
    uint64_t v = rng() % 4 == 0 ? rng() % 128 : 1000 + rng() % 80'000'000;
    whole.Record(v);
    parts[rng() % 3].Record(v);
  }
  Histogram merged;
  for (const auto& part : parts) merged.Merge(part);
  EXPECT_TRUE(merged == whole);
  EXPECT_EQ(merged.count(), 30000u);
  EXPECT_EQ(merged.max(), whole.max());
  for (double q : {0.001, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(merged.Quantile(q), whole.Quantile(q)) << "q=" << q;
  }
  Histogram empty;
  merged.Merge(empty);
  EXPECT_TRUE(merged == whole);
}

TEST(LoadgenLoadTally, MergeSumsEveryCounterAndKeepsTheEarliestFailure) {
  LoadTally a, b;
  a.established = 3;
  a.attempts = 100;
  a.errors = 2;
  a.error_replies = 1;
  a.stale_reads = 1;
  a.interactions = 90;
  a.writes_acked = 89;
  a.expires_acked = 9;
  a.run_writes = 120;
  a.read_hits = 80;
  a.interaction.Record(500);
  a.get.Record(200);
  a.set.Record(300);
  a.expire.Record(150);
  a.first_failure = "SET: later";
  a.first_failure_ns = 2000;
  b.established = 2;
  b.attempts = 50;
  b.errors = 3;
  b.bad_replies = 1;
  b.dropped = 1;
  b.unfinished = 1;
  b.missed = 7;
  b.interactions = 45;
  b.writes_acked = 45;
  b.expires_acked = 4;
  b.run_writes = 60;
  b.read_hits = 40;
  b.interaction.Record(900'000);
  b.get.Record(100);
  b.set.Record(100);
  b.expire.Record(120);
  b.first_failure = "GET: earlier";
  b.first_failure_ns = 1000;

  LoadTally sum = a;
  sum.Merge(b);
  EXPECT_EQ(sum.established, 5);
  EXPECT_EQ(sum.attempts, 150u);
  EXPECT_EQ(sum.errors, 5u);
  EXPECT_EQ(sum.error_replies, 1u);
  EXPECT_EQ(sum.bad_replies, 1u);
  EXPECT_EQ(sum.stale_reads, 1u);
  EXPECT_EQ(sum.dropped, 1u);
  EXPECT_EQ(sum.unfinished, 1u);
  EXPECT_EQ(sum.missed, 7u);
  EXPECT_EQ(sum.interactions, 135u);
  EXPECT_EQ(sum.writes_acked, 134u);
  EXPECT_EQ(sum.read_hits, 120u);
  EXPECT_EQ(sum.interaction.count(), 2u);
  EXPECT_EQ(sum.interaction.max(), 900'000u);
  EXPECT_EQ(sum.get.count(), 2u);
  EXPECT_EQ(sum.set.count(), 2u);
  EXPECT_EQ(sum.expires_acked, 13u);
  EXPECT_EQ(sum.run_writes, 180u);
  EXPECT_EQ(sum.expire.count(), 2u);
  EXPECT_EQ(sum.first_failure, "GET: earlier");
  EXPECT_EQ(sum.first_failure_ns, 1000);

  LoadTally clean;  // a thread that saw no failure keeps the other's
  clean.Merge(a);
  EXPECT_EQ(clean.first_failure, "SET: later");
  a.Merge(LoadTally{});
  EXPECT_EQ(a.first_failure, "SET: later");
}

TEST(LoadgenCpuCapacity, IsOneCorePerThreadUpToTheCoresAvailable) {
  EXPECT_DOUBLE_EQ(CpuCapacityCores(1, 2), 1);
  EXPECT_DOUBLE_EQ(CpuCapacityCores(2, 2), 2);
  EXPECT_DOUBLE_EQ(CpuCapacityCores(4, 2), 2);
  EXPECT_DOUBLE_EQ(CpuCapacityCores(2, 1), 1);
  EXPECT_DOUBLE_EQ(CpuCapacityCores(1, 0), 1);  // an unreadable affinity mask still has one
}

std::map<std::string, std::string> SkydbInfo(const std::string& kind, const std::string& dur) {
  return {{"redis_version", "7.0.0"},
          {"skydb_version", "0.1.0"},
          {"store_kind", kind},
          {"store_durability", dur}};
}

TEST(LoadgenCheckStore, AcceptsOnlyTheStoreAndDurabilityAskedFor) {
  EXPECT_EQ(CheckStore({"tiered", "sync"}, SkydbInfo("tiered", "sync")), std::nullopt);
  EXPECT_EQ(CheckStore({"memory", "none"}, SkydbInfo("memory", "none")), std::nullopt);
  auto wrong_kind = CheckStore({"tiered", "sync"}, SkydbInfo("memory", "none"));
  ASSERT_TRUE(wrong_kind);
  EXPECT_NE(wrong_kind->find("store_kind memory"), std::string::npos);
  auto wrong_durability = CheckStore({"tiered", "sync"}, SkydbInfo("tiered", "async"));
  ASSERT_TRUE(wrong_durability);
  EXPECT_NE(wrong_durability->find("store_durability async"), std::string::npos);
  EXPECT_TRUE(CheckStore({"tiered", "sync"}, {{"redis_version", "7.0.15"}}));
}

TEST(LoadgenCheckStore, ARedisArmMustBeRealRedisWithThePersistenceAskedFor) {
  std::map<std::string, std::string> redis = {
      {"redis_version", "7.0.15"}, {"config:appendonly", "yes"}, {"config:appendfsync", "always"}};
  EXPECT_EQ(CheckStore({"redis", "always"}, redis), std::nullopt);
  auto everysec = CheckStore({"redis", "everysec"}, redis);
  ASSERT_TRUE(everysec);
  EXPECT_NE(everysec->find("appendfsync always"), std::string::npos);
  EXPECT_TRUE(CheckStore({"redis", "off"}, redis));
  redis["config:appendonly"] = "no";
  EXPECT_EQ(CheckStore({"redis", "off"}, redis), std::nullopt);
  EXPECT_TRUE(CheckStore({"redis", "always"}, redis));
  auto skydb = CheckStore({"redis", "off"}, SkydbInfo("memory", "none"));
  ASSERT_TRUE(skydb);  // skydb answers redis_version too; skydb_version gives it away
  EXPECT_NE(skydb->find("skydb"), std::string::npos);
}

TEST(LoadgenValidateExpectation, RejectsCombinationsThatCannotBeChecked) {
  EXPECT_EQ(ValidateExpectation({"tiered", "async"}), std::nullopt);
  EXPECT_EQ(ValidateExpectation({"redis", "everysec"}), std::nullopt);
  EXPECT_TRUE(ValidateExpectation({"postgres", "sync"}));
  EXPECT_TRUE(ValidateExpectation({"memory", "sync"}));
  EXPECT_TRUE(ValidateExpectation({"tiered", ""}));
}

RunFacts GoodRun() {
  RunFacts f;
  f.sessions_wanted = 8;
  f.sessions_established = 8;
  f.attempts = 10000;
  f.errors = 0;
  f.writes_acked = 9000;
  f.generator_cpu_seconds = 2;
  f.wall_seconds = 10;
  f.cpu_capacity_cores = 1;
  return f;
}

TEST(LoadgenInvalidReasons, AGoodRunIsValid) {
  EXPECT_TRUE(InvalidReasons(GoodRun(), Limits{}).empty());
  EXPECT_DOUBLE_EQ(CpuFraction(GoodRun()), 0.2);
}

struct GateCase {
  const char* name;
  void (*spoil)(RunFacts&);
  const char* reason_contains;
};

TEST(LoadgenInvalidReasons, EachGateFiresAloneAndSaysWhy) {
  const GateCase cases[] = {
      {"sessions", [](RunFacts& f) { f.sessions_established = 7; }, "only 7 of 8 sessions"},
      {"errors", [](RunFacts& f) { f.errors = 11; }, "11 errors in 10000"},
      {"cpu", [](RunFacts& f) { f.generator_cpu_seconds = 7.1; }, "71% of its 1.00 core"},
      {"writes", [](RunFacts& f) { f.writes_acked = 0; }, "no write was acknowledged"},
      {"foreign", [](RunFacts& f) { f.foreign_cpu_seconds = 2.6; },
       "other processes used 0.26 cores"},
      {"store", [](RunFacts& f) { f.store_mismatch = "INFO reports store_kind memory"; },
       "store check: INFO reports store_kind memory"},
  };
  for (const auto& c : cases) {
    RunFacts f = GoodRun();
    c.spoil(f);
    auto reasons = InvalidReasons(f, Limits{});
    ASSERT_EQ(reasons.size(), 1u) << c.name;
    EXPECT_NE(reasons[0].find(c.reason_contains), std::string::npos)
        << c.name << ": " << reasons[0];
  }
}

TEST(LoadgenInvalidReasons, SeveralThreadsAreJudgedOnTheirCapacityAndEachAlone) {
  RunFacts f = GoodRun();
  f.threads = 2;
  f.cpu_capacity_cores = 2;
  f.generator_cpu_seconds = 12;  // 1.2 cores of 2
  f.thread_cpu_seconds = {6.5, 5.4};
  EXPECT_TRUE(InvalidReasons(f, Limits{}).empty());
  EXPECT_DOUBLE_EQ(CpuFraction(f), 0.6);
  EXPECT_DOUBLE_EQ(CpuCores(f), 1.2);

  f.thread_cpu_seconds = {7.5, 4.4};  // the process is below its gate, one loop is not
  auto reasons = InvalidReasons(f, Limits{});
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("load thread 0 used 75% of a core"), std::string::npos) << reasons[0];

  f.generator_cpu_seconds = 15;  // 75% of two cores
  f.thread_cpu_seconds = {7.0, 7.0};
  reasons = InvalidReasons(f, Limits{});
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("75% of its 2.00 core(s) (1.50 cores busy, 2 load thread(s)"),
            std::string::npos)
      << reasons[0];

  RunFacts one = GoodRun();  // one thread: the process gate alone, never said twice
  one.generator_cpu_seconds = 7.5;
  one.thread_cpu_seconds = {7.4};
  EXPECT_EQ(InvalidReasons(one, Limits{}).size(), 1u);
}

TEST(LoadgenInvalidReasons, LimitsAreInclusiveAndConfigurable) {
  RunFacts f = GoodRun();
  f.errors = 10;                // exactly 0.1%
  f.generator_cpu_seconds = 7;  // exactly 70%
  f.foreign_cpu_seconds = 2.5;  // exactly 0.25 cores
  EXPECT_TRUE(InvalidReasons(f, Limits{}).empty());
  EXPECT_EQ(InvalidReasons(f, Limits{0.0, 0.5, 0.1}).size(), 3u);
  RunFacts none;
  none.errors = 1;  // errors with no interaction at all
  EXPECT_FALSE(InvalidReasons(none, Limits{}).empty());
}

}  // namespace
}  // namespace skydb::loadgen
