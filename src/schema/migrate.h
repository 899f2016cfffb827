// The schema migration runner: a versioned table and one transaction per migration.
//
//   skydb_schema_migrations(version integer primary key, name text, applied_at timestamptz)
//
// Runners on several daemons (an external database) serialise on an advisory lock. A database
// that has applied a version this binary does not know (a newer skydb migrated it) is refused;
// so is one whose recorded name for a version differs from ours.
// Thread-safety: uses the connection it is given, on the caller's thread.
// Failure: the first failing migration's error, naming its version and name; the migrations
// before it stay applied (each committed on its own).
#pragma once

#include <vector>

#include "pgconn/pgconn.h"
#include "skydb/schema.h"

namespace skydb::schema {

// Versions strictly increasing and positive, names non-empty.
Status ValidateMigrations(const std::vector<Migration>& migrations);

// How daemons migrating at the same moment exclude each other.
enum class MigrationLock {
  // A session advisory lock around one transaction per migration (a direct connection or
  // session pooling).
  kSession,
  // Transaction pooling (store.pooler = "transaction"): a session lock would stay on whichever
  // server connection took it, and its unlock could run on another, so pg_advisory_xact_lock
  // and every missing migration in that one transaction: all of them or none.
  kTransaction,
};

// Applies what is missing under the migration lock; returns how many migrations were applied.
Result<int> ApplyMigrations(pg::Connection& conn, const std::vector<Migration>& migrations,
                            MigrationLock lock = MigrationLock::kSession);

}  // namespace skydb::schema
