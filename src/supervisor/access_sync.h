// Who may connect to the private cluster, brought in line with skydb's registry of apps
// (schema/app_registry.h) on a running server: pg_hba.conf and pg_ident.conf are rendered whole
// (supervisor/conf_render.h) from the apps that may log in and from listen_addresses (TCP lines
// only when PostgreSQL listens on TCP), written when they changed, checked by PostgreSQL itself
// (pg_hba_file_rules, and pg_ident_file_mappings from PostgreSQL 15) and reloaded; the reload
// counts only once pg_conf_load_time() has advanced.
//
// A file PostgreSQL finds an error in is never reloaded: the previous files are written back (so
// the next start reads them too) and the error names the line and PostgreSQL's words.
// Thread-safety: uses the connection it is given, on the caller's thread; callers hold the apps
// lock (schema::AppsLock), so two renderings never interleave their writes.
#pragma once

#include <string>

#include "pgconn/pgconn.h"
#include "schema/app_registry.h"
#include "skydb/supervisor.h"
#include "supervisor/conf_render.h"

namespace skydb::supervisor {

// The rows that may log in (ready), the configured app first, as conf_render's apps.
std::vector<AccessApp> AccessAppsFrom(const std::vector<schema::AppRow>& rows);

// Renders from skydb.apps and the server's listen_addresses, then ApplyAccessFiles.
Status SyncAccessFiles(pg::Connection& conn, const AccessTarget& target);

// Writes `files` into target.pgdata when they differ from what is there, has PostgreSQL check
// them, reloads and waits for the reload; Ok at once when nothing changed.
Status ApplyAccessFiles(pg::Connection& conn, const AccessTarget& target, const AccessFiles& files);

}  // namespace skydb::supervisor
