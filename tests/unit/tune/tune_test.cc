// Tune(): the golden row, the connection property over every core count, floors and caps on
// tiny and huge hosts, the dev profile, and pins.
#include "skydb/tune.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/strings.h"

namespace skydb {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;
constexpr uint64_t kTiB = 1024 * kGiB;

HostFacts Host(uint64_t ram_bytes, int cores) {
  HostFacts host;
  host.ram_bytes = ram_bytes;
  host.ram_source = "config";
  host.cores = cores;
  host.cores_source = "config";
  return host;
}

const Setting& Get(const Settings& settings, const std::string& name) {
  const Setting* s = settings.Find(name);
  if (s == nullptr) {
    ADD_FAILURE() << "no setting " << name;
    static const Setting kMissing;
    return kMissing;
  }
  return *s;
}

std::string Value(const Settings& settings, const std::string& name) {
  return Get(settings, name).value;
}

double Numeric(const Settings& settings, const std::string& name) {
  return Get(settings, name).numeric.value_or(-1);
}

// ---- the golden row ----

TEST(TuneGoldenTest, TwoCores1975MiB) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {});
  EXPECT_EQ(Value(s, "shared_buffers"), "296MB");
  EXPECT_EQ(Value(s, "effective_cache_size"), "790MB");
  EXPECT_EQ(Value(s, "work_mem"), "13MB");
  EXPECT_EQ(Value(s, "maintenance_work_mem"), "98MB");
  EXPECT_EQ(Value(s, "max_connections"), "36");
  EXPECT_EQ(Value(s, "store_pool"), "6");
  EXPECT_EQ(Value(s, "superuser_reserved_connections"), "3");
  EXPECT_EQ(Value(s, "listen_addresses"), "''");
  EXPECT_EQ(s.pools.store_pool, 6);
  EXPECT_EQ(s.pools.max_connections, 36);
  EXPECT_EQ(s.pools.app_pool, 8);
  EXPECT_EQ(s.pools.aux_pool, 2);
  EXPECT_EQ(s.pools.demand, 14);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(TuneGoldenTest, NumericValuesAreInBaseUnits) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {});
  EXPECT_EQ(Numeric(s, "shared_buffers"), 296.0 * kMiB);
  EXPECT_EQ(Numeric(s, "work_mem"), 13.0 * kMiB);
  EXPECT_EQ(Numeric(s, "max_connections"), 36);
  EXPECT_EQ(Numeric(s, "store_pool"), 6);
  EXPECT_EQ(Numeric(s, "checkpoint_completion_target"), 0.9);
  EXPECT_FALSE(Get(s, "listen_addresses").numeric.has_value());
}

TEST(TuneGoldenTest, TheOtherDerivedSettings) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {});
  EXPECT_EQ(Value(s, "autovacuum_work_mem"), "32MB");  // 98MB / 3 workers
  EXPECT_EQ(Value(s, "max_wal_size"), "1024MB");       // 2 × 296MB, raised to the 1GB floor
  EXPECT_EQ(Value(s, "huge_pages"), "try");
  EXPECT_EQ(Value(s, "wal_compression"), "on");
  EXPECT_EQ(Value(s, "wal_init_zero"), "off");
  EXPECT_EQ(Value(s, "checkpoint_completion_target"), "0.9");
  EXPECT_EQ(Value(s, "autovacuum_naptime"), "1s");
  EXPECT_EQ(Value(s, "unix_socket_permissions"), "0700");
  EXPECT_EQ(Value(s, "app_pool"), "8");
  EXPECT_EQ(Value(s, "aux_pool"), "2");
}

TEST(TuneGoldenTest, DerivationsSayHow) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {});
  EXPECT_EQ(Get(s, "shared_buffers").derivation, "15% of 1975 MiB RAM");
  EXPECT_EQ(Get(s, "work_mem").derivation, "25% of 1975 MiB RAM / 36 max_connections");
  EXPECT_EQ(Get(s, "max_connections").derivation,
            "2 x demand 14 (app_pool 8 + 3 x aux_pool 2) + 3 reserved + 5 headroom");
  for (const Setting& item : s.items) {
    EXPECT_FALSE(item.derivation.empty()) << item.name;
    EXPECT_FALSE(item.pinned) << item.name;
  }
}

TEST(TuneGoldenTest, PoolsAreSkydbsOwnNotPostgres) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {});
  for (std::string own : {"app_pool", "aux_pool", "store_pool", "store_writers"}) {
    EXPECT_FALSE(Get(s, own).postgres) << own;
  }
  EXPECT_TRUE(Get(s, "shared_buffers").postgres);
}

