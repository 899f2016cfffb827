// Durable-write benchmark for the session store (docs/performance.md), one arm per run:
//   skydb  — the tiered store (sync durability) driven through the SessionStore API
//   naive  — one INSERT ... ON CONFLICT per write, each its own transaction, over a 6-connection
//            pool (the way Sky.Live's Go store writes)
//   raw    — batched upserts from a minimal libpq client, the engine's limit on this table
// N closed-loop writers, each writing its own sessions of VALUE_BYTES random bytes. Prints one
// JSON object: throughput, latency percentiles, CPU-seconds per write (this process and the
// PostgreSQL tree), WAL flushes (how many commits shared each, how long each took), and the
// conditions the run was made under. Not a test.
#include <libpq-fe.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proc_tree.h"
#include "skydb/durable.h"
#include "skydb/mutex.h"
#include "skydb/schema.h"
#include "skydb/store.h"
#include "skydb/tune.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode = "skydb";
  std::string conninfo;
  int writers = 64;
  double seconds = 10;
  double warmup = 2;
  int value_bytes = 2080;
  std::string value_file;  // bench/sessiongen's framed values; value_bytes becomes their mean
  int sessions_per_writer = 100;
  int pool = 6;              // naive pool size
  int store_writers = 0;     // skydb group-commit writers; 0: what tuning derives for this host
  size_t overlap_rows = 0;   // skydb: commit_overlap_rows; 0: the store's default
  size_t overlap_bytes = 0;  // skydb: commit_overlap_bytes; 0: the store's default
  int loops = 0;             // skydb: event-loop threads issuing writes; 0: the writer thread
  int raw_connections = 4;
  int raw_batch = 64;
  int postmaster_pid = 0;        // for the PostgreSQL tree's CPU time
  long sessions_total = 0;       // >0: spread this many sessions over the writers
  long total_writes = 0;         // >0: stop after this many writes instead of after `seconds`
  bool keep_table = false;       // continue on the existing table (growth measurements)
  std::string schema = "skydb";  // skydb | plain (the design storage.md compares against)
};

bool ParseArgs(int argc, char** argv, Args& a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--mode")
      a.mode = v;
    else if (k == "--conninfo")
      a.conninfo = v;
    else if (k == "--writers")
      a.writers = std::stoi(v);
    else if (k == "--seconds")
      a.seconds = std::stod(v);
    else if (k == "--warmup")
      a.warmup = std::stod(v);
    else if (k == "--value-bytes")
      a.value_bytes = std::stoi(v);
    else if (k == "--value-file")
      a.value_file = v;
    else if (k == "--pool")
      a.pool = std::stoi(v);
    else if (k == "--store-writers")
      a.store_writers = std::stoi(v);
    else if (k == "--overlap-rows")
      a.overlap_rows = std::stoul(v);
    else if (k == "--overlap-bytes")
      a.overlap_bytes = std::stoul(v);
    else if (k == "--postmaster-pid")
      a.postmaster_pid = std::stoi(v);
    else if (k == "--loops")
      a.loops = std::stoi(v);
    else if (k == "--raw-batch")
      a.raw_batch = std::stoi(v);
    else if (k == "--raw-connections")
      a.raw_connections = std::stoi(v);
    else if (k == "--sessions")
      a.sessions_total = std::stol(v);
    else if (k == "--total-writes")
      a.total_writes = std::stol(v);
    else if (k == "--schema")
      a.schema = v;
    else if (k == "--keep-table")
      a.keep_table = v == "1";
    else
      return false;
  }
  if (a.sessions_total > 0) {
    a.sessions_per_writer =
        static_cast<int>(std::max(1L, a.sessions_total / std::max(1, a.writers)));
  }
  return !a.conninfo.empty() && (a.mode == "skydb" || a.mode == "naive" || a.mode == "raw");
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Values are drawn from a pool generated before the clock starts, so generating random bytes
// (~15 us per 2 KB value) is not counted as the store's CPU.
class ValuePool {
 public:
  ValuePool(int bytes, int count) {
    std::mt19937_64 rng(42);
    for (int i = 0; i < count; ++i) {
      std::string v(static_cast<size_t>(bytes), '\0');
      for (auto& c : v) c = static_cast<char>(rng());
      values_.push_back(std::move(v));
    }
  }
  // The values of bench/sessiongen's file (each a 4-byte big-endian length, then the bytes).
  explicit ValuePool(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    unsigned char head[4];
    while (f.read(reinterpret_cast<char*>(head), 4)) {
      uint32_t n = (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) |
                   (uint32_t{head[2]} << 8) | uint32_t{head[3]};
      std::string v(n, '\0');
      if (!f.read(v.data(), n)) break;
      values_.push_back(std::move(v));
    }
  }
  const std::string& Pick(std::mt19937_64& rng) const { return values_[rng() % values_.size()]; }
  bool empty() const { return values_.empty(); }
  int mean_bytes() const {
    size_t total = 0;
    for (const auto& v : values_) total += v.size();
    return values_.empty() ? 0 : static_cast<int>(total / values_.size());
  }

