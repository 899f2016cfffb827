// postgresql.conf value helpers: flooring, formatting, parsing pins back, quoting.
#include "tune/pg_values.h"

#include <gtest/gtest.h>

namespace skydb::tune_internal {
namespace {

TEST(FloorMemoryTest, WholeMegabytesAboveOneMegabyte) {
  EXPECT_EQ(FloorMemory(296 * kMiB + 255 * kKiB), 296 * kMiB);
  EXPECT_EQ(FloorMemory(kMiB), kMiB);
}

TEST(FloorMemoryTest, WholeKilobytesBelowButNeverUnder64k) {
  EXPECT_EQ(FloorMemory(546 * kKiB + 100), 546 * kKiB);
  EXPECT_EQ(FloorMemory(10 * kKiB), 64 * kKiB);
  EXPECT_EQ(FloorMemory(0), 64 * kKiB);
}

TEST(FormatMemoryTest, MegabytesOrKilobytes) {
  EXPECT_EQ(FormatMemory(296 * kMiB), "296MB");
  EXPECT_EQ(FormatMemory(16 * kGiB), "16384MB");
  EXPECT_EQ(FormatMemory(546 * kKiB), "546kB");
}

TEST(MebibytesTextTest, WholeUnitsOrFlooredMebibytes) {
  EXPECT_EQ(MebibytesText(1975 * kMiB), "1975 MiB");
  EXPECT_EQ(MebibytesText(1975 * kMiB + 1000), "1975 MiB");
  EXPECT_EQ(MebibytesText(16 * kGiB), "16 GiB");
  EXPECT_EQ(MebibytesText(1024 * kGiB), "1 TiB");
  EXPECT_EQ(MebibytesText(0), "0 MiB");
}

TEST(ParseSettingNumberTest, UnitsAndUnitless) {
  EXPECT_EQ(ParseSettingNumber("1GB", 8192), 1024.0 * 1024 * 1024);
  EXPECT_EQ(ParseSettingNumber("512 MB", 8192), 512.0 * 1024 * 1024);
  EXPECT_EQ(ParseSettingNumber("64kB", 1024), 64.0 * 1024);
  EXPECT_EQ(ParseSettingNumber("'2GB'", 1024), 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(ParseSettingNumber("1.5GB", 1), 1.5 * 1024 * 1024 * 1024);
  EXPECT_EQ(ParseSettingNumber("16384", 8192), 16384.0 * 8192);  // 8kB blocks
  EXPECT_EQ(ParseSettingNumber("100", 1), 100.0);
  EXPECT_EQ(ParseSettingNumber("0.9", 1), 0.9);
}

TEST(ParseSettingNumberTest, WordsAndUnknownUnitsAreNotNumbers) {
  for (std::string text : {"on", "try", "''", "", "12 parsecs", "nan", "inf", "1gb"}) {
    EXPECT_FALSE(ParseSettingNumber(text, 1).has_value()) << text;
  }
}

TEST(QuoteConfValueTest, PlainTokensStayBare) {
  for (std::string v : {"296MB", "36", "0700", "try", "on", "0.9", "-1", "lz4", "1e3"}) {
    EXPECT_EQ(QuoteConfValue(v), v);
  }
}

TEST(QuoteConfValueTest, WellFormedLiteralsStayAsTheyAre) {
  EXPECT_EQ(QuoteConfValue("''"), "''");
  EXPECT_EQ(QuoteConfValue("'localhost'"), "'localhost'");
  EXPECT_EQ(QuoteConfValue("'it''s'"), "'it''s'");
}

TEST(QuoteConfValueTest, EverythingElseIsQuotedAndEscaped) {
  EXPECT_EQ(QuoteConfValue(""), "''");
  EXPECT_EQ(QuoteConfValue("\"$user\", public"), "'\"$user\", public'");
  EXPECT_EQ(QuoteConfValue("it's"), "'it''s'");
  EXPECT_EQ(QuoteConfValue("a\nfsync = off"), "'a\\nfsync = off'");
  EXPECT_EQ(QuoteConfValue("C:\\x"), "'C:\\\\x'");
  EXPECT_EQ(QuoteConfValue("'unbalanced"), "'''unbalanced'");
}

}  // namespace
}  // namespace skydb::tune_internal