// app.max_connections (SKY_DB_MAX_OPEN_CONNS) replaces the derived app pool; max_connections,
// the aux pools and the role's limit (demand) follow from it, and `tune` says where it came from.
TEST(TunePoolsTest, ConfiguredAppPoolRaisesMaxConnections) {
  Settings derived = Tune(Host(8 * kGiB, 2), Profile::kEmbedded, {});
  Settings raised = Tune(Host(8 * kGiB, 2), Profile::kEmbedded, {}, 48);
  EXPECT_EQ(derived.pools.app_pool, 8);
  EXPECT_EQ(raised.pools.app_pool, 48);
  EXPECT_EQ(raised.pools.aux_pool, 8);
  EXPECT_EQ(raised.pools.demand, 48 + 3 * 8);
  EXPECT_GT(std::stoi(Get(raised, "max_connections").value),
            std::stoi(Get(derived, "max_connections").value));
  EXPECT_TRUE(ConnectionsCoverPools(std::stoi(Get(raised, "max_connections").value), raised.pools));
  EXPECT_NE(Get(raised, "app_pool").derivation.find("app.max_connections"), std::string::npos);
}

// One group-commit writer per core (overlapped commits beat one serial writer, more thin the
// batches: docs/performance.md), always at least one and never more than the store pool leaves.
TEST(TunePoolsTest, StoreWritersFollowCoresWithinTheStorePool) {
  EXPECT_EQ(PoolsFor(1).store_writers, 1);
  EXPECT_EQ(PoolsFor(2).store_writers, 2);
  EXPECT_EQ(PoolsFor(4).store_writers, 4);
  EXPECT_EQ(PoolsFor(8).store_writers, 8);
  EXPECT_EQ(PoolsFor(64).store_writers, PoolsFor(64).store_pool - 2);
  for (int cores = 1; cores <= 256; ++cores) {
    Pools p = PoolsFor(cores);
    EXPECT_GE(p.store_writers, 1) << cores;
    EXPECT_LE(p.store_writers, p.store_pool - 2) << cores;
  }
  EXPECT_EQ(Get(Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {}), "store_writers").value, "2");
}

// ---- the connection property ----

// The property, written independently of the library: the connections left after the
// superuser reserve cover the app's pool, its three aux consumers, skydb's store pool and
// the headroom.
bool CoversEveryPool(int max_connections, int reserved, int app_pool, int aux_pool,
                     int store_pool) {
  return max_connections - reserved >= app_pool + 3 * aux_pool + store_pool + 5;
}

std::vector<uint64_t> RamPoints() {
  std::vector<uint64_t> points;
  for (uint64_t ram = 256 * kMiB; ram <= kTiB; ram *= 2) points.push_back(ram);
  for (uint64_t mib : {300ull, 1000ull, 1975ull, 3001ull, 12345ull, 100000ull, 777777ull}) {
    points.push_back(mib * kMiB);
  }
  points.push_back(kTiB - kMiB);
  points.push_back(256 * kMiB + 12345);  // not a whole MiB
  return points;
}

TEST(TunePropertyTest, ConnectionsCoverEveryPoolForEveryCoreCountAndRam) {
  for (int cores = 1; cores <= 256; ++cores) {
    for (uint64_t ram : RamPoints()) {
      Settings s = Tune(Host(ram, cores), Profile::kEmbedded, {});
      auto max_connections = static_cast<int>(Numeric(s, "max_connections"));
      ASSERT_TRUE(CoversEveryPool(
          max_connections, static_cast<int>(Numeric(s, "superuser_reserved_connections")),
          static_cast<int>(Numeric(s, "app_pool")), static_cast<int>(Numeric(s, "aux_pool")),
          static_cast<int>(Numeric(s, "store_pool"))))
          << cores << " cores, " << ram << " bytes";
      ASSERT_TRUE(ConnectionsCoverPools(max_connections, s.pools));
      // work_mem for every connection at once stays within its 25% of RAM.
      ASSERT_LE(Numeric(s, "work_mem") * max_connections, static_cast<double>(ram) / 4)
          << cores << " cores, " << ram << " bytes";
      ASSERT_TRUE(s.warnings.empty());
    }
  }
}