 private:
  std::vector<std::string> values_;
};

const ValuePool* g_values = nullptr;

std::string RandomValue(std::mt19937_64& rng) { return g_values->Pick(rng); }

// PostgreSQL's WAL flushes and commits so far (pg_stat_wal, pg_stat_database), to see how many
// commits share one flush. Backends publish these counters when idle, at most once a second,
// so a window's counts can be off by up to a second of each backend's work at either end; the
// ratios of counters published together (commits per flush, time per flush) are not.
struct WalCounters {
  double flushes = 0;   // wal_sync: fsync/fdatasync calls on WAL
  double flush_ms = 0;  // wal_sync_time: 0 unless track_wal_io_timing is on
  double commits = 0;   // xact_commit of this database
  double lsn = 0;       // pg_current_wal_lsn() in bytes: exact, unlike the published counters
};

WalCounters ReadWalCounters(PGconn* c) {
  WalCounters w;
  PGresult* r =
      PQexec(c,
             "SELECT wal_sync, wal_sync_time, (SELECT xact_commit FROM pg_stat_database"
             " WHERE datname = current_database()), pg_current_wal_lsn() - '0/0' FROM pg_stat_wal");
  if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
    w.flushes = std::atof(PQgetvalue(r, 0, 0));
    w.flush_ms = std::atof(PQgetvalue(r, 0, 1));
    w.commits = std::atof(PQgetvalue(r, 0, 2));
    w.lsn = std::atof(PQgetvalue(r, 0, 3));
  } else {  // the WAL fields then read 0: say why
    std::fprintf(stderr, "store_bench: cannot read pg_stat_wal: %s", PQerrorMessage(c));
  }
  PQclear(r);
  return w;
}

struct Recorder {
  skydb::Mutex mu;
  std::once_flag first_error;
  std::vector<double> latencies_us GUARDED_BY(mu);
  std::atomic<long> writes{0};
  std::atomic<long> errors{0};
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};
  void Record(Clock::duration d, bool ok) {
    if (!measuring.load()) return;
    if (!ok) {
      ++errors;
      return;
    }
    ++writes;
    skydb::MutexLock lock(mu);
    latencies_us.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
};

// A run with errors is not silently summarised: the first error is printed to stderr.
void ReportFirstError(Recorder& rec, const PGresult* res) {
  std::call_once(rec.first_error, [res] {
    std::fprintf(stderr, "store_bench: first error: %s", PQresultErrorMessage(res));
  });
}

