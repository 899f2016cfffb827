#include "bundle/elf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "skydb/env.h"

namespace skydb::bundle {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

std::string SelfImage() {
  auto bytes = NewRealFileSystem()->ReadFile("/proc/self/exe");
  return bytes.ok() ? *bytes : "";
}

TEST(ElfTest, ReadsThisTestBinary) {
  std::string image = SelfImage();
  ASSERT_FALSE(image.empty());
  auto info = ParseElf(image, "self");
  ASSERT_TRUE(info.ok()) << info.error().message;
#if defined(__x86_64__)
  EXPECT_EQ(info->arch, "x86_64");
#elif defined(__aarch64__)
  EXPECT_EQ(info->arch, "aarch64");
#endif
  EXPECT_THAT(info->needed, Contains("libc.so.6"));
  EXPECT_THAT(info->needed, Contains(::testing::StartsWith("libstdc++.so")));
  EXPECT_FALSE(info->glibc_versions.empty());
  EXPECT_NE(NewestGlibcVersion(info->glibc_versions), "");
}

TEST(ElfTest, ReadsSonameOfALibrary) {
  auto bytes = NewRealFileSystem()->ReadFile("/proc/self/exe");
  ASSERT_TRUE(bytes.ok());
  // libc itself: a shared object with a SONAME and no NEEDED on anything but the loader.
  auto real = NewRealFileSystem()->RealPath("/lib/x86_64-linux-gnu/libc.so.6");
  if (!real.ok()) GTEST_SKIP() << "no x86_64 multiarch libc here";
  auto libc = NewRealFileSystem()->ReadFile(*real);
  ASSERT_TRUE(libc.ok());
  auto info = ParseElf(*libc, *real);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_TRUE(info->shared_object);
  EXPECT_EQ(info->soname, "libc.so.6");
}

TEST(ElfTest, RefusesWhatIsNotElf) {
  auto text = ParseElf("#!/bin/sh\necho hi\n", "script");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message, "script: not an ELF file");
  EXPECT_FALSE(
      LooksLikeElf("\x7f"
                   "EL"));
}

TEST(ElfTest, RefusesATruncatedImageInsteadOfReadingPastIt) {
  std::string image = SelfImage();
  ASSERT_GT(image.size(), 4096U);
  // Keep the header, cut the program headers and everything they point at.
  auto cut = ParseElf(image.substr(0, 80), "cut");
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.error().message, HasSubstr("cut: "));
  // Every prefix either parses or fails cleanly (ASan checks the reads).
  for (size_t len : {64UL, 100UL, 1000UL, image.size() / 2}) {
    (void)ParseElf(image.substr(0, len), "prefix");
  }
}

TEST(ElfTest, RefusesThirtyTwoBitImages) {
  std::string image = SelfImage();
  image[4] = 1;  // EI_CLASS = ELFCLASS32
  auto info = ParseElf(image, "x");
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(info.error().message, HasSubstr("64-bit little-endian"));
}

TEST(ElfTest, NewestGlibcVersionComparesNumerically) {
  EXPECT_EQ(NewestGlibcVersion({"GLIBC_2.2.5", "GLIBC_2.34", "GLIBC_2.4", "GLIBC_PRIVATE"}),
            "2.34");
  EXPECT_EQ(NewestGlibcVersion({"GLIBC_2.3.4", "GLIBC_2.3"}), "2.3.4");
  EXPECT_EQ(NewestGlibcVersion({}), "");
  EXPECT_EQ(NewestGlibcVersion({"GLIBC_PRIVATE"}), "");
}

// The names come from the file being staged: a number too large for an int is not a version
// (it used to throw std::out_of_range out of std::stoi and end the process).
TEST(ElfTest, NewestGlibcVersionSkipsNumbersTooLargeToBeVersions) {
  EXPECT_EQ(NewestGlibcVersion({"GLIBC_2.34", "GLIBC_99999999999.1", "GLIBC_2.99999999999"}),
            "2.34");
  EXPECT_EQ(NewestGlibcVersion({"GLIBC_2147483648"}), "");
  EXPECT_EQ(NewestGlibcVersion({"GLIBC_2147483647"}), "2147483647");
}

}  // namespace
}  // namespace skydb::bundle