TEST(TunePropertyTest, HistoricalFlatFiftyFailsIt) {
  int first_failure = 0;
  for (int cores = 1; cores <= 256 && first_failure == 0; ++cores) {
    Pools p = PoolsFor(cores);
    if (!CoversEveryPool(50, 3, p.app_pool, p.aux_pool, p.store_pool)) first_failure = cores;
  }
  EXPECT_EQ(first_failure, 5);  // 20 + 3·5 + 9 + 5 = 49 > 47
  EXPECT_FALSE(ConnectionsCoverPools(50, PoolsFor(5)));
  EXPECT_TRUE(ConnectionsCoverPools(50, PoolsFor(4)));
}

TEST(TunePropertyTest, BoundsHoldEverywhere) {
  for (int cores : {1, 2, 3, 4, 7, 8, 9, 16, 64, 256}) {
    for (uint64_t ram : RamPoints()) {
      Settings s = Tune(Host(ram, cores), Profile::kEmbedded, {});
      double shared = Numeric(s, "shared_buffers");
      EXPECT_GE(shared, 32.0 * kMiB);
      EXPECT_LE(shared, 16.0 * kGiB);
      EXPECT_LE(shared, static_cast<double>(ram) * 0.15);  // floors never bind from 256 MiB up
      EXPECT_GE(Numeric(s, "effective_cache_size"), shared);
      EXPECT_GE(Numeric(s, "work_mem"), 64.0 * kKiB);
      EXPECT_LE(Numeric(s, "work_mem"), 256.0 * kMiB);
      EXPECT_GE(Numeric(s, "maintenance_work_mem"), 16.0 * kMiB);
      EXPECT_LE(Numeric(s, "maintenance_work_mem"), 1.0 * kGiB);
      EXPECT_GE(Numeric(s, "autovacuum_work_mem"), 8.0 * kMiB);
      EXPECT_LE(Numeric(s, "autovacuum_work_mem"), Numeric(s, "maintenance_work_mem"));
      EXPECT_GE(Numeric(s, "max_wal_size"), 1.0 * kGiB);
      EXPECT_LE(Numeric(s, "max_wal_size"), 8.0 * kGiB);
      // The worst case (every connection sorting, every autovacuum worker running, one index
      // build) fits in two thirds of RAM, leaving the rest to the OS, skydb and the page cache.
      double worst = shared + Numeric(s, "work_mem") * Numeric(s, "max_connections") +
                     Numeric(s, "maintenance_work_mem") + 3 * Numeric(s, "autovacuum_work_mem");
      EXPECT_LE(worst, static_cast<double>(ram) * 2 / 3) << cores << " cores, " << ram;
    }
  }
}

TEST(TunePropertyTest, MemoryValuesAreWholeMegabytesOrKilobytes) {
  for (uint64_t ram : RamPoints()) {
    Settings s = Tune(Host(ram, 8), Profile::kEmbedded, {});
    for (const Setting& item : s.items) {
      if (!EndsWith(item.value, "MB") && !EndsWith(item.value, "kB")) continue;
      auto unit = EndsWith(item.value, "MB") ? kMiB : kKiB;
      EXPECT_EQ(static_cast<uint64_t>(*item.numeric) % unit, 0u) << item.name;
    }
  }
}

// ---- floors and caps ----

TEST(TuneBoundsTest, Tiny256MiBHost) {
  Settings s = Tune(Host(256 * kMiB, 1), Profile::kEmbedded, {});
  EXPECT_EQ(Value(s, "shared_buffers"), "38MB");
  EXPECT_EQ(Value(s, "effective_cache_size"), "102MB");
  EXPECT_EQ(Value(s, "max_connections"), "28");
  EXPECT_EQ(Value(s, "work_mem"), "2MB");
  EXPECT_EQ(Value(s, "maintenance_work_mem"), "16MB");  // 12MB raised to the floor
  EXPECT_THAT(Get(s, "maintenance_work_mem").derivation, HasSubstr("16MB floor"));
  EXPECT_EQ(Value(s, "autovacuum_work_mem"), "8MB");
  EXPECT_EQ(Value(s, "max_wal_size"), "1024MB");
  EXPECT_EQ(Value(s, "huge_pages"), "try");
}

TEST(TuneBoundsTest, Tiny256MiBHostWithManyCoresGoesBelowOneMegabyte) {
  Settings s = Tune(Host(256 * kMiB, 8), Profile::kEmbedded, {});
  EXPECT_EQ(Value(s, "max_connections"), "120");
  EXPECT_EQ(Value(s, "work_mem"), "546kB");  // 64 MiB / 120, in whole kB
  EXPECT_EQ(Numeric(s, "work_mem"), 546.0 * kKiB);
}

