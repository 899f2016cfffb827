#include "skydb/app_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skydb {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Key;
using ::testing::Not;

Config EmbeddedAt(const std::string& dir) {
  Config c;
  c.data_dir = dir;
  return c;
}

TEST(AppEnvironmentTest, EmbeddedNamesTheAppsDatabaseAndTheStoreSocket) {
  auto env = AppEnvironmentFor(EmbeddedAt("/var/lib/shop/"));
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_THAT(env->vars,
              ElementsAre(Key("DATABASE_URL"), Key("SKY_DB_PATH"), Key("PGHOST"), Key("PGPORT"),
                          Key("PGDATABASE"), Key("PGUSER"), Key("SKY_LIVE_STORE"),
                          Key("SKY_LIVE_STORE_PATH"), Key("REDIS_URL")));
  EXPECT_EQ(*env->Find("DATABASE_URL"), "postgresql:///app?host=/var/lib/shop/run&user=app");
  EXPECT_EQ(*env->Find("SKY_DB_PATH"), *env->Find("DATABASE_URL"));
  EXPECT_EQ(*env->Find("PGHOST"), "/var/lib/shop/run");
  EXPECT_EQ(*env->Find("PGDATABASE"), "app");
  EXPECT_EQ(*env->Find("PGUSER"), "app");
  EXPECT_EQ(*env->Find("SKY_LIVE_STORE"), "redis");
  EXPECT_EQ(*env->Find("SKY_LIVE_STORE_PATH"), "/var/lib/shop/run/skydb.sock");
  EXPECT_EQ(*env->Find("REDIS_URL"), "unix:///var/lib/shop/run/skydb.sock");
}

TEST(AppEnvironmentTest, ConfiguredNamesAndSocketAreUsedAndPathsAreEncodedInTheUrl) {
  Config c = EmbeddedAt("/srv/my app");
  c.app.database = "shop";
  c.app.role = "shop_web";
  c.resp.socket = "/run/shop/store.sock";
  auto env = AppEnvironmentFor(c);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*env->Find("DATABASE_URL"), "postgresql:///shop?host=/srv/my%20app/run&user=shop_web");
  EXPECT_EQ(*env->Find("PGHOST"), "/srv/my app/run");
  EXPECT_EQ(*env->Find("REDIS_URL"), "unix:///run/shop/store.sock");
}

TEST(AppEnvironmentTest, ExternalDatabaseIsPassedAsConfiguredWithoutPgVariables) {
  Config c = EmbeddedAt("/var/lib/shop");
  c.store.database_url = "postgresql://app:s3cret@db1,db2/shop";
  auto env = AppEnvironmentFor(c);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*env->Find("DATABASE_URL"), c.store.database_url);
  EXPECT_EQ(env->Find("PGHOST"), nullptr);
  EXPECT_EQ(*env->Find("REDIS_URL"), "unix:///var/lib/shop/run/skydb.sock");
}

TEST(AppEnvironmentTest, MemoryStoreHasNoDatabase) {
  Config c = EmbeddedAt("/tmp/x");
  c.store.kind = StoreKind::kMemory;
  auto env = AppEnvironmentFor(c);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->Find("DATABASE_URL"), nullptr);
  EXPECT_NE(env->Find("REDIS_URL"), nullptr);
}

TEST(AppEnvironmentTest, RelativeDataDirBecomesAbsolute) {
  auto env = AppEnvironmentFor(EmbeddedAt("rel/dir"));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->Find("PGHOST")->front(), '/');
  EXPECT_THAT(*env->Find("PGHOST"), HasSubstr("/rel/dir/run"));
}

TEST(AppEnvironmentTest, PathThatIsNotUtf8IsRefused) {
  auto env = AppEnvironmentFor(EmbeddedAt("/srv/\xff"));
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(env.error().message, HasSubstr("UTF-8"));
}

TEST(AppEnvironmentTest, TheDatabaseAddressAndSocketAreTakenAsGiven) {
  auto env = AppEnvironmentFor(AppDatabaseAddress{"", "/s", "db", "r"}, "/sock/store");
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(*env->Find("DATABASE_URL"), "postgresql:///db?host=/s&user=r");
  EXPECT_EQ(*env->Find("PGHOST"), "/s");
  EXPECT_EQ(*env->Find("REDIS_URL"), "unix:///sock/store");
  auto external = AppEnvironmentFor(AppDatabaseAddress{"postgresql://h/x", "", "", ""}, "/k");
  ASSERT_TRUE(external.ok());
  EXPECT_EQ(*external->Find("DATABASE_URL"), "postgresql://h/x");
  EXPECT_EQ(external->Find("PGHOST"), nullptr);
  auto none = AppEnvironmentFor(AppDatabaseAddress{}, "/k");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->Find("DATABASE_URL"), nullptr);
}

// What a daemon's database source would report, for callers with no daemon to ask: the socket
// dir is DIR/run of the layout (skydb/data_dir_layout.h).
TEST(AppEnvironmentTest, ConfiguredAppDatabaseFollowsTheStoreKind) {
  Config embedded = EmbeddedAt("/var/lib/shop/");
  AppDatabaseAddress a = ConfiguredAppDatabase(embedded);
  EXPECT_EQ(a.url, "");
  EXPECT_EQ(a.socket_dir, "/var/lib/shop/run");
  EXPECT_EQ(a.database, "app");
  EXPECT_EQ(a.role, "app");
  Config external = embedded;
  external.store.database_url = "postgresql://h/x";
  EXPECT_EQ(ConfiguredAppDatabase(external).url, "postgresql://h/x");
  EXPECT_EQ(ConfiguredAppDatabase(external).socket_dir, "");
  Config memory = embedded;
  memory.store.kind = StoreKind::kMemory;
  EXPECT_EQ(ConfiguredAppDatabase(memory).url, "");
  EXPECT_EQ(ConfiguredAppDatabase(memory).socket_dir, "");
}

TEST(AppEnvironmentTest, RenderingsQuoteWhatTheirReadersNeed) {
  AppEnvironment env;
  env.vars = {{"A", "it's \"x\" \\ $HOME"}};
  EXPECT_EQ(RenderShellEnvironment(env), "export A='it'\\''s \"x\" \\ $HOME'\n");
  EXPECT_EQ(RenderSystemdEnvironment(env), "A=\"it's \\\"x\\\" \\\\ $HOME\"\n");
  EXPECT_EQ(RenderJsonEnvironment(env), "{\"A\":\"it's \\\"x\\\" \\\\ $HOME\"}\n");
}

TEST(RedactedDatabaseUrlTest, PasswordsAreNeverShown) {
  EXPECT_EQ(RedactedDatabaseUrl("postgresql://app:s3cret@db1:5432,db2/shop"),
            "postgresql://app:<redacted>@db1:5432,db2/shop");
  EXPECT_EQ(RedactedDatabaseUrl("postgresql:///shop?host=/run&password=s3cret&user=a"),
            "postgresql:///shop?host=/run&password=<redacted>&user=a");
  EXPECT_EQ(RedactedDatabaseUrl("host=db password='s 3cret' dbname=x"),
            "host=db password=<redacted> dbname=x");
  EXPECT_EQ(RedactedDatabaseUrl("postgresql://app@db/shop"), "postgresql://app@db/shop");
  EXPECT_EQ(RedactedDatabaseUrl("postgresql:///app?host=/var/lib/a/run&user=app"),
            "postgresql:///app?host=/var/lib/a/run&user=app");
  EXPECT_THAT(RedactedDatabaseUrl("password=x"), Not(HasSubstr("x")));
}

}  // namespace
}  // namespace skydb
