// skydb's database schema as data: every migration skydb applies, in version order. skydb's
// own come first (1..99), then the session store's table (100 and up). A released migration is
// never edited: databases have it applied and record its name, which the runner compares
// (src/schema/migrate.h); a change to the schema is a new version.
//
// Thread-safety: the list is built once and immutable; safe to read from any thread.
// Ownership: AllMigrations() returns a reference to a static list.
// Failure: none here; the runner validates a list before applying it.
#pragma once

#include <string>
#include <vector>

namespace skydb {

// One schema migration: applied once, in its own transaction, in version order.
struct Migration {
  int version = 0;
  std::string name;  // recorded with the version; a database recording another name is refused
  std::string sql;   // one statement
};

// The first version of the session store's migrations (sky_sessions and its index).
inline constexpr int kFirstSessionStoreMigration = 100;

// Every migration, skydb's own then the session store's, in version order.
const std::vector<Migration>& AllMigrations();

// The app's own database in a private cluster (docs/embedding.md), ensured on every start: the
// role exists and may log in but is no superuser and cannot create roles, databases or
// replicate; the database exists, is owned by it and is closed to PUBLIC; skydb's own database
// is closed to PUBLIC too, so the role cannot connect to it. It is the configured app of
// skydb's registry of apps (src/schema/app_registry.h): skydb creates the role and database, or
// finds them recorded as its own, and refuses a role or database someone else made.
struct AppDatabase {
  std::string database = "app";
  std::string role = "app";
  std::string password;       // "" = none (peer authentication); else stored as scram-sha-256
  int connection_limit = -1;  // the role's CONNECTION LIMIT; -1 = none
  // OS users pg_ident.conf maps to the role (peer authentication): the cluster user (child
  // mode) and app.user.
  std::vector<std::string> os_users;
  // The connections skydb keeps for itself (the store's pool and headroom): recorded so that
  // `skydb app add` knows what is left for other apps' connection limits; 0 = not recorded.
  int skydb_connections = 0;
  // app.extensions: created (IF NOT EXISTS … CASCADE) in the database by the superuser; one the
  // server does not have stops the start with ExtensionAdvice. Others are never dropped.
  std::vector<std::string> extensions;
  bool operator==(const AppDatabase&) const = default;
};

// What to install so that PostgreSQL `major` has the extension `name`: its Debian package
// (postgresql-N for contrib, postgresql-N-pgvector for vector, …), or a bundle staged from an
// installation that has it.
std::string ExtensionAdvice(const std::string& name, int major);

}  // namespace skydb
