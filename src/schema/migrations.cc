// The migrations themselves. Their SQL and names are what databases in the field have applied:
// append new versions, never edit these.
#include "schema/acl_rows.h"
#include "skydb/schema.h"

namespace skydb {
namespace {

// Pub/sub between daemons (src/pgconn/pubsub_sql.h): who is alive, what each daemon
// subscribes to, and messages too large for a NOTIFY payload. UNLOGGED: each daemon
// writes its part again when it is lost. A name is keyed by its digest (a btree entry
// cannot hold a long name); a message is stored without compression (EXTERNAL).
// Idempotent, like the store's (its test harness runs them again on one database).
constexpr char kPubSubBetweenDaemons[] =
    "DO $m$ BEGIN"
    " CREATE UNLOGGED TABLE IF NOT EXISTS skydb_pubsub_daemons ("
    "  id bigint PRIMARY KEY, heartbeat_at timestamptz NOT NULL,"
    "  started_at timestamptz NOT NULL DEFAULT now(), description text NOT NULL);"
    " CREATE UNLOGGED TABLE IF NOT EXISTS skydb_pubsub_subscriptions ("
    "  daemon bigint NOT NULL, pattern boolean NOT NULL, name bytea NOT NULL,"
    "  digest bytea GENERATED ALWAYS AS (sha256(name)) STORED, subscribers bigint NOT NULL,"
    "  PRIMARY KEY (daemon, pattern, digest));"
    " CREATE INDEX IF NOT EXISTS skydb_pubsub_subscriptions_digest"
    "  ON skydb_pubsub_subscriptions (digest);"
    " CREATE INDEX IF NOT EXISTS skydb_pubsub_subscriptions_patterns"
    "  ON skydb_pubsub_subscriptions (daemon) WHERE pattern;"
    " CREATE UNLOGGED TABLE IF NOT EXISTS skydb_pubsub_messages ("
    "  publisher bigint NOT NULL, seq bigint NOT NULL, readers_left integer NOT NULL,"
    "  created_at timestamptz NOT NULL DEFAULT now(), channel bytea NOT NULL,"
    "  message bytea NOT NULL, PRIMARY KEY (publisher, seq));"
    " ALTER TABLE skydb_pubsub_messages ALTER COLUMN message SET STORAGE EXTERNAL;"
    // One batch: its large messages' rows, then its payloads NOTIFYed in order, in the
    // caller's transaction (one statement).
    " CREATE OR REPLACE FUNCTION skydb_pubsub_publish(p_publisher bigint, p_seqs bigint[],"
    "  p_readers bigint[], p_channels bytea[], p_messages bytea[], p_payloads text[])"
    "  RETURNS void LANGUAGE plpgsql AS $f$"
    "  DECLARE payload text;"
    "  BEGIN"
    "   INSERT INTO public.skydb_pubsub_messages"
    "    (publisher, seq, readers_left, channel, message)"
    "    SELECT p_publisher, s, r, c, m FROM unnest(p_seqs, p_readers, p_channels, p_messages)"
    "    AS t(s, r, c, m);"
    "   FOREACH payload IN ARRAY p_payloads LOOP"
    "    PERFORM pg_notify('skydb.pubsub', payload);"
    "   END LOOP;"
    "  END $f$;"
    // One reader's read of rows: the last reader of a row deletes it. Concurrent readers
    // of one row queue on its lock, each seeing the count the one before left.
    " CREATE OR REPLACE FUNCTION skydb_pubsub_take(p_publishers bigint[], p_seqs bigint[])"
    "  RETURNS TABLE (out_publisher bigint, out_seq bigint, out_channel bytea,"
    "  out_message bytea) LANGUAGE plpgsql AS $f$"
    "  DECLARE i integer; left_after integer;"
    "  BEGIN"
    "   FOR i IN 1 .. coalesce(array_length(p_seqs, 1), 0) LOOP"
    "    DELETE FROM public.skydb_pubsub_messages t"
    "     WHERE t.publisher = p_publishers[i] AND t.seq = p_seqs[i] AND t.readers_left <= 1"
    "     RETURNING t.channel, t.message INTO out_channel, out_message;"
    "    IF NOT FOUND THEN"
    "     UPDATE public.skydb_pubsub_messages t SET readers_left = t.readers_left - 1"
    "      WHERE t.publisher = p_publishers[i] AND t.seq = p_seqs[i]"
    "      RETURNING t.readers_left, t.channel, t.message"
    "      INTO left_after, out_channel, out_message;"
    "     CONTINUE WHEN NOT FOUND;"
    "     IF left_after <= 0 THEN"
    "      DELETE FROM public.skydb_pubsub_messages t"
    "       WHERE t.publisher = p_publishers[i] AND t.seq = p_seqs[i];"
    "     END IF;"
    "    END IF;"
    "    out_publisher := p_publishers[i];"
    "    out_seq := p_seqs[i];"
    "    RETURN NEXT;"
    "   END LOOP;"
    "  END $f$;"
    " END $m$";

}  // namespace

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
      {104, "pubsub between daemons", kPubSubBetweenDaemons},
      // Hashes and sets (docs/storage.md): the key's row says what it holds (0 string, 1 hash,
      // 2 set) and its version (what shared coherence compares); each field or member is a row
      // of sky_fields, which goes with its key's row.
      {120, "sky_sessions kind and version",
       "ALTER TABLE sky_sessions ADD COLUMN kind smallint NOT NULL DEFAULT 0,"
       " ADD COLUMN version bigint NOT NULL DEFAULT 0"},
      {121, "sky_fields",
       "CREATE TABLE sky_fields ("
       " id bytea NOT NULL REFERENCES sky_sessions (id) ON DELETE CASCADE,"
       " field bytea NOT NULL,"
       " value bytea NOT NULL,"
       " expires_at bigint,"
       " PRIMARY KEY (id, field))"},
      {122, "sky_fields expiry index",
       "CREATE INDEX sky_fields_expires_at ON sky_fields (expires_at)"
       " WHERE expires_at IS NOT NULL"},
      {123, "sky_fields distributed by id (Citus)",
       "DO $$ BEGIN"
       " IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'create_distributed_table') THEN"
       " PERFORM create_distributed_table('sky_fields', 'id', colocate_with => 'sky_sessions');"
       " END IF; END $$"},
      // Large sessions (docs/storage.md): a value past toast_tuple_target (a 37 KB session) is
      // compressed on every write before it goes to TOAST, and lz4 does that at about half of
      // pglz's CPU. Only where the server has lz4; stored values keep pglz until rewritten.
      {124, "sky_sessions data compressed with lz4",
       "DO $$ BEGIN"
       " IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression'"
       " AND 'lz4' = ANY (enumvals)) THEN"
       " ALTER TABLE sky_sessions ALTER COLUMN data SET COMPRESSION lz4; END IF; END $$"},
      // Every write of a large session leaves its old TOAST chunks dead; throttled autovacuum
      // cannot keep up, the TOAST table grows without bound and every insert extends it
      // (docs/storage.md). Its vacuum runs unthrottled.
      {125, "sky_sessions TOAST vacuumed unthrottled",
       "ALTER TABLE sky_sessions SET (toast.autovacuum_vacuum_cost_delay = 0)"},
      // With autovacuum looking every second (for the TOAST table above), the sessions' heap
      // would be vacuumed and analyzed every second under load: a worker start each time, for
      // a heap that HOT pruning keeps and whose statistics no query needs. Once per 100,000
      // changes instead (docs/storage.md).
      {126, "sky_sessions heap vacuumed per 100,000 changes",
       "ALTER TABLE sky_sessions SET (autovacuum_vacuum_threshold = 100000,"
       " autovacuum_vacuum_insert_threshold = 100000, autovacuum_analyze_threshold = 100000)"},
      // The store's ACL users, shared by the daemons on this database (schema/acl_rows.h).
      {127, "store ACL users", schema::kAclTablesSql},
  };
  return kMigrations;
}

}  // namespace skydb
