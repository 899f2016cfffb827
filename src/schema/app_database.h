// Ensures the app's database (skydb/schema.h AppDatabase) over a superuser connection to the
// private cluster: idempotent, identifiers quoted, the password (if any) sent only as its
// scram-sha-256 verifier. The app is the configured one of skydb's registry
// (schema/app_registry.h): a role or database skydb did not create is refused, never adopted;
// an earlier configured app is kept, disabled. Every database, `skydb_database` (skydb's own)
// included, is closed to PUBLIC.
// Thread-safety: uses the connection it is given, on the caller's thread.
// Failure: the statement that failed, with the server's message.
#pragma once

#include <string>
#include <vector>

#include "pgconn/pgconn.h"
#include "skydb/schema.h"

namespace skydb::schema {

// "name" with embedded quotes doubled.
std::string QuoteIdentifier(const std::string& name);

Status EnsureAppDatabase(pg::Connection& conn, const AppDatabase& app,
                         const std::string& skydb_database);

// Over a superuser connection to the app's database `database`: every extension of `names`
// that is not installed yet is created, in order; the first the server does not have is a
// NotFound naming it and what to install (ExtensionAdvice).
Status EnsureExtensions(pg::Connection& conn, const std::string& database,
                        const std::vector<std::string>& names);

}  // namespace skydb::schema