// The skydb arm drives the store the way the RESP server does — no thread per client: each
// writer is a chain of callbacks, a write's completion issuing that writer's next write. With
// --loops N, as in the server (resp.threads, default 1), a completion is handed to one of N
// event-loop threads, which records it and issues the next write; the store's writer thread
// only hands it over. The default, --loops 0, issues the next write on the writer thread itself.
class SkydbChains {
 public:
  SkydbChains(skydb::SessionStore& store, const Args& a, Recorder& rec)
      : store_(store), args_(a), rec_(rec), chains_(static_cast<size_t>(a.writers)) {
    for (size_t i = 0; i < chains_.size(); ++i) chains_[i].rng.seed((i + 1) * 7919);
    for (int i = 0; i < a.loops; ++i) loops_.push_back(std::make_unique<Loop>());
  }
  void Start() {
    {
      skydb::MutexLock lock(mu_);
      running_ = static_cast<int>(chains_.size());
    }
    for (auto& loop : loops_) loop->thread = std::thread([this, l = loop.get()] { RunLoop(*l); });
    for (size_t i = 0; i < chains_.size(); ++i) Next(static_cast<int>(i));
  }
  // After rec.stop: waits until every chain's last write has completed.
  void Join() {
    {
      skydb::MutexLock lock(mu_);
      while (running_ != 0) cv_.Wait(mu_);
    }
    for (auto& loop : loops_) {
      {
        skydb::MutexLock lock(loop->mu);
        loop->stopping = true;
      }
      loop->cv.NotifyOne();
      loop->thread.join();
    }
  }

 private:
  struct Chain {
    std::mt19937_64 rng;
    long i = 0;
    Clock::time_point start;
  };
  struct Completion {
    int id;
    bool ok;
  };
  struct Loop {
    skydb::Mutex mu;
    skydb::CondVar cv;
    std::vector<Completion> pending GUARDED_BY(mu);
    bool stopping GUARDED_BY(mu) = false;
    std::thread thread;
  };

  void RunLoop(Loop& loop) {
    std::vector<Completion> batch;
    while (true) {
      {
        skydb::MutexLock lock(loop.mu);
        while (loop.pending.empty() && !loop.stopping) loop.cv.Wait(loop.mu);
        if (loop.pending.empty()) return;
        batch.swap(loop.pending);
      }
      for (const Completion& c : batch) Completed(c.id, c.ok);
      batch.clear();
    }
  }

  void Next(int id) {
    Chain& c = chains_[static_cast<size_t>(id)];
    if (rec_.stop.load()) return Finished();
    skydb::SetRequest req{
        "w" + std::to_string(id) + ":s" + std::to_string(c.i++ % args_.sessions_per_writer),
        RandomValue(c.rng), skydb::Expiry::Default()};
    c.start = Clock::now();
    store_.Set(std::move(req), [this, id](skydb::Result<skydb::SetReply> r) {
      if (!r.ok()) {
        std::call_once(rec_.first_error, [&r] {
          std::fprintf(stderr, "store_bench: first error: %s\n", r.error().message.c_str());
        });
      }
      if (loops_.empty()) return Completed(id, r.ok());
      Loop& loop = *loops_[static_cast<size_t>(id) % loops_.size()];
      bool wake;
      {
        skydb::MutexLock lock(loop.mu);
        wake = loop.pending.empty();
        loop.pending.push_back({id, r.ok()});
      }
      if (wake) loop.cv.NotifyOne();
    });
  }
  void Completed(int id, bool ok) {
    rec_.Record(Clock::now() - chains_[static_cast<size_t>(id)].start, ok);
    if (!ok) return Finished();  // the run is invalid anyway; no retry storm
    Next(id);
  }
  void Finished() {
    skydb::MutexLock lock(mu_);
    if (--running_ == 0) cv_.NotifyAll();
  }

  skydb::SessionStore& store_;
  const Args& args_;
  Recorder& rec_;
  std::vector<Chain> chains_;
  std::vector<std::unique_ptr<Loop>> loops_;
  skydb::Mutex mu_;
  skydb::CondVar cv_;
  int running_ GUARDED_BY(mu_) = 0;
};

