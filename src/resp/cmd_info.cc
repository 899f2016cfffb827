// INFO [section ...]: Redis's "# Section\r\nfield:value\r\n" format, fed by the server's
// counters and SessionStore::Stats().
#include <unistd.h>

#include <cstdio>
#include <set>
#include <sstream>

#include "base/strings.h"
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

void ServerSection(CommandExecutor& executor, const StoreStats&, std::ostream& out) {
  auto uptime =
      std::chrono::duration_cast<std::chrono::seconds>(executor.clock().Now() - executor.started())
          .count();
  const auto& config = executor.config();
  out << "redis_version:7.0.0\r\n"
      << "skydb_version:" << SKYDB_RESP_VERSION << "\r\n"
      << "redis_mode:standalone\r\n"
      << "os:Linux\r\n"
      << "arch_bits:" << sizeof(void*) * 8 << "\r\n"
      << "multiplexing_api:epoll\r\n"
      << "process_id:" << getpid() << "\r\n"
      << "tcp_port:" << config.tcp_port << "\r\n"
      << "unix_socket:" << config.unix_path << "\r\n"
      << "io_threads_active:" << (config.threads > 1 ? 1 : 0) << "\r\n"
      << "uptime_in_seconds:" << uptime << "\r\n"
      << "uptime_in_days:" << uptime / 86400 << "\r\n";
}

void ClientsSection(CommandExecutor& executor, const StoreStats&, std::ostream& out) {
  out << "connected_clients:" << executor.counters().connected_clients.load() << "\r\n"
      << "maxclients:" << executor.config().max_clients << "\r\n"
      << "blocked_clients:0\r\n";
}

void MemorySection(CommandExecutor&, const StoreStats& stats, std::ostream& out) {
  out << "used_memory:" << stats.memory_bytes << "\r\n"
      << "used_memory_human:" << HumanBytes(stats.memory_bytes) << "\r\n"
      << "used_memory_rss:" << ResidentBytes() << "\r\n"
      << "cached_values:" << stats.cached_values << "\r\n";
}

void PersistenceSection(CommandExecutor& executor, const StoreStats& stats, std::ostream& out) {
  out << "loading:0\r\n"
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
  // evicted_keys is Redis's count of keys deleted to make room. skydb never deletes one: an
  // evicted value stays in PostgreSQL and its key stays live, so the cache's evictions have
  // fields of their own.
  out << "total_connections_received:" << c.total_connections.load() << "\r\n"
      << "total_commands_processed:" << c.total_commands.load() << "\r\n"
      << "rejected_connections:" << c.rejected_connections.load() << "\r\n"
      << "total_error_replies_protocol:" << c.protocol_errors.load() << "\r\n"
      << "acl_access_denied_auth:" << c.auth_failures.load() << "\r\n"
      << "expired_keys:" << stats.expirations << "\r\n"
      << "evicted_keys:0\r\n"
      << "evicted_values_idle:" << stats.evictions_idle << "\r\n"
      << "evicted_values_memory:" << stats.evictions_memory << "\r\n"
      << "keyspace_hits:" << stats.cache_hits << "\r\n"
      << "keyspace_misses:" << stats.cache_misses << "\r\n";
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
};

const NamedSection kSections[] = {
    {"server", "Server", ServerSection}, {"clients", "Clients", ClientsSection},
    {"memory", "Memory", MemorySection}, {"persistence", "Persistence", PersistenceSection},
    {"stats", "Stats", StatsSection},    {"keyspace", "Keyspace", KeyspaceSection},
};

}  // namespace

void CmdInfo(CommandContext& ctx) {
  std::set<std::string> wanted;
  for (size_t i = 1; i < ctx.args.size(); ++i) wanted.insert(ToLower(ctx.args[i]));
  bool all = wanted.empty() || wanted.count("all") > 0 || wanted.count("default") > 0 ||
             wanted.count("everything") > 0;
  StoreStats stats = ctx.store().Stats();
  std::ostringstream text;
  bool first = true;
  for (const auto& section : kSections) {
    if (!all && wanted.count(section.name) == 0) continue;
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
