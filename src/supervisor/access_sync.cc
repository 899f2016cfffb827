#include "supervisor/access_sync.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/strings.h"

namespace skydb::supervisor {
namespace {

constexpr auto kReloadPoll = std::chrono::milliseconds(20);

// "line 7: invalid authentication method \"bogus\"" for each line PostgreSQL reports, or "".
Result<std::string> FileErrors(pg::Connection& conn, const char* view, const char* file) {
  SKYDB_ASSIGN_OR_RETURN(auto rows,
                         conn.Exec(std::string("SELECT line_number, error FROM ") + view +
                                   " WHERE error IS NOT NULL ORDER BY line_number"));
  std::vector<std::string> errors;
  for (int r = 0; r < rows.rows(); ++r) {
    errors.push_back(std::string(file) + " line " + rows.Get(r, 0) + ": " + rows.Get(r, 1));
  }
  return Join(errors, "; ");
}

// What PostgreSQL finds wrong in the files on disk now: "" when nothing.
Result<std::string> CheckFiles(pg::Connection& conn) {
  SKYDB_ASSIGN_OR_RETURN(std::string errors, FileErrors(conn, "pg_hba_file_rules", "pg_hba.conf"));
  if (conn.ServerVersionNum() >= 150000) {
    SKYDB_ASSIGN_OR_RETURN(std::string ident,
                           FileErrors(conn, "pg_ident_file_mappings", "pg_ident.conf"));
    if (!ident.empty()) errors += (errors.empty() ? "" : "; ") + ident;
  }
  return errors;
}

Status WriteBoth(const AccessTarget& target, const AccessFiles& files) {
  SKYDB_RETURN_IF_ERROR(target.write(target.pgdata + "/pg_hba.conf", files.hba));
  return target.write(target.pgdata + "/pg_ident.conf", files.ident);
}

AccessFiles ReadBoth(const AccessTarget& target) {
  AccessFiles files;
  if (auto hba = target.read(target.pgdata + "/pg_hba.conf"); hba.ok()) files.hba = *hba;
  if (auto ident = target.read(target.pgdata + "/pg_ident.conf"); ident.ok()) files.ident = *ident;
  return files;
}

// pg_reload_conf(), then until this session's pg_conf_load_time() passes the one before: each
// statement lets the backend take the reload the postmaster passed on. The timeout counts the
// pauses between polls (a poll on the local socket takes well under one), so no clock is read.
Status ReloadAndWait(pg::Connection& conn, std::chrono::milliseconds timeout) {
  SKYDB_ASSIGN_OR_RETURN(auto before, conn.Exec("SELECT pg_conf_load_time()::text"));
  const std::string loaded = before.Get(0, 0);
  SKYDB_RETURN_IF_ERROR(conn.Run("SELECT pg_reload_conf()"));
  for (std::chrono::milliseconds paused{0};; paused += kReloadPoll) {
    SKYDB_ASSIGN_OR_RETURN(auto now,
                           conn.Exec("SELECT pg_conf_load_time() > $1::timestamptz", {loaded}));
    if (now.Get(0, 0) == "t") return Ok();
    if (paused >= timeout) {
      return Error::Timeout("PostgreSQL did not reload its configuration within " +
                            std::to_string(timeout.count()) +
                            " ms (pg_conf_load_time() stayed at " + loaded + ")");
    }
    std::this_thread::sleep_for(kReloadPoll);
  }
}

}  // namespace

std::vector<AccessApp> AccessAppsFrom(const std::vector<schema::AppRow>& rows) {
  std::vector<const schema::AppRow*> ready;
  for (const auto& row : rows) {
    if (row.state == schema::AppState::kReady) ready.push_back(&row);
  }
  std::stable_sort(ready.begin(), ready.end(),
                   [](const auto* a, const auto* b) { return a->configured && !b->configured; });
  std::vector<AccessApp> apps;
  for (const auto* row : ready) {
    apps.push_back({row->role, row->database, row->auth == schema::AppAuth::kScram, row->os_users});
  }
  return apps;
}

Status SyncAccessFiles(pg::Connection& conn, const AccessTarget& target) {
  SKYDB_ASSIGN_OR_RETURN(auto rows, schema::ListApps(conn));
  SKYDB_ASSIGN_OR_RETURN(auto listen, conn.Exec("SELECT current_setting('listen_addresses')"));
  HbaRoles roles{target.superuser, AccessAppsFrom(rows), !Trim(listen.Get(0, 0)).empty()};
  return ApplyAccessFiles(conn, target, RenderAccessFiles(roles));
}

Status ApplyAccessFiles(pg::Connection& conn, const AccessTarget& target,
                        const AccessFiles& files) {
  AccessFiles previous = ReadBoth(target);
  if (previous == files) return Ok();
  SKYDB_RETURN_IF_ERROR(WriteBoth(target, files));
  auto errors = CheckFiles(conn);
  if (!errors.ok() || !errors->empty()) {
    Status restored = WriteBoth(target, previous);
    std::string why = errors.ok() ? "PostgreSQL rejects the pg_hba.conf and pg_ident.conf skydb "
                                    "rendered (" +
                                        *errors + ")"
                                  : "PostgreSQL could not check the files skydb rendered (" +
                                        errors.error().message + ")";
    return Error::InvalidArgument(
        why + (restored.ok() ? "; the previous files are back, and PostgreSQL keeps its rules"
                             : "; the previous files could not be written back (" +
                                   restored.error().message + ")"));
  }
  Status reloaded = ReloadAndWait(conn, target.reload_timeout);
  if (!reloaded.ok()) return std::move(reloaded).error().Within("pg_hba.conf written");
  spdlog::info("pg_hba.conf and pg_ident.conf rewritten; PostgreSQL reloaded them");
  return Ok();
}

}  // namespace skydb::supervisor