const char* const kUpsertOne =
    "INSERT INTO sky_sessions (id, data, expires_at, expiry_bucket) VALUES ($1, $2, $3::bigint, "
    "$3::bigint / 3600000) "
    "ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at, "
    "expiry_bucket = excluded.expiry_bucket";

struct Pool {
  skydb::Mutex mu;
  skydb::CondVar cv;
  std::vector<PGconn*> idle GUARDED_BY(mu);
};

void NaiveWriter(Pool& pool, const Args& a, int id, Recorder& rec) {
  std::mt19937_64 rng(static_cast<uint64_t>(id) * 7919);
  for (long i = 0; !rec.stop.load(); ++i) {
    std::string key = "w" + std::to_string(id) + ":s" + std::to_string(i % a.sessions_per_writer);
    std::string value = RandomValue(rng);
    auto start = Clock::now();
    PGconn* conn = nullptr;
    {
      skydb::MutexLock lock(pool.mu);
      while (pool.idle.empty()) pool.cv.Wait(pool.mu);
      conn = pool.idle.back();
      pool.idle.pop_back();
    }
    long long expires = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count() +
                        1800000;
    std::string exp_text = std::to_string(expires);
    const char* values[] = {key.data(), value.data(), exp_text.c_str()};
    int lengths[] = {static_cast<int>(key.size()), static_cast<int>(value.size()), 0};
    int formats[] = {1, 1, 0};
    PGresult* res = PQexecParams(conn, kUpsertOne, 3, nullptr, values, lengths, formats, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok) ReportFirstError(rec, res);
    PQclear(res);
    {
      skydb::MutexLock lock(pool.mu);
      pool.idle.push_back(conn);
    }
    pool.cv.NotifyOne();
    rec.Record(Clock::now() - start, ok);
  }
}

