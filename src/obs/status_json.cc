// /status: the ObservedState as one JSON document for humans and scripts.
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "skydb/obs.h"

namespace skydb {
namespace {

using nlohmann::json;

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  if (t.time_since_epoch().count() == 0) return 0;
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

json Cluster(const ObservedState& s) {
  if (!s.cluster) return nullptr;
  const auto& c = *s.cluster;
  json j = {{"state", SupervisorStateName(c.state)},
            {"postgres_pid", c.postgres_pid},
            {"restarts", c.restarts},
            {"last_exit", c.last_exit},
            {"server_version", c.server_version},
            {"answers", s.postgres_answers},
            {"started_at_unix", UnixSeconds(c.started_at)},
            {"ready_since_unix", UnixSeconds(c.ready_since)}};
  if (s.postgres) {
    j["backends_by_state"] = s.postgres->backends_by_state;
    j["database_bytes"] = s.postgres->database_bytes;
    j["figures_taken_at_unix"] = UnixSeconds(s.postgres->taken_at);
  }
  j["poll_failures"] = s.postgres_poll_failures;
  return j;
}

json Backup(const ObservedState& s) {
  if (!s.backup) return nullptr;
  const BackupStatus& b = *s.backup;
  json j = {{"repository", JsonBytes<json>(b.repository)},
            {"schedule_seconds", b.schedule.count() / 1000},
            {"running", b.running},
            {"last_success_unix", b.last_success_time},
            {"last_duration_seconds", b.last_duration_seconds},
            {"last_size_bytes", b.last_size_bytes},
            {"failures", b.failures},
            {"last_error", b.last_error},
            {"archive_failing", !b.archive_failure.empty()},
            {"archive_failure", b.archive_failure}};
  if (s.postgres) {
    const ArchiverStats& a = s.postgres->archiver;
    j["wal_archived"] = a.archived_count;
    j["wal_archive_failed"] = a.failed_count;
    j["last_archived_wal"] = a.last_archived_wal;
    j["last_archived_unix"] = a.last_archived_time;
    j["last_failed_wal"] = a.last_failed_wal;
    j["last_failed_unix"] = a.last_failed_time;
    j["pending_wal_segments"] = a.ready_segments;
    j["oldest_pending_wal_seconds"] = a.oldest_ready_seconds;
  }
  return j;
}

json Store(const ObservedState& s) {
  if (!s.store) return nullptr;
  const auto& st = *s.store;
  return {{"kind", st.kind},
          {"durability", st.durability},
          {"description", s.store_description},
          {"expiring_sessions", st.expiring},
          {"cached_values", st.cached_values},
          {"memory_bytes", st.memory_bytes},
          {"queue_depth", st.queue_depth},
          {"writes", st.writes},
          {"commits", st.commits},
          {"committed_rows", st.committed_rows},
          {"failed_commits", st.failed_commits},
          {"write_timeouts", st.write_timeouts},
          {"queue_full_rejections", st.queue_full_rejections},
          {"last_commit_seconds", st.last_commit_seconds},
          {"cache_hits", st.cache_hits},
          {"cache_misses", st.cache_misses},
          {"evictions_idle", st.evictions_idle},
          {"evictions_memory", st.evictions_memory},
          {"expirations", st.expirations}};
}

json Pool(const ObservedState& s) {
  if (!s.store) return nullptr;
  const auto& st = *s.store;
  return {{"size", st.pool_size},
          {"open", st.pool_open},
          {"busy", st.pool_busy},
          {"waiters", st.pool_waiters}};
}

json Resp(const ObservedState& s) {
  if (!s.resp) return nullptr;
  const auto& r = *s.resp;
  json commands = json::object();
  for (const auto& [name, n] : r.commands) commands[name] = n;
  return {
      {"connected_clients", r.connected_clients},       {"total_connections", r.total_connections},
      {"rejected_connections", r.rejected_connections}, {"total_commands", r.total_commands},
      {"protocol_errors", r.protocol_errors},           {"commands", commands}};
}

json SettingsJson(const ObservedState& s) {
  if (!s.settings) return nullptr;
  json items = json::array();
  for (const auto& item : s.settings->items) {
    items.push_back({{"name", item.name},
                     {"value", item.value},
                     {"pinned", item.pinned},
                     {"derivation", item.derivation}});
  }
  return items;
}

}  // namespace

std::string StatusJson(const ObservedState& s) {
  json memory = {{"skydb_rss_bytes", s.memory.skydb_rss_bytes},
                 {"postgres_pss_bytes", nullptr},
                 {"postgres_processes", s.memory.postgres_processes}};
  if (s.memory.postgres_pss_bytes) memory["postgres_pss_bytes"] = *s.memory.postgres_pss_bytes;
  json j = {
      {"version", s.version},
      {"mode", s.mode},
      {"ready", s.readiness.ready},
      {"ready_reason", s.readiness.reason},
      {"app",
       {{"store_socket", s.store_socket},
        {"database_url", s.app_database_url.empty() ? json(nullptr) : json(s.app_database_url)}}},
      {"sessions", s.store ? json(s.store->sessions) : json(nullptr)},
      {"cluster", Cluster(s)},
      {"backup", Backup(s)},
      {"store", Store(s)},
      {"pool", Pool(s)},
      {"resp", Resp(s)},
      {"memory", memory},
      {"settings", SettingsJson(s)}};
  // Descriptions name paths under a data dir a user chose: shown, never thrown (json_text.h).
  return JsonText(j, 2) + "\n";
}

}  // namespace skydb
