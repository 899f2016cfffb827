// The session store's ACL users in PostgreSQL (migration 127), shared by every daemon on the
// database and by `skydb app add`:
//
//   skydb_acl_users(name text PRIMARY KEY, rules text)   ACL LIST's line after "user NAME "
//   skydb_acl_generation(generation bigint)              one row, bumped with every change
//
// Rules hold passwords only as SHA-256 (#hex). The `default` user is never stored: it is each
// daemon's resp.requirepass. The tables live in skydb's own database, which no app role may
// reach.
//
// Thread-safety: PgAclStorage is used by one thread at a time (the server's ACL thread); the
// free functions use the caller's connection on the caller's thread.
// Failure: the server's message; a broken connection is opened again at the next call.
#pragma once

#include <memory>
#include <string>

#include "pgconn/pgconn.h"
#include "skydb/acl_storage.h"
#include "skydb/result.h"

namespace skydb::schema {

// Migration 127's statement (the store's migrations apply it; never edit it), also run by
// `skydb app add` on a data dir whose store has not started yet. Idempotent.
extern const char kAclTablesSql[];

std::unique_ptr<AclStorage> NewPgAclStorage(std::string conninfo, bool named_statements);

// An app's store user: on, a password (kept as its SHA-256), its keys and channels those that
// start with "NAME:", every command but @dangerous (CONFIG, FLUSHALL, KEYS, CLIENT KILL, ...).
std::string AppStoreUserRules(const std::string& app, const std::string& password);
// Stores user `name` with `rules` (replacing it), or deletes it, on `conn`, bumping the
// generation in the same transaction.
Status PutAclUser(pg::Connection& conn, const std::string& name, const std::string& rules);
Status DeleteAclUser(pg::Connection& conn, const std::string& name);

}  // namespace skydb::schema