// Raw: a connection writes batches of raw_batch rows with the same single-statement upsert the
// store uses (multi-row VALUES here: the simplest thing a minimal client would do).
void RawWriter(PGconn* conn, const Args& a, int id, Recorder& rec) {
  std::mt19937_64 rng(static_cast<uint64_t>(id) * 7919);
  std::string sql = "INSERT INTO sky_sessions (id, data, expires_at, expiry_bucket) VALUES ";
  for (int r = 0; r < a.raw_batch; ++r) {
    sql += (r ? "," : "") + std::string("($") + std::to_string(2 * r + 1) + ",$" +
           std::to_string(2 * r + 2) + ",0,NULL)";
  }
  sql += " ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at";
  int sessions = a.sessions_per_writer * a.writers / a.raw_connections;
  for (long i = 0; !rec.stop.load(); ++i) {
    std::vector<std::string> store;
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    store.reserve(2 * static_cast<size_t>(a.raw_batch));
    for (int r = 0; r < a.raw_batch; ++r) {
      store.push_back("r" + std::to_string(id) + ":s" +
                      std::to_string((i * a.raw_batch + r) % sessions));
      store.push_back(RandomValue(rng));
    }
    for (auto& s : store) {
      values.push_back(s.data());
      lengths.push_back(static_cast<int>(s.size()));
      formats.push_back(1);
    }
    auto start = Clock::now();
    PGresult* res = PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                 values.data(), lengths.data(), formats.data(), 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok) ReportFirstError(rec, res);
    PQclear(res);
    for (int r = 0; r < a.raw_batch; ++r) rec.Record(Clock::now() - start, ok);
  }
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(idx), v.end());
  return v[idx];
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, a)) {
    std::fprintf(stderr,
                 "usage: store_bench --mode skydb|naive|raw --conninfo STR [--writers 64] "
                 "[--seconds 10] [--warmup 2] [--value-bytes 2080] [--pool 6] [--store-writers N] "
                 "[--overlap-rows N] [--overlap-bytes N] [--loops 1] "
                 "[--postmaster-pid PID]\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  ValuePool values =
      a.value_file.empty() ? ValuePool(a.value_bytes, 1024) : ValuePool(a.value_file);
  if (values.empty()) {
    std::fprintf(stderr, "store_bench: no values in %s\n", a.value_file.c_str());
    return 2;
  }
  a.value_bytes = values.mean_bytes();
  g_values = &values;
  if (!a.keep_table) {
    // Every arm starts from an empty table made by skydb's own schema steps.
    PGconn* c = PQconnectdb(a.conninfo.c_str());
    // sky_fields (hash fields and set members) refers to sky_sessions: both go.
    std::string reset = "DROP TABLE IF EXISTS sky_fields, sky_sessions;";
    if (a.schema == "plain") {
      // What a first design would do: default storage and fillfactor, deadline indexed.
      reset +=
          "CREATE TABLE sky_sessions (id bytea PRIMARY KEY, expires_at bigint,"
          " expiry_bucket bigint, data bytea NOT NULL);"
          "CREATE INDEX ON sky_sessions (expires_at);";
    } else {
      for (const auto& m : skydb::AllMigrations()) {
        if (m.version >= skydb::kFirstSessionStoreMigration) reset += m.sql + ";";
      }
    }
    reset += "CHECKPOINT;";
    PGresult* r = PQexec(c, reset.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      std::fprintf(stderr, "schema reset failed: %s", PQerrorMessage(c));
      return 1;
    }
    PQclear(r);
    PQfinish(c);
  }
  Recorder rec;
  std::vector<std::thread> threads;
  std::unique_ptr<skydb::SessionStore> store;
  std::unique_ptr<SkydbChains> chains;
  int store_writers = 0;
  size_t overlap_rows = 0;
  size_t overlap_bytes = 0;
  auto clock = skydb::NewRealClock();
  Pool pool;
  std::vector<PGconn*> raw;
  auto open = [&](void) -> PGconn* {
    PGconn* c = PQconnectdb(a.conninfo.c_str());
    if (PQstatus(c) != CONNECTION_OK) {
      std::fprintf(stderr, "cannot connect: %s", PQerrorMessage(c));
      std::exit(1);
    }
    return c;
  };
  if (a.mode == "skydb") {
    skydb::TieredOptions o;
    o.durability = skydb::Durability::kSync;
    o.writers =
        a.store_writers > 0
            ? a.store_writers
            : skydb::PoolsFor(static_cast<int>(std::thread::hardware_concurrency())).store_writers;
    store_writers = o.writers;
    if (a.overlap_rows > 0) o.commit_overlap_rows = a.overlap_rows;
    overlap_rows = o.commit_overlap_rows;
    if (a.overlap_bytes > 0) o.commit_overlap_bytes = a.overlap_bytes;
    overlap_bytes = o.commit_overlap_bytes;
    o.readers = 2;
    auto made = skydb::NewTieredStore(
        o, *clock, skydb::NewPostgresDurable(a.conninfo, "bench", o.writers, o.readers));
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", made.error().message.c_str());
      return 1;
    }
    store = std::move(made).value();
    chains = std::make_unique<SkydbChains>(*store, a, rec);
    chains->Start();
  } else if (a.mode == "naive") {
    {
      skydb::MutexLock lock(pool.mu);  // before the writers start: no contention
      for (int i = 0; i < a.pool; ++i) pool.idle.push_back(open());
    }
    for (int i = 0; i < a.writers; ++i)
      threads.emplace_back(NaiveWriter, std::ref(pool), std::cref(a), i, std::ref(rec));
  } else {
    for (int i = 0; i < a.raw_connections; ++i) raw.push_back(open());
    for (int i = 0; i < a.raw_connections; ++i)
      threads.emplace_back(RawWriter, raw[static_cast<size_t>(i)], std::cref(a), i, std::ref(rec));
  }
  PGconn* stats_conn = open();
  std::this_thread::sleep_for(std::chrono::duration<double>(a.warmup));
  WalCounters wal0 = ReadWalCounters(stats_conn);
  double self0 = SelfCpuSeconds(), pg0 = skydb::loadgen::TreeCpuSeconds(a.postmaster_pid);
  auto t0 = Clock::now();
  rec.measuring = true;
  if (a.total_writes > 0) {
    while (rec.writes.load() < a.total_writes)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } else {
    std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds));
  }
  rec.measuring = false;
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  double self1 = SelfCpuSeconds(), pg1 = skydb::loadgen::TreeCpuSeconds(a.postmaster_pid);
  WalCounters wal1 = ReadWalCounters(stats_conn);
  PQfinish(stats_conn);
  double flushes = wal1.flushes - wal0.flushes;
  double flush_ms = wal1.flush_ms - wal0.flush_ms;
  rec.stop = true;
  for (auto& t : threads) t.join();
  if (chains) chains->Join();
  double rows_per_commit = 0;
  if (store) {
    auto stats = store->Stats();
    if (stats.commits > 0)
      rows_per_commit =
          static_cast<double>(stats.committed_rows) / static_cast<double>(stats.commits);
    (void)store->Close(std::chrono::seconds(10));
  }
  std::vector<double> lat;
  {  // every writer has stopped; the locks only satisfy the analysis
    skydb::MutexLock pool_lock(pool.mu);
    for (PGconn* c : pool.idle) PQfinish(c);
    skydb::MutexLock rec_lock(rec.mu);
    lat = rec.latencies_us;
  }
  for (PGconn* c : raw) PQfinish(c);
  long writes = rec.writes.load();
  double cpu_per_write_us =
      writes > 0 ? ((self1 - self0) + (pg1 - pg0)) / static_cast<double>(writes) * 1e6 : 0;
  std::printf(
      "{\"mode\":\"%s\",\"writers\":%d,\"value_bytes\":%d,\"seconds\":%.2f,\"writes\":%ld,"
      "\"errors\":%ld,\"writes_per_s\":%.0f,\"p50_us\":%.0f,\"p99_us\":%.0f,\"max_us\":%.0f,"
      "\"cpu_us_per_write\":%.1f,\"client_cpu_s\":%.2f,\"postgres_cpu_s\":%.2f,"
      "\"rows_per_commit\":%.1f,\"store_writers\":%d,\"overlap_rows\":%zu,\"overlap_bytes\":%zu,"
      "\"loops\":%d,"
      "\"wal_flushes\":%.0f,\"commits_per_flush\":%.2f,\"writes_per_flush\":%.1f,"
      "\"flush_ms\":%.3f,\"flush_busy\":%.2f,\"wal_bytes_per_write\":%.0f,\"value_file\":\"%s\"}\n",
      a.mode.c_str(), a.mode == "raw" ? a.raw_connections : a.writers, a.value_bytes, elapsed,
      writes, rec.errors.load(), static_cast<double>(writes) / elapsed, Percentile(lat, 0.50),
      Percentile(lat, 0.99), lat.empty() ? 0.0 : *std::max_element(lat.begin(), lat.end()),
      cpu_per_write_us, self1 - self0, pg1 - pg0,
      a.mode == "raw" ? static_cast<double>(a.raw_batch)
                      : (a.mode == "naive" ? 1.0 : rows_per_commit),
      store_writers, a.mode == "skydb" ? overlap_rows : size_t{0},
      a.mode == "skydb" ? overlap_bytes : size_t{0}, a.mode == "skydb" ? a.loops : 0, flushes,
      flushes > 0 ? (wal1.commits - wal0.commits) / flushes : 0.0,
      flushes > 0 ? static_cast<double>(writes) / flushes : 0.0,
      flushes > 0 ? flush_ms / flushes : 0.0, flush_ms / 1000 / elapsed,
      writes > 0 ? (wal1.lsn - wal0.lsn) / static_cast<double>(writes) : 0.0, a.value_file.c_str());
  return writes > 0 && rec.errors.load() == 0 ? 0 : 1;
}