TEST(TuneBoundsTest, SharedBuffersFloorOnATinierHost) {
  Settings s = Tune(Host(128 * kMiB, 1), Profile::kEmbedded, {});
  EXPECT_EQ(Value(s, "shared_buffers"), "32MB");
  EXPECT_THAT(Get(s, "shared_buffers").derivation, HasSubstr("raised to the 32MB floor"));
}

TEST(TuneBoundsTest, Huge1TiBHostHitsTheCaps) {
  Settings s = Tune(Host(kTiB, 256), Profile::kEmbedded, {});
  EXPECT_EQ(Value(s, "shared_buffers"), "16384MB");
  EXPECT_THAT(Get(s, "shared_buffers").derivation, HasSubstr("capped at 16384MB"));
  EXPECT_EQ(Value(s, "effective_cache_size"), "419430MB");
  EXPECT_EQ(Value(s, "max_connections"), "120");
  EXPECT_EQ(Value(s, "work_mem"), "256MB");
  EXPECT_EQ(Value(s, "maintenance_work_mem"), "1024MB");
  EXPECT_EQ(Value(s, "autovacuum_work_mem"), "341MB");
  EXPECT_EQ(Value(s, "max_wal_size"), "8192MB");
}

TEST(TuneBoundsTest, PoolsClampAtBothEnds) {
  EXPECT_EQ(PoolsFor(0).app_pool, 4);
  EXPECT_EQ(PoolsFor(-3).max_connections, PoolsFor(1).max_connections);
  EXPECT_EQ(PoolsFor(1).app_pool, 4);
  EXPECT_EQ(PoolsFor(1).aux_pool, 2);
  EXPECT_EQ(PoolsFor(8).app_pool, 32);
  EXPECT_EQ(PoolsFor(8).aux_pool, 8);
  EXPECT_EQ(PoolsFor(1 << 30).max_connections, 120);
}

TEST(TuneBoundsTest, AbsurdInputsDoNotOverflow) {
  Settings s = Tune(Host(~uint64_t{0}, 1 << 30), Profile::kEmbedded, {});
  EXPECT_EQ(Value(s, "shared_buffers"), "16384MB");
  Settings zero = Tune(Host(0, 0), Profile::kEmbedded, {});
  EXPECT_EQ(Value(zero, "shared_buffers"), "32MB");
  EXPECT_EQ(Value(zero, "work_mem"), "64kB");
}

// ---- the dev profile ----

TEST(TuneDevTest, SmallFixedConstantsWhateverTheHost) {
  for (const HostFacts& host : {Host(1975 * kMiB, 2), Host(kTiB, 256), Host(256 * kMiB, 1)}) {
    Settings s = Tune(host, Profile::kDev, {});
    EXPECT_EQ(s.profile, Profile::kDev);
    EXPECT_EQ(Value(s, "shared_buffers"), "32MB");
    EXPECT_EQ(Value(s, "work_mem"), "4MB");
    EXPECT_EQ(Value(s, "max_connections"), "28");
    EXPECT_EQ(Value(s, "store_pool"), "6");
    EXPECT_EQ(Value(s, "listen_addresses"), "''");
    EXPECT_TRUE(ConnectionsCoverPools(28, s.pools));
  }
}

TEST(TuneDevTest, SameSettingNamesAsEmbedded) {
  Settings dev = Tune(Host(1975 * kMiB, 2), Profile::kDev, {});
  Settings embedded = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {});
  ASSERT_EQ(dev.items.size(), embedded.items.size());
  for (size_t i = 0; i < dev.items.size(); ++i)
    EXPECT_EQ(dev.items[i].name, embedded.items[i].name);
}

TEST(ProfileTest, NamesRoundTrip) {
  for (Profile p : {Profile::kEmbedded, Profile::kDev}) {
    auto parsed = ParseProfile(ProfileName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParseProfile("prod");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(bad.error().message, HasSubstr("'prod'"));
  EXPECT_THAT(bad.error().message, HasSubstr("embedded or dev"));
}

// ---- pins ----

TEST(TunePinTest, PinWinsAndIsReportedAsPinned) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {{"shared_buffers", "1GB"}});
  const Setting& shared = Get(s, "shared_buffers");
  EXPECT_EQ(shared.value, "1GB");
  EXPECT_TRUE(shared.pinned);
  EXPECT_EQ(shared.derivation, "pinned in config");
  EXPECT_EQ(shared.derived_value, "296MB");
  EXPECT_EQ(shared.numeric, 1.0 * kGiB);
  EXPECT_FALSE(Get(s, "work_mem").pinned);
}

