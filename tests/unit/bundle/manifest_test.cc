#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "skydb/bundle.h"

namespace skydb {
namespace {

using ::testing::HasSubstr;

BundleManifest Sample() {
  BundleManifest m;
  m.pg_version = "15.20";
  m.pg_version_line = "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)";
  m.arch = "x86_64";
  m.glibc_baseline = "2.34";
  m.source = "/usr/lib/postgresql/15";
  m.bin_dir = "lib/postgresql/15/bin";
  m.system_tzdata = "/usr/share/zoneinfo";
  m.files = {{"lib/postgresql/15/bin/postgres", std::string(64, 'a'), 0755, 10},
             {"share/postgresql/15/postgres.bki", std::string(64, 'b'), 0644, 5}};
  m.total_size = 15;
  return m;
}

TEST(ManifestTest, RoundTrips) {
  BundleManifest m = Sample();
  auto parsed = ParseManifest(RenderManifest(m));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(RenderManifest(*parsed), RenderManifest(m));
  EXPECT_EQ(parsed->files[0].mode, 0755U);
  EXPECT_EQ(parsed->system_tzdata, "/usr/share/zoneinfo");
}

TEST(ManifestTest, RefusesPathsThatLeaveTheBundle) {
  for (const char* bad :
       {"../etc/passwd", "/etc/passwd", "a//b", "a/./b", "a/../../b", "a/", "manifest.json"}) {
    BundleManifest m = Sample();
    m.files.insert(m.files.begin(), {bad, std::string(64, 'c'), 0644, 0});
    Status status = CheckManifest(m);
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_THAT(status.error().message, HasSubstr("unsafe path")) << bad;
  }
}

// A file name that is not UTF-8 is refused by name (rendering it used to throw and abort
// `skydb bundle stage`); an informational field that is not UTF-8 renders with U+FFFD.
TEST(ManifestTest, NamesThatAreNotUtf8AreRefusedNotThrown) {
  BundleManifest m = Sample();
  m.files.insert(m.files.begin(), {"lib/x\xff.so", std::string(64, 'c'), 0644, 0});
  EXPECT_THAT(CheckManifest(m).error().message, HasSubstr("its name is not UTF-8"));
  m = Sample();
  m.source = "/opt/pg\xff";
  EXPECT_THAT(RenderManifest(m), HasSubstr("\"/opt/pg\xef\xbf\xbd\""));
}

TEST(ManifestTest, RefusesInconsistentTotalsOrderAndBinDir) {
  BundleManifest m = Sample();
  m.total_size = 16;
  EXPECT_THAT(CheckManifest(m).error().message, HasSubstr("total_size 16"));
  m = Sample();
  std::swap(m.files[0], m.files[1]);
  EXPECT_THAT(CheckManifest(m).error().message, HasSubstr("not sorted"));
  m = Sample();
  m.bin_dir = "bin";
  EXPECT_THAT(CheckManifest(m).error().message, HasSubstr("holds no postgres"));
}

// glibc_baseline is compared number by number with the host's glibc; text that is not a dotted
// version (or whose numbers overflow an int) is a damaged manifest, not glibc 0.
TEST(ManifestTest, RefusesAGlibcBaselineThatIsNotAVersion) {
  for (const char* bad : {"2.x", "2..34", ".34", "2.34.", "2.99999999999", "-2.34", "2.+3"}) {
    BundleManifest m = Sample();
    m.glibc_baseline = bad;
    Status status = CheckManifest(m);
    ASSERT_FALSE(status.ok()) << bad;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(status.error().message,
              std::string("manifest.json: glibc_baseline '") + bad +
                  "' is not a version such as 2.34; the bundle is damaged: stage it again")
        << bad;
    EXPECT_EQ(CheckHostCompatible(m, "x86_64", "2.36").error().message, status.error().message)
        << bad;
  }
  BundleManifest m = Sample();
  m.glibc_baseline = "";  // no file needs a versioned glibc symbol
  EXPECT_TRUE(CheckManifest(m).ok());
  EXPECT_TRUE(CheckHostCompatible(m, "x86_64", "2.36").ok());
}

TEST(ManifestTest, RefusesOtherFormatsAndGarbage) {
  std::string text = RenderManifest(Sample());
  text.replace(text.find("\"format\": 1"), 11, "\"format\": 2");
  auto other = ParseManifest(text);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::kVersionMismatch);
  EXPECT_FALSE(ParseManifest("{").ok());
  EXPECT_THAT(ParseManifest("{}").error().message, HasSubstr("manifest.json"));
}

TEST(HostCompatibleTest, ArchitectureAndGlibcBaseline) {
  BundleManifest m = Sample();  // x86_64, glibc 2.34
  EXPECT_TRUE(CheckHostCompatible(m, "x86_64", "2.34").ok());
  EXPECT_TRUE(CheckHostCompatible(m, "x86_64", "2.36").ok());
  Status old_glibc = CheckHostCompatible(m, "x86_64", "2.31");
  ASSERT_FALSE(old_glibc.ok());
  EXPECT_EQ(old_glibc.error().code, ErrorCode::kVersionMismatch);
  EXPECT_EQ(old_glibc.error().message,
            "the bundle needs glibc 2.34 or newer but this host has 2.31; stage it on a host "
            "whose glibc is 2.31 or older, or upgrade this host");
  m.glibc_baseline = "2.3.4";
  EXPECT_TRUE(CheckHostCompatible(m, "x86_64", "2.10").ok());  // numeric, not string order
  Status unreadable = CheckHostCompatible(m, "x86_64", "2.x");
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.error().message,
            "cannot compare this host's glibc version '2.x' with the bundle's baseline 2.3.4; "
            "extract the bundle on a host with a numbered glibc release");
  Status arch = CheckHostCompatible(m, "aarch64", "2.36");
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.error().message,
            "the bundle is for x86_64 but this host is aarch64; stage a bundle on a host of this "
            "architecture");
}

}  // namespace
}  // namespace skydb
