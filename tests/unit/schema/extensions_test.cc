// What skydb tells an operator to install for an extension PostgreSQL lacks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "skydb/schema.h"

namespace skydb {
namespace {

using ::testing::HasSubstr;

TEST(ExtensionAdviceTest, NamesTheDebianPackageForTheMajor) {
  EXPECT_THAT(ExtensionAdvice("pgcrypto", 17), HasSubstr("Debian ships in postgresql-17"));
  EXPECT_THAT(ExtensionAdvice("uuid-ossp", 15), HasSubstr("postgresql-15;"));
  EXPECT_THAT(ExtensionAdvice("vector", 15), HasSubstr("Debian: postgresql-15-pgvector (in "));
  EXPECT_THAT(ExtensionAdvice("postgis", 16), HasSubstr("postgresql-16-postgis-3"));
  EXPECT_THAT(ExtensionAdvice("pg_cron", 18), HasSubstr("postgresql-18-cron"));
  EXPECT_THAT(ExtensionAdvice("plpython3u", 15), HasSubstr("postgresql-plpython3-15"));
  EXPECT_THAT(ExtensionAdvice("ip4r", 15), HasSubstr("postgresql-15-ip4r"));
  EXPECT_THAT(ExtensionAdvice("ip4r", 15), HasSubstr("or stage a bundle (skydb bundle stage)"));
}

}  // namespace
}  // namespace skydb
