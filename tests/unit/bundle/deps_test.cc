#include "bundle/deps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fakes.h"

namespace skydb::bundle {
namespace {

using ::testing::HasSubstr;

constexpr const char* kDebianPgConfig =
    "BINDIR = /usr/lib/postgresql/15/bin\n"
    "PKGLIBDIR = /usr/lib/postgresql/15/lib\n"
    "SHAREDIR = /usr/share/postgresql/15\n"
    "CONFIGURE =  '--build=x86_64-linux-gnu' '--with-system-tzdata=/usr/share/zoneinfo' "
    "'AWK=mawk'\n";

TEST(PgConfigTest, ReadsDirectoriesAndSystemTzdata) {
  auto dirs = ParsePgConfig(kDebianPgConfig);
  ASSERT_TRUE(dirs.ok()) << dirs.error().message;
  EXPECT_EQ(dirs->bindir, "/usr/lib/postgresql/15/bin");
  EXPECT_EQ(dirs->pkglibdir, "/usr/lib/postgresql/15/lib");
  EXPECT_EQ(dirs->sharedir, "/usr/share/postgresql/15");
  EXPECT_EQ(dirs->system_tzdata, "/usr/share/zoneinfo");
}

TEST(PgConfigTest, RefusesOutputWithoutTheDirectories) {
  auto dirs = ParsePgConfig("BINDIR = /x\n");
  ASSERT_FALSE(dirs.ok());
  EXPECT_THAT(dirs.error().message, HasSubstr("BINDIR, PKGLIBDIR and SHAREDIR"));
}

TEST(LayoutTest, DebianKeepsPathsBelowTheCommonPrefix) {
  auto layout = LayoutFor(*ParsePgConfig(kDebianPgConfig));
  EXPECT_EQ(layout.bin, "lib/postgresql/15/bin");
  EXPECT_EQ(layout.pkglib, "lib/postgresql/15/lib");
  EXPECT_EQ(layout.share, "share/postgresql/15");
}

TEST(LayoutTest, SourceBuildPrefix) {
  InstallDirs dirs{"/usr/local/pgsql/bin", "/usr/local/pgsql/lib", "/usr/local/pgsql/share", ""};
  auto layout = LayoutFor(dirs);
  EXPECT_EQ(layout.bin, "bin");
  EXPECT_EQ(layout.pkglib, "lib");
  EXPECT_EQ(layout.share, "share");
}

TEST(RelocatableTest, TreeWithoutPgConfigKeepsItsOwnLayout) {
  testing::FakeFileSystem fs;
  fs.AddExecutable("/pg/bin/postgres");
  fs.AddFile("/pg/lib/postgresql/plpgsql.so", "");
  fs.AddFile("/pg/share/postgresql/postgres.bki", "");
  fs.AddDir("/pg/share/postgresql/timezone");
  auto dirs = RelocatableDirs(fs, "/pg");
  ASSERT_TRUE(dirs.ok()) << dirs.error().message;
  EXPECT_EQ(dirs->bindir, "/pg/bin");
  EXPECT_EQ(dirs->pkglibdir, "/pg/lib/postgresql");
  EXPECT_EQ(dirs->sharedir, "/pg/share/postgresql");
  EXPECT_EQ(dirs->system_tzdata, "");
  auto layout = LayoutFor(*dirs);
  EXPECT_EQ(layout.bin, "bin");
  EXPECT_EQ(layout.pkglib, "lib/postgresql");
  EXPECT_EQ(layout.share, "share/postgresql");
}

TEST(RelocatableTest, FlatLibAndShareAreFoundToo) {
  testing::FakeFileSystem fs;
  fs.AddFile("/pg/lib/plpgsql.so", "");
  fs.AddFile("/pg/share/postgres.bki", "");
  auto dirs = RelocatableDirs(fs, "/pg");
  ASSERT_TRUE(dirs.ok()) << dirs.error().message;
  EXPECT_EQ(dirs->pkglibdir, "/pg/lib");
  EXPECT_EQ(dirs->sharedir, "/pg/share");
}

TEST(RelocatableTest, ATreeWithoutServerFilesIsNamedWithWhatItLacks) {
  testing::FakeFileSystem fs;
  fs.AddFile("/pg/share/postgresql/postgres.bki", "");
  auto dirs = RelocatableDirs(fs, "/pg");
  ASSERT_FALSE(dirs.ok());
  EXPECT_EQ(dirs.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(dirs.error().message,
              HasSubstr("/pg has no bin/pg_config and is not a relocatable PostgreSQL tree: it "
                        "lacks lib/postgresql/plpgsql.so (or lib/plpgsql.so)"));
}

TEST(LayoutTest, RelativeDirWalksUpThenDown) {
  EXPECT_EQ(RelativeDir("lib/postgresql/15/bin", "skydb-libs"), "../../../../skydb-libs");
  EXPECT_EQ(RelativeDir("lib/postgresql/15/lib", "skydb-libs"), "../../../../skydb-libs");
  EXPECT_EQ(RelativeDir("skydb-libs", "skydb-libs"), ".");
  EXPECT_EQ(RelativeDir("a/b", "a/c"), "../c");
}

TEST(BaseCLibraryTest, GlibcAndTheLoaderOnly) {
  for (const char* lib : {"libc.so.6", "libm.so.6", "libresolv.so.2", "ld-linux-x86-64.so.2",
                          "ld-linux-aarch64.so.1", "libpthread.so.0", "libnss_files.so.2"}) {
    EXPECT_TRUE(IsBaseCLibrary(lib)) << lib;
  }
  for (const char* lib : {"libpq.so.5", "libstdc++.so.6", "libgcc_s.so.1", "libssl.so.3",
                          "libcrypt.so.1", "libz.so.1"}) {
    EXPECT_FALSE(IsBaseCLibrary(lib)) << lib;
  }
}

TEST(WalkTest, FindsThisBinarysLibrariesButNotGlibc) {
  auto fs = NewRealFileSystem();
  auto self = fs->RealPath("/proc/self/exe");
  ASSERT_TRUE(self.ok());
  auto walk = WalkDependencies({*self}, *fs,
                               DefaultLibraryDirs(
#if defined(__aarch64__)
                                   "aarch64"
#else
                                   "x86_64"
#endif
                                   ));
  ASSERT_TRUE(walk.ok()) << walk.error().message;
  std::vector<std::string> names;
  for (const auto& lib : walk->libraries) {
    names.push_back(lib.soname);
    EXPECT_FALSE(IsBaseCLibrary(lib.soname));
    EXPECT_EQ(lib.path.front(), '/');
  }
  EXPECT_THAT(names, ::testing::Contains(::testing::StartsWith("libstdc++.so")));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("libc.so.6")));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(WalkTest, NamesAMissingLibraryAndWhereItLooked) {
  auto fs = NewRealFileSystem();
  auto self = fs->RealPath("/proc/self/exe");
  ASSERT_TRUE(self.ok());
  auto walk = WalkDependencies({*self}, *fs, {"/nonexistent-libs"});
  ASSERT_FALSE(walk.ok());
  EXPECT_EQ(walk.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(walk.error().message, HasSubstr("which is in none of /nonexistent-libs"));
}

}  // namespace
}  // namespace skydb::bundle
