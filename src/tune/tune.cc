// Tune(): the embedded profile's formulas, the dev profile's constants, and their floors and
// caps, each as docs/tuning.md states and explains it. No I/O.
#include "skydb/tune.h"

#include <algorithm>
#include <utility>

#include "tune/pg_values.h"
#include "tune/settings_builder.h"

namespace skydb {
namespace {

using tune_internal::FloorMemory;
using tune_internal::FormatMemory;
using tune_internal::kGiB;
using tune_internal::kMiB;
using tune_internal::SettingsBuilder;

// Floors and caps; docs/tuning.md gives the reason for each. None binds on the golden row.
constexpr uint64_t kSharedBuffersFloor = 32 * kMiB;
constexpr uint64_t kSharedBuffersCap = 16 * kGiB;
constexpr uint64_t kWorkMemCap = 256 * kMiB;  // the floor is PostgreSQL's 64kB minimum
constexpr uint64_t kMaintenanceWorkMemFloor = 16 * kMiB;
constexpr uint64_t kMaintenanceWorkMemCap = 1 * kGiB;
constexpr uint64_t kAutovacuumWorkMemFloor = 8 * kMiB;
constexpr uint64_t kAutovacuumWorkMemCap = 1 * kGiB;
constexpr uint64_t kMaxWalSizeFloor = 1 * kGiB;  // PostgreSQL's own default
constexpr uint64_t kMaxWalSizeCap = 8 * kGiB;
constexpr int kMaxWalSizeBufferMultiple = 2;
constexpr int kAutovacuumWorkers = 3;  // PostgreSQL's default autovacuum_max_workers
// Keeps RAM × percent far from overflow; 64 PiB is beyond any host this will meet.
constexpr uint64_t kMaxTunedRam = uint64_t{1} << 56;
// Guards 4·cores against overflow; the pools clamp long before this.
constexpr int kMaxTunedCores = 1 << 20;

// PostgreSQL's unit for a bare number in each memory setting, to read pins back.
constexpr double kBlockUnit = 8192;     // shared_buffers, effective_cache_size
constexpr double kKilobyteUnit = 1024;  // work_mem, maintenance_work_mem, autovacuum_work_mem
constexpr double kMegabyteUnit = 1024.0 * 1024;  // max_wal_size

struct Bounded {
  uint64_t bytes = 0;
  std::string note;  // "" or why the floor or cap bound
};

// Floors `raw` to PostgreSQL units (whole MB), then applies `floor` and `cap` (0 = none).
Bounded Bound(uint64_t raw, uint64_t floor, uint64_t cap) {
  uint64_t bytes = FloorMemory(raw);
  if (floor != 0 && bytes < floor) {
    return {floor,
            " = " + FormatMemory(bytes) + ", raised to the " + FormatMemory(floor) + " floor"};
  }
  if (cap != 0 && bytes > cap) {
    return {cap, " = " + FormatMemory(bytes) + ", capped at " + FormatMemory(cap)};
  }
  if (bytes > raw) return {bytes, ", raised to PostgreSQL's minimum " + FormatMemory(bytes)};
  return {bytes, ""};
}

uint64_t PercentOf(uint64_t bytes, int percent) { return bytes * percent / 100; }

std::string PercentOfRam(int percent, uint64_t ram) {
  return std::to_string(percent) + "% of " + tune_internal::MebibytesText(ram) + " RAM";
}

void AddSocketSettings(SettingsBuilder& b) {
  b.AddWord("listen_addresses", "''", "unix socket only: no TCP listener");
  b.AddWord("unix_socket_permissions", "0700", "only the service user may use the socket");
}

void AddConnectionSettings(SettingsBuilder& b, const Pools& p) {
  b.AddNumber("max_connections", p.max_connections,
              "2 x demand " + std::to_string(p.demand) + " (app_pool " +
                  std::to_string(p.app_pool) + " + 3 x aux_pool " + std::to_string(p.aux_pool) +
                  ") + " + std::to_string(p.reserved) + " reserved + " +
                  std::to_string(kConnectionHeadroom) + " headroom");
  b.AddNumber("superuser_reserved_connections", p.reserved,
              "kept for superuser maintenance when every pool is full");
}

void AddSharedMemory(SettingsBuilder& b, uint64_t ram) {
  auto shared = Bound(PercentOf(ram, 15), kSharedBuffersFloor, kSharedBuffersCap);
  b.AddMemory("shared_buffers", shared.bytes, PercentOfRam(15, ram) + shared.note, kBlockUnit);
  b.AddWord("huge_pages", "try", "huge pages when the kernel has them reserved, else normal pages");
  // A planner hint; never below the buffer pool it includes.
  auto buffers = b.EffectiveValue("shared_buffers");
  auto cache = Bound(PercentOf(ram, 40), 0, 0);
  if (cache.bytes < buffers.Bytes()) {
    cache = {FloorMemory(buffers.Bytes()), ", raised to shared_buffers " + buffers.label};
  }
  b.AddMemory("effective_cache_size", cache.bytes, PercentOfRam(40, ram) + cache.note, kBlockUnit);
}

void AddWorkMemory(SettingsBuilder& b, uint64_t ram) {
  auto connections = b.EffectiveValue("max_connections");
  auto divisor = static_cast<uint64_t>(std::max(connections.Count(), 1));
  auto work = Bound(PercentOf(ram, 25) / divisor, 0, kWorkMemCap);
  b.AddMemory("work_mem", work.bytes,
              PercentOfRam(25, ram) + " / " + connections.label + " max_connections" + work.note,
              kKilobyteUnit);
  auto maintenance = Bound(PercentOf(ram, 5), kMaintenanceWorkMemFloor, kMaintenanceWorkMemCap);
  b.AddMemory("maintenance_work_mem", maintenance.bytes, PercentOfRam(5, ram) + maintenance.note,
              kKilobyteUnit);
  auto maintenance_now = b.EffectiveValue("maintenance_work_mem");
  auto autovacuum = Bound(maintenance_now.Bytes() / kAutovacuumWorkers, kAutovacuumWorkMemFloor,
                          kAutovacuumWorkMemCap);
  b.AddMemory("autovacuum_work_mem", autovacuum.bytes,
              "maintenance_work_mem " + maintenance_now.label + " / " +
                  std::to_string(kAutovacuumWorkers) + " autovacuum workers" + autovacuum.note,
              kKilobyteUnit);
}

void AddMaxWalSize(SettingsBuilder& b) {
  auto buffers = b.EffectiveValue("shared_buffers");
  auto wal = Bound(buffers.Bytes() * kMaxWalSizeBufferMultiple, kMaxWalSizeFloor, kMaxWalSizeCap);
  b.AddMemory(
      "max_wal_size", wal.bytes,
      std::to_string(kMaxWalSizeBufferMultiple) + " x shared_buffers " + buffers.label + wal.note,
      kMegabyteUnit);
}

void AddEmbeddedMemory(SettingsBuilder& b, uint64_t ram) {
  AddSharedMemory(b, ram);
  AddWorkMemory(b, ram);
  AddMaxWalSize(b);
}

void AddDevMemory(SettingsBuilder& b) {
  const std::string why = "development profile constant";
  b.AddMemory("shared_buffers", 32 * kMiB, why, kBlockUnit);
  b.AddWord("huge_pages", "try", "huge pages when the kernel has them reserved, else normal pages");
  b.AddMemory("effective_cache_size", 128 * kMiB, why, kBlockUnit);
  b.AddMemory("work_mem", 4 * kMiB, why, kKilobyteUnit);
  b.AddMemory("maintenance_work_mem", 32 * kMiB, why, kKilobyteUnit);
  b.AddMemory("autovacuum_work_mem", 16 * kMiB, why, kKilobyteUnit);
  b.AddMemory("max_wal_size", 256 * kMiB, why + ": keeps a checkout's pg_wal small", kMegabyteUnit);
}

void AddWalSettings(SettingsBuilder& b) {
  b.AddWord("wal_compression", "on", "compresses full-page images of the update-heavy sessions");
  b.AddWord("wal_init_zero", "off",
            "a backend that needs a new WAL segment does not stall writing 16 MB of zeros "
            "(docs/tuning.md)");
  b.AddNumber("checkpoint_completion_target", 0.9,
              "spreads checkpoint writes over 90% of the interval on every PostgreSQL version");
}

void AddVacuumSettings(SettingsBuilder& b) {
  b.AddWord("autovacuum_naptime", "1s",
            "large sessions leave their old TOAST chunks dead on every write: vacuuming them "
            "within a second keeps the table from growing (docs/storage.md)");
}

void AddPools(SettingsBuilder& b, const Pools& p, int cores, bool dev, bool configured) {
  std::string prefix = dev ? "development profile, 1 core: " : "";
  b.AddOwn("app_pool", p.app_pool,
           configured ? std::string("app.max_connections (SKY_DB_MAX_OPEN_CONNS)")
                      : prefix + "clamp(4 x " + std::to_string(cores) + " cores, 4, 32)");
  b.AddOwn("aux_pool", p.aux_pool,
           prefix + "clamp(app_pool " + std::to_string(p.app_pool) + " / 4, 2, 8)");
  b.AddOwn("store_pool", p.store_pool,
           "aux_pool " + std::to_string(p.aux_pool) + " + analytics 2 + telemetry 2");
  b.AddOwn("store_writers", p.store_writers,
           "clamp(" + std::to_string(cores) +
               " cores, 1, store_pool - 2): one writer per core; a second commit "
               "overlaps a running one only when 64 writes or 512 KiB wait (docs/tuning.md)");
}

}  // namespace

const char* ProfileName(Profile p) {
  switch (p) {
    case Profile::kEmbedded:
      return "embedded";
    case Profile::kDev:
      return "dev";
  }
  return "unknown";
}

Result<Profile> ParseProfile(const std::string& name) {
  if (name == "embedded") return Profile::kEmbedded;
  if (name == "dev") return Profile::kDev;
  return Error::InvalidArgument("unknown profile '" + name + "': expected embedded or dev");
}

const Setting* Settings::Find(const std::string& name) const {
  for (const Setting& s : items) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Pools PoolsFor(int cores, int app_pool) {
  cores = std::clamp(cores, 1, kMaxTunedCores);
  Pools p;
  p.app_pool = app_pool > 0 ? app_pool : std::clamp(4 * cores, 4, 32);
  p.aux_pool = std::clamp(p.app_pool / 4, 2, 8);
  p.demand = p.app_pool + 3 * p.aux_pool;
  p.store_pool = p.aux_pool + 4;
  p.store_writers = std::clamp(cores, 1, p.store_pool - 2);
  p.reserved = kSuperuserReservedConnections;
  p.max_connections = 2 * p.demand + p.reserved + kConnectionHeadroom;
  return p;
}

bool ConnectionsCoverPools(int max_connections, const Pools& pools) {
  int needed = pools.app_pool + 3 * pools.aux_pool + pools.store_pool + kConnectionHeadroom;
  return max_connections - pools.reserved >= needed;
}

bool IsValidSettingName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9') || name[0] == '.') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  });
}

Settings Tune(const HostFacts& host, Profile profile,
              const std::map<std::string, std::string>& pins, int app_pool) {
  bool dev = profile == Profile::kDev;
  int cores = dev ? 1 : std::max(host.cores, 1);
  Pools pools = PoolsFor(cores, app_pool);
  SettingsBuilder b(profile, pins);
  AddSocketSettings(b);
  AddConnectionSettings(b, pools);
  if (dev) {
    AddDevMemory(b);
  } else {
    AddEmbeddedMemory(b, std::min(host.ram_bytes, kMaxTunedRam));
  }
  AddWalSettings(b);
  AddVacuumSettings(b);
  AddPools(b, pools, std::min(cores, kMaxTunedCores), dev, app_pool > 0);
  return std::move(b).Finish(pools);
}

}  // namespace skydb
