// The migration list: its shape, and its content pinned byte for byte (databases in the field
// have these applied; a change to the schema must be a new version, never an edit).
#include <gtest/gtest.h>

#include "schema/migrate.h"

namespace skydb::schema {
namespace {

TEST(MigrationsTest, AllAreValid) { EXPECT_TRUE(ValidateMigrations(AllMigrations()).ok()); }

TEST(MigrationsTest, VersionsMustIncrease) {
  EXPECT_FALSE(ValidateMigrations({{2, "b", "SELECT 1"}, {1, "a", "SELECT 1"}}).ok());
  EXPECT_FALSE(ValidateMigrations({{1, "a", "SELECT 1"}, {1, "b", "SELECT 1"}}).ok());
  EXPECT_FALSE(ValidateMigrations({{0, "a", "SELECT 1"}}).ok());
  EXPECT_FALSE(ValidateMigrations({{1, "", "SELECT 1"}}).ok());
  EXPECT_TRUE(ValidateMigrations({{1, "a", "SELECT 1"}, {5, "b", "SELECT 1"}}).ok());
}

TEST(MigrationsTest, ReleasedMigrationsAreUnchanged) {
  const std::vector<Migration> released = {
      {1, "skydb schema", "CREATE SCHEMA IF NOT EXISTS skydb"},
      {100, "sky_sessions",
       "CREATE TABLE sky_sessions ( id bytea PRIMARY KEY, expires_at bigint, expiry_bucket "
       "bigint, data bytea NOT NULL) WITH (fillfactor = 60, toast_tuple_target = 8160)"},
      {101, "sky_sessions data inline",
       "ALTER TABLE sky_sessions ALTER COLUMN data SET STORAGE MAIN"},
      {102, "sky_sessions expiry index",
       "CREATE INDEX sky_sessions_expiry_bucket ON sky_sessions (expiry_bucket) WHERE "
       "expiry_bucket IS NOT NULL"},
      {103, "sky_sessions distributed by id (Citus)",
       "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = "
       "'create_distributed_table') THEN PERFORM create_distributed_table('sky_sessions', "
       "'id'); END IF; END $$"},
  };
  const auto& all = AllMigrations();
  ASSERT_GE(all.size(), released.size());
  for (size_t i = 0; i < released.size(); ++i) {
    EXPECT_EQ(all[i].version, released[i].version);
    EXPECT_EQ(all[i].name, released[i].name) << "version " << released[i].version;
    EXPECT_EQ(all[i].sql, released[i].sql) << "version " << released[i].version;
  }
}

TEST(MigrationsTest, TheSessionStoreStartsAtItsFirstVersion) {
  int store = 0;
  for (const auto& m : AllMigrations()) {
    if (m.version >= kFirstSessionStoreMigration) ++store;
  }
  EXPECT_EQ(store, 13);
  EXPECT_EQ(AllMigrations().front().version, 1);
}

}  // namespace
}  // namespace skydb::schema
