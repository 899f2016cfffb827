// The migrations themselves. Their SQL and names are what databases in the field have applied:
// append new versions, never edit these.
#include "skydb/schema.h"

namespace skydb {

const std::vector<Migration>& AllMigrations() {
  // One statement per migration: the runner executes each as a single statement.
  static const std::vector<Migration> kMigrations = {
      {1, "skydb schema", "CREATE SCHEMA IF NOT EXISTS skydb"},
      // The session store (kFirstSessionStoreMigration and up).
      // id: the session key, also the Citus distribution column. No index on expires_at:
      // every write changes it, and an index on it would defeat HOT updates; the sweeper
      // uses expiry_bucket (the hour of the deadline), which changes rarely.
      {100, "sky_sessions",
       "CREATE TABLE sky_sessions ("
       " id bytea PRIMARY KEY,"
       " expires_at bigint,"
       " expiry_bucket bigint,"
       " data bytea NOT NULL"
       ") WITH (fillfactor = 60, toast_tuple_target = 8160)"},
      {101, "sky_sessions data inline",
       "ALTER TABLE sky_sessions ALTER COLUMN data SET STORAGE MAIN"},
      {102, "sky_sessions expiry index",
       "CREATE INDEX sky_sessions_expiry_bucket ON sky_sessions (expiry_bucket)"
       " WHERE expiry_bucket IS NOT NULL"},
      // Citus: shards by the session key, so each statement for one key goes to one worker.
      // Without Citus (no create_distributed_table function) the migration does nothing.
      {103, "sky_sessions distributed by id (Citus)",
       "DO $$ BEGIN"
       " IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'create_distributed_table') THEN"
       " PERFORM create_distributed_table('sky_sessions', 'id'); END IF; END $$"},
  };
  return kMigrations;
}

}  // namespace skydb