TEST(TunePinTest, DependentDerivationsFollowThePin) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {{"shared_buffers", "1GB"}});
  EXPECT_EQ(Value(s, "max_wal_size"), "2048MB");
  EXPECT_EQ(Value(s, "effective_cache_size"), "1024MB");  // never below the buffer pool
  EXPECT_THAT(Get(s, "max_wal_size").derivation, HasSubstr("pinned 1GB"));
}

TEST(TunePinTest, PinnedMaxConnectionsRescalesWorkMem) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {{"max_connections", "200"}});
  EXPECT_EQ(Value(s, "max_connections"), "200");
  EXPECT_EQ(Value(s, "work_mem"), "2MB");  // 493.75 MiB / 200
  EXPECT_EQ(Numeric(s, "max_connections"), 200);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(TunePinTest, PinnedMaxConnectionsTooSmallIsAWarning) {
  Settings s = Tune(Host(1975 * kMiB, 8), Profile::kEmbedded, {{"max_connections", "50"}});
  EXPECT_EQ(Value(s, "max_connections"), "50");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("max_connections pinned 50"));
  EXPECT_THAT(s.warnings[0], HasSubstr("73"));
}

TEST(TunePinTest, BareNumberPinsUsePostgresUnits) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded,
                    {{"shared_buffers", "16384"}, {"work_mem", "4096"}});
  EXPECT_EQ(Numeric(s, "shared_buffers"), 16384.0 * 8192);  // 8kB blocks
  EXPECT_EQ(Numeric(s, "work_mem"), 4096.0 * 1024);         // kB
}

TEST(TunePinTest, UnparsablePinKeepsDerivedInputsForOthers) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {{"shared_buffers", "lots"}});
  EXPECT_EQ(Value(s, "shared_buffers"), "lots");  // PostgreSQL will say what is wrong
  EXPECT_FALSE(Get(s, "shared_buffers").numeric.has_value());
  EXPECT_EQ(Value(s, "max_wal_size"), "1024MB");
}

TEST(TunePinTest, PinForAnUnderivedSettingIsAppended) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded,
                    {{"log_min_duration_statement", "250ms"}, {"random_page_cost", "1.1"}});
  const Setting& logged = Get(s, "log_min_duration_statement");
  EXPECT_TRUE(logged.pinned);
  EXPECT_TRUE(logged.postgres);
  EXPECT_EQ(logged.value, "250ms");
  EXPECT_EQ(logged.derivation, "pinned in config");
  EXPECT_TRUE(logged.derived_value.empty());
  EXPECT_EQ(Numeric(s, "random_page_cost"), 1.1);
  EXPECT_EQ(s.items.back().name, "random_page_cost");  // after every derived setting
}

TEST(TunePinTest, PinNamingSkydbsOwnValueIsIgnoredWithAWarning) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {{"store_pool", "50"}});
  EXPECT_EQ(Value(s, "store_pool"), "6");
  EXPECT_FALSE(Get(s, "store_pool").pinned);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("store_pool"));
}

TEST(TunePinTest, InvalidSettingNameIsSkippedWithAWarning) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kEmbedded, {{"x = 1\nfsync", "off"}});
  EXPECT_EQ(s.Find("x = 1\nfsync"), nullptr);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], StartsWith("ignored"));
}

TEST(TunePinTest, PinsApplyToTheDevProfileToo) {
  Settings s = Tune(Host(1975 * kMiB, 2), Profile::kDev, {{"shared_buffers", "64MB"}});
  EXPECT_EQ(Value(s, "shared_buffers"), "64MB");
  EXPECT_TRUE(Get(s, "shared_buffers").pinned);
  EXPECT_EQ(Get(s, "shared_buffers").derived_value, "32MB");
}

TEST(SettingNameTest, Validity) {
  for (std::string ok : {"shared_buffers", "auto_explain.log_min_duration", "_x", "A1"}) {
    EXPECT_TRUE(IsValidSettingName(ok)) << ok;
  }
  for (std::string bad : {"", "1abc", ".x", "a b", "a=b", "a\nb", "a-b", "é"}) {
    EXPECT_FALSE(IsValidSettingName(bad)) << bad;
  }
}

}  // namespace
}  // namespace skydb
