// INFO [section ...]: Redis 7's "# Section\r\nfield:value\r\n" format, with its section and
// field names where skydb has the number (so Redis tooling and prometheus-redis-exporter read
// them), fed by the server's counters, SessionStore::Stats() and the process (getrusage,
// /proc). A field skydb cannot measure is left out, never filled with an invented value.
// Also the counting of replies behind commandstats and errorstats.
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <random>
#include <set>
#include <sstream>

#include "base/strings.h"
#include "resp/acl_users.h"
#include "resp/command_table.h"
#include "resp/encoder.h"

#ifndef SKYDB_RESP_VERSION
#define SKYDB_RESP_VERSION "0.0.0"
#endif

namespace skydb::resp {
namespace {

using Section = void (*)(CommandExecutor& executor, const StoreStats& stats, std::ostream& out);

// Resident set size from /proc/self/statm; 0 when unreadable (not Linux, restricted /proc).
uint64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// 40 random hex digits, drawn once per process: Redis's run_id and master_replid identify a
// server's lifetime, which is what clients compare them for.
const std::string& ProcessId40(int which) {
  static const std::array<std::string, 2> ids = [] {
    std::random_device rd;
    std::array<std::string, 2> out;
    for (auto& id : out) {
      for (int i = 0; i < 40; ++i) id.push_back("0123456789abcdef"[rd() % 16]);
    }
    return out;
  }();
  return ids[which];
}

std::string Executable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string OsName() {
  utsname u{};
  if (uname(&u) != 0) return "Linux";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

void ServerSection(CommandExecutor& executor, const StoreStats&, std::ostream& out) {
  auto uptime =
      std::chrono::duration_cast<std::chrono::seconds>(executor.clock().Now() - executor.started())
          .count();
  const auto& config = executor.config();
  out << "redis_version:7.0.0\r\n"
      << "skydb_version:" << SKYDB_RESP_VERSION << "\r\n"
      << "redis_mode:standalone\r\n"
      << "os:" << OsName() << "\r\n"
      << "arch_bits:" << sizeof(void*) * 8 << "\r\n"
      << "multiplexing_api:epoll\r\n"
      << "process_id:" << getpid() << "\r\n"
      << "run_id:" << ProcessId40(0) << "\r\n"
      << "tcp_port:" << config.tcp_port << "\r\n"
      << "server_time_usec:" << executor.NowMs() * 1000 << "\r\n"
      << "unix_socket:" << config.unix_path << "\r\n"
      << "io_threads_active:" << (config.threads > 1 ? 1 : 0) << "\r\n"
      << "uptime_in_seconds:" << uptime << "\r\n"
      << "uptime_in_days:" << uptime / 86400 << "\r\n"
      << "executable:" << Executable() << "\r\n";
}

void ClientsSection(CommandExecutor& executor, const StoreStats&, std::ostream& out) {
  // No blocking commands and no client tracking: these are 0 by construction.
  out << "connected_clients:" << executor.counters().connected_clients.load() << "\r\n"
      << "maxclients:" << executor.config().max_clients << "\r\n"
      << "blocked_clients:0\r\n"
      << "tracking_clients:0\r\n";
}

void MemorySection(CommandExecutor& executor, const StoreStats& stats, std::ostream& out) {
  uint64_t rss = ResidentBytes();
  // used_memory is the store's accounted bytes (keys, cached values, entries), not the
  // allocator's total as in Redis.
  out << "used_memory:" << stats.memory_bytes << "\r\n"
      << "used_memory_human:" << HumanBytes(stats.memory_bytes) << "\r\n"
      << "used_memory_rss:" << rss << "\r\n"
      << "used_memory_rss_human:" << HumanBytes(rss) << "\r\n"
      << "total_system_memory:"
      << static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
             static_cast<uint64_t>(sysconf(_SC_PAGESIZE))
      << "\r\n"
      << "maxmemory:" << stats.max_memory_bytes
      << "\r\n"
      // Keys are never evicted: a memory-only store refuses writes past store.max_memory; a
      // tiered one drops cached values, which stay in PostgreSQL.
      << "maxmemory_policy:noeviction\r\n"
      << "cached_values:" << stats.cached_values << "\r\n"
      << "used_memory_scripts_eval:" << CachedScriptBytes(executor) << "\r\n"
      << "number_of_cached_scripts:" << CachedScripts(executor) << "\r\n";
  // No mem_fragmentation_ratio: rss over accounted store bytes is not fragmentation.
}

void PersistenceSection(CommandExecutor& executor, const StoreStats& stats, std::ostream& out) {
  // No RDB and no AOF: durability is PostgreSQL's (the store_* fields), so these are what Redis
  // reports with both off and nothing ever saved.
  out << "loading:0\r\n"
      << "async_loading:0\r\n"
      << "rdb_bgsave_in_progress:0\r\n"
      << "rdb_saves:0\r\n"
      << "aof_enabled:0\r\n"
      << "aof_rewrite_in_progress:0\r\n"
      << "aof_rewrite_scheduled:0\r\n"
      << "aof_rewrites:0\r\n"
      << "store_kind:" << stats.kind << "\r\n"
      << "store_description:" << executor.config().store_description << "\r\n"
      << "store_durability:" << stats.durability << "\r\n"
      << "store_queue_depth:" << stats.queue_depth << "\r\n"
      << "store_writes:" << stats.writes << "\r\n"
      << "store_commits:" << stats.commits << "\r\n"
      << "store_committed_rows:" << stats.committed_rows << "\r\n"
      << "store_failed_commits:" << stats.failed_commits << "\r\n"
      << "store_write_timeouts:" << stats.write_timeouts << "\r\n"
      << "store_queue_full_rejections:" << stats.queue_full_rejections << "\r\n"
      << "store_last_commit_seconds:" << stats.last_commit_seconds << "\r\n";
}

void StatsSection(CommandExecutor& executor, const StoreStats& stats, std::ostream& out) {
  const auto& c = executor.counters();
  auto& acl = executor.acl();
  // evicted_keys is Redis's count of keys deleted to make room. skydb never deletes one: an
  // evicted value stays in PostgreSQL and its key stays live, so the cache's evictions have
  // fields of their own.
  out << "total_connections_received:" << c.total_connections.load() << "\r\n"
      << "total_commands_processed:" << c.commands->dispatched() << "\r\n"
      << "rejected_connections:" << c.rejected_connections.load() << "\r\n"
      << "total_error_replies:" << c.commands->errors_total.load() << "\r\n"
      << "total_error_replies_protocol:" << c.protocol_errors.load() << "\r\n"
      << "acl_access_denied_auth:" << c.auth_failures.load() << "\r\n"
      << "acl_access_denied_cmd:" << acl.denied_commands.load() << "\r\n"
      << "acl_access_denied_key:" << acl.denied_keys.load() << "\r\n"
      << "acl_access_denied_channel:" << acl.denied_channels.load() << "\r\n"
      << "expired_keys:" << stats.expirations << "\r\n"
      << "evicted_keys:0\r\n"
      << "evicted_values_idle:" << stats.evictions_idle << "\r\n"
      << "evicted_values_memory:" << stats.evictions_memory << "\r\n"
      << "keyspace_hits:" << stats.cache_hits << "\r\n"
      << "keyspace_misses:" << stats.cache_misses << "\r\n";
}

void ReplicationSection(CommandExecutor&, const StoreStats&, std::ostream& out) {
  // skydb has no Redis replication; its durability is PostgreSQL's.
  out << "role:master\r\n"
      << "connected_slaves:0\r\n"
      << "master_failover_state:no-failover\r\n"
      << "master_replid:" << ProcessId40(1) << "\r\n"
      << "master_replid2:0000000000000000000000000000000000000000\r\n"
      << "master_repl_offset:0\r\n"
      << "second_repl_offset:-1\r\n"
      << "repl_backlog_active:0\r\n";
}

std::string Seconds(const timeval& t) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%ld.%06ld", static_cast<long>(t.tv_sec),
                static_cast<long>(t.tv_usec));
  return buf;
}

void CpuSection(CommandExecutor&, const StoreStats&, std::ostream& out) {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  out << "used_cpu_sys:" << Seconds(self.ru_stime) << "\r\n"
      << "used_cpu_user:" << Seconds(self.ru_utime) << "\r\n"
      << "used_cpu_sys_children:" << Seconds(children.ru_stime) << "\r\n"
      << "used_cpu_user_children:" << Seconds(children.ru_utime) << "\r\n";
}

void ModulesSection(CommandExecutor&, const StoreStats&, std::ostream&) {}
void ClusterSection(CommandExecutor&, const StoreStats&, std::ostream& out) {
  out << "cluster_enabled:0\r\n";
}

void CommandStatsSection(CommandExecutor& executor, const StoreStats&, std::ostream& out) {
  const CommandStats& r = *executor.counters().commands;
  const auto& commands = AllCommands();
  for (size_t i = 0; i < commands.size(); ++i) {
    uint64_t calls = r.calls(i);
    if (calls == 0) continue;
    uint64_t usec = r.usec(i);
    char per_call[32];
    std::snprintf(per_call, sizeof per_call, "%.2f",
                  static_cast<double>(usec) / static_cast<double>(calls));
    out << "cmdstat_" << commands[i].name << ":calls=" << calls << ",usec=" << usec
        << ",usec_per_call=" << per_call
        << ",rejected_calls=" << r.rejected[i].load(std::memory_order_relaxed)
        << ",failed_calls=" << r.failed[i].load(std::memory_order_relaxed) << "\r\n";
  }
}

void ErrorStatsSection(CommandExecutor& executor, const StoreStats&, std::ostream& out) {
  for (const auto& [code, count] : executor.counters().commands->errors.Snapshot()) {
    out << "errorstat_" << code << ":count=" << count << "\r\n";
  }
}

// avg_ttl is not tracked by the store, so it is left out rather than reported as 0.
void KeyspaceSection(CommandExecutor&, const StoreStats& stats, std::ostream& out) {
  if (stats.sessions > 0)
    out << "db0:keys=" << stats.sessions << ",expires=" << stats.expiring << "\r\n";
}

struct NamedSection {
  const char* name;
  const char* title;
  Section render;
  bool in_default;  // INFO and INFO default; "all" and "everything" take every section
};

const NamedSection kSections[] = {
    {"server", "Server", ServerSection, true},
    {"clients", "Clients", ClientsSection, true},
    {"memory", "Memory", MemorySection, true},
    {"persistence", "Persistence", PersistenceSection, true},
    {"stats", "Stats", StatsSection, true},
    {"replication", "Replication", ReplicationSection, true},
    {"cpu", "CPU", CpuSection, true},
    {"modules", "Modules", ModulesSection, true},
    {"commandstats", "Commandstats", CommandStatsSection, false},
    {"errorstats", "Errorstats", ErrorStatsSection, true},
    {"cluster", "Cluster", ClusterSection, true},
    {"keyspace", "Keyspace", KeyspaceSection, true},
};

// The first word of an error reply ("-ERR syntax error\r\n" → "ERR").
std::string_view ErrorCode(std::string_view reply) {
  reply.remove_prefix(1);
  size_t end = reply.find_first_of(" \r");
  return reply.substr(0, end == std::string_view::npos ? reply.size() : end);
}

}  // namespace

void ErrorCounts::Count(std::string_view code) {
  MutexLock lock(mu_);
  auto it = counts_.find(code);
  if (it != counts_.end()) {
    ++it->second;
  } else if (counts_.size() < kMaxCodes) {
    counts_.emplace(std::string(code), 1);
  }
}

std::map<std::string, uint64_t> ErrorCounts::Snapshot() const {
  MutexLock lock(mu_);
  return {counts_.begin(), counts_.end()};
}

void CountReply(const ReplyTally& tally, std::string_view r) {
  CommandStats& stats = *tally.stats;
  auto usec =
      std::chrono::duration_cast<std::chrono::microseconds>(tally.clock->Now() - tally.start)
          .count();
  stats.AddUsec(tally.slot, static_cast<uint64_t>(std::max<int64_t>(usec, 0)));
  if (r.empty() || r.front() != '-') return;
  stats.errors_total.fetch_add(1, std::memory_order_relaxed);
  stats.errors.Count(ErrorCode(r));
  auto& by = tally.ran ? stats.failed : stats.rejected;
  by[tally.slot].fetch_add(1, std::memory_order_relaxed);
}

ReplyFn CountingReply(ReplyFn reply, const ServerCounters& counters, size_t slot,
                      const Clock& clock, Clock::TimePoint start, bool ran) {
  return std::move(reply).Counted(counters.commands,
                                  ReplyTally{nullptr, nullptr, &clock, slot, start, ran});
}

// LATENCY LATEST / SLOWLOG GET|LEN|RESET: skydb keeps neither a latency monitor nor a slow log,
// so they answer what Redis answers with both off (nothing recorded); monitoring tools that
// ask for them (prometheus-redis-exporter) then scrape without errors.
void CmdLatency(CommandContext& ctx) {
  if (EqualsIgnoreCase(ctx.args[1], "latest") && ctx.args.size() == 2) {
    std::string out;
    AppendArrayHeader(out, 0);
    return ctx.Reply(std::move(out));
  }
  ctx.ReplyError("ERR unknown subcommand '" + ctx.args[1].substr(0, 128) + "'. Try LATENCY HELP.");
}

void CmdSlowlog(CommandContext& ctx) {
  const std::string& sub = ctx.args[1];
  std::string out;
  if (EqualsIgnoreCase(sub, "len") && ctx.args.size() == 2) return ctx.Reply(Integer(0));
  if (EqualsIgnoreCase(sub, "reset") && ctx.args.size() == 2) return ctx.Reply(Simple("OK"));
  if (EqualsIgnoreCase(sub, "get") && ctx.args.size() <= 3) {
    int64_t count = 0;
    if (ctx.args.size() == 3 && (!ParseInt64(ctx.args[2], &count) || count < -1)) {
      return ctx.ReplyError("ERR count should be greater than or equal to -1");
    }
    AppendArrayHeader(out, 0);
    return ctx.Reply(std::move(out));
  }
  ctx.ReplyError("ERR unknown subcommand '" + sub.substr(0, 128) + "'. Try SLOWLOG HELP.");
}

void CmdInfo(CommandContext& ctx) {
  std::set<std::string> wanted;
  for (size_t i = 1; i < ctx.args.size(); ++i) wanted.insert(ToLower(ctx.args[i]));
  bool every = wanted.count("all") > 0 || wanted.count("everything") > 0;
  bool defaults = wanted.empty() || wanted.count("default") > 0;
  StoreStats stats = ctx.store().Stats();
  std::ostringstream text;
  bool first = true;
  for (const auto& section : kSections) {
    bool shown = every || (defaults && section.in_default) || wanted.count(section.name) > 0;
    if (!shown) continue;
    if (!first) text << "\r\n";
    first = false;
    text << "# " << section.title << "\r\n";
    section.render(ctx.executor, stats, text);
  }
  std::string out;
  AppendVerbatim(out, text.str(), ctx.client.proto);
  ctx.Reply(std::move(out));
}

}  // namespace skydb::resp
