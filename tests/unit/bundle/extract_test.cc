// Verification and extraction over small synthetic bundles in a temporary directory: the
// real archive format and the real filesystem, with failures injected through BundleOutput.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "bundle/archive.h"
#include "bundle/sha256.h"
#include "skydb/bundle.h"

namespace skydb {
namespace {

using ::testing::HasSubstr;

struct SourceFile {
  std::string contents;
  uint32_t mode = 0644;
};
using Files = std::map<std::string, SourceFile>;

Files SampleFiles() {
  return {{"lib/postgresql/15/bin/postgres", {"#!/bin/sh\necho postgres\n", 0755}},
          {"lib/postgresql/15/bin/initdb", {"initdb", 0755}},
          {"share/postgresql/15/postgres.bki", {std::string(5000, 'x'), 0644}},
          {"skydb-libs/libpq.so.5", {"libpq", 0644}}};
}

BundleManifest ManifestFor(const Files& files) {
  BundleManifest m;
  m.pg_version = "15.20";
  m.pg_version_line = "postgres (PostgreSQL) 15.20";
  struct utsname host {};
  ::uname(&host);
  m.arch = host.machine;  // extraction checks the bundle fits this host
  m.glibc_baseline = "2.17";
  m.source = "/test";
  m.bin_dir = "lib/postgresql/15/bin";
  for (const auto& [path, f] : files) {
    m.files.push_back({path, bundle::Sha256Hex(f.contents), f.mode, f.contents.size()});
    m.total_size += f.contents.size();
  }
  return m;
}

class ExtractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "/skydb-extract-XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    runtime_ = root_ + "/data/runtime";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // Writes an archive of `files` whose manifest describes `described` (default: the same).
  BundleArchive Make(const Files& files, const Files* described = nullptr) {
    std::vector<bundle::ArchiveEntry> entries = {
        {"manifest.json", "", RenderManifest(ManifestFor(described ? *described : files)), 0644}};
    for (const auto& [path, f] : files) entries.push_back({path, "", f.contents, f.mode});
    std::string path = root_ + "/bundle-" + std::to_string(++made_) + ".tar.zst";
    Status written = bundle::WriteArchive(path, entries, 3, *fs_, nullptr);
    EXPECT_TRUE(written.ok()) << written.error().message;
    auto archive = BundleArchive::FromFile(*fs_, path);
    EXPECT_TRUE(archive.ok());
    return *archive;
  }
  // Everything under runtime/ but the lock file.
  std::vector<std::string> RuntimeEntries() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(runtime_, ec)) {
      if (e.path().filename() != ".extract.lock") names.push_back(e.path().filename());
    }
    return names;
  }

  std::unique_ptr<FileSystem> fs_ = NewRealFileSystem();
  std::unique_ptr<BundleOutput> out_ = NewRealBundleOutput();
  std::string root_, runtime_;
  int made_ = 0;
};

TEST_F(ExtractTest, ExtractsVerifiedFilesWithTheirModesThenReusesThem) {
  BundleArchive archive = Make(SampleFiles());
  auto first = ExtractBundle(archive, runtime_, *out_, *fs_);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(first->extracted);
  EXPECT_EQ(first->dir, runtime_ + "/15.20-" + archive.Sha256().substr(0, 12));
  EXPECT_EQ(first->bin_dir, first->dir + "/lib/postgresql/15/bin");
  for (const auto& [path, f] : SampleFiles()) {
    auto info = fs_->Stat(first->dir + "/" + path);
    ASSERT_TRUE(info.ok()) << path;
    EXPECT_EQ(info->mode, f.mode) << path;
    EXPECT_EQ(*fs_->ReadFile(first->dir + "/" + path), f.contents);
  }
  EXPECT_EQ(fs_->Stat(first->dir)->mode, 0755U);  // the cluster user must reach the binaries
  EXPECT_TRUE(ParseManifest(*fs_->ReadFile(first->dir + "/manifest.json")).ok());
  EXPECT_EQ(fs_->Stat(runtime_)->mode, 0700U);

  auto second = ExtractBundle(archive, runtime_, *out_, *fs_);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_FALSE(second->extracted);
  EXPECT_EQ(second->dir, first->dir);
  EXPECT_EQ(RuntimeEntries().size(), 1U);
}

TEST_F(ExtractTest, ADamagedExtractionIsReplaced) {
  BundleArchive archive = Make(SampleFiles());
  auto first = ExtractBundle(archive, runtime_, *out_, *fs_);
  ASSERT_TRUE(first.ok());
  std::filesystem::remove(first->dir + "/share/postgresql/15/postgres.bki");
  auto again = ExtractBundle(archive, runtime_, *out_, *fs_);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(again->extracted);
  EXPECT_TRUE(fs_->Exists(first->dir + "/share/postgresql/15/postgres.bki"));
}

TEST_F(ExtractTest, FlippedByteIsRefusedAndNothingPartialRemains) {
  BundleArchive good = Make(SampleFiles());
  // Flip one byte at several places of the compressed stream: each must be refused.
  for (size_t at : {good.bytes().size() / 3, good.bytes().size() / 2, good.bytes().size() - 40}) {
    std::string bytes(good.bytes());
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    std::string path = root_ + "/flipped.tar.zst";
    std::filesystem::remove(path);
    ASSERT_TRUE(out_->WriteFile(path, bytes, 0644).ok());
    auto flipped = BundleArchive::FromFile(*fs_, path);
    ASSERT_TRUE(flipped.ok());
    auto result = ExtractBundle(*flipped, runtime_, *out_, *fs_);
    ASSERT_FALSE(result.ok()) << "byte " << at;
    EXPECT_THAT(result.error().message, HasSubstr("refused, nothing was extracted: " + path));
    EXPECT_TRUE(RuntimeEntries().empty()) << "byte " << at;
    EXPECT_FALSE(VerifyBundle(*flipped).ok());
  }
}

TEST_F(ExtractTest, EveryFlippedByteIsRefused) {
  BundleArchive good = Make(SampleFiles());
  std::vector<size_t> accepted;
  for (size_t at = 0; at < good.bytes().size(); ++at) {
    std::string bytes(good.bytes());
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    auto verified = VerifyBundle(BundleArchive::Embedded(
        {reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}));
    if (verified.ok()) accepted.push_back(at);
  }
  EXPECT_THAT(accepted, ::testing::IsEmpty()) << "of " << good.bytes().size() << " bytes";
}

TEST_F(ExtractTest, FileThatDiffersFromTheManifestIsRefused) {
  Files described = SampleFiles();
  Files actual = described;
  actual["skydb-libs/libpq.so.5"].contents = "LIBPQ";  // same size, other bytes
  BundleArchive archive = Make(actual, &described);
  auto verified = VerifyBundle(archive);
  ASSERT_FALSE(verified.ok());
  EXPECT_THAT(verified.error().message,
              HasSubstr("SHA-256 of skydb-libs/libpq.so.5 does not match the manifest"));
  EXPECT_FALSE(ExtractBundle(archive, runtime_, *out_, *fs_).ok());
  EXPECT_TRUE(RuntimeEntries().empty());
}

TEST_F(ExtractTest, MissingExtraOrReorderedFilesAreRefused) {
  Files described = SampleFiles();
  Files fewer = described;
  fewer.erase("skydb-libs/libpq.so.5");
  EXPECT_THAT(VerifyBundle(Make(fewer, &described)).error().message,
              HasSubstr("ends before skydb-libs/libpq.so.5"));
  Files more = described;
  more["zzz"] = {"extra", 0644};
  EXPECT_THAT(VerifyBundle(Make(more, &described)).error().message,
              HasSubstr("holds zzz where the manifest lists nothing more"));
  Files mode = described;
  mode["lib/postgresql/15/bin/initdb"].mode = 0777;
  EXPECT_THAT(VerifyBundle(Make(mode, &described)).error().message,
              HasSubstr("lib/postgresql/15/bin/initdb is not the regular file of mode 0755"));
}

TEST_F(ExtractTest, ABundleForAnotherArchitectureIsRefusedBeforeExtracting) {
  Files files = SampleFiles();
  BundleManifest m = ManifestFor(files);
  m.arch = "machine-0";
  std::vector<bundle::ArchiveEntry> entries = {{"manifest.json", "", RenderManifest(m), 0644}};
  for (const auto& [path, f] : files) entries.push_back({path, "", f.contents, f.mode});
  std::string path = root_ + "/other-arch.tar.zst";
  ASSERT_TRUE(bundle::WriteArchive(path, entries, 3, *fs_, nullptr).ok());
  auto result = ExtractBundle(*BundleArchive::FromFile(*fs_, path), runtime_, *out_, *fs_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kVersionMismatch);
  EXPECT_THAT(result.error().message, HasSubstr("the bundle is for machine-0 but this host is"));
  EXPECT_FALSE(fs_->Exists(runtime_));
}

TEST_F(ExtractTest, NotABundle) {
  std::string path = root_ + "/junk";
  ASSERT_TRUE(out_->WriteFile(path, "this is not an archive", 0644).ok());
  auto junk = BundleArchive::FromFile(*fs_, path);
  ASSERT_TRUE(junk.ok());
  auto result = ExtractBundle(*junk, runtime_, *out_, *fs_);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error().message, HasSubstr(path));
  EXPECT_FALSE(fs_->Exists(runtime_));
}

// Disk full after a few files: the error says so and what to do, and the temp dir is gone.
class FullDiskOutput final : public BundleOutput {
 public:
  FullDiskOutput(BundleOutput& real, int files_before_full)
      : real_(real), left_(files_before_full) {}
  Status MakeDirs(const std::string& p, uint32_t m) override { return real_.MakeDirs(p, m); }
  Result<std::string> MakeTempDir(const std::string& p, const std::string& x) override {
    return real_.MakeTempDir(p, x);
  }
  Status WriteFile(const std::string& path, std::string_view data, uint32_t mode) override {
    if (left_-- <= 0)
      return Error::Unavailable("cannot write " + path + ": no space left on device");
    return real_.WriteFile(path, data, mode);
  }
  Status SyncDir(const std::string& p) override { return real_.SyncDir(p); }
  Status Rename(const std::string& a, const std::string& b) override { return real_.Rename(a, b); }
  Status RemoveTree(const std::string& p) override { return real_.RemoveTree(p); }
  Result<std::shared_ptr<void>> Lock(const std::string& p, std::chrono::milliseconds t) override {
    return real_.Lock(p, t);
  }

 private:
  BundleOutput& real_;
  int left_;
};

TEST_F(ExtractTest, DiskFullCleansUpAndSaysSo) {
  BundleArchive archive = Make(SampleFiles());
  FullDiskOutput full(*out_, 2);
  auto result = ExtractBundle(archive, runtime_, full, *fs_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnavailable);
  EXPECT_THAT(result.error().message, HasSubstr("ran out of disk space while extracting; the "
                                                "partial extraction was removed; free at least 1 "
                                                "MiB in " +
                                                runtime_ + " and start again"));
  EXPECT_THAT(result.error().message, HasSubstr("no space left on device"));
  EXPECT_TRUE(RuntimeEntries().empty());
}

TEST_F(ExtractTest, LeftoversOfADeadExtractionAreRemoved) {
  ASSERT_TRUE(out_->MakeDirs(runtime_ + "/.tmp-15.20-abc-XXXXXX/lib", 0755).ok());
  auto result = ExtractBundle(Make(SampleFiles()), runtime_, *out_, *fs_);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(RuntimeEntries().size(), 1U);
}

TEST_F(ExtractTest, ConcurrentStartsExtractOnce) {
  BundleArchive archive = Make(SampleFiles());
  std::atomic<int> extracted{0}, failed{0};
  std::vector<std::thread> starts;
  for (int i = 0; i < 4; ++i) {
    starts.emplace_back([&] {
      auto out = NewRealBundleOutput();  // each its own lock file descriptor, like a process
      auto result = ExtractBundle(archive, runtime_, *out, *fs_);
      if (!result.ok()) ++failed;
      if (result.ok() && result->extracted) ++extracted;
    });
  }
  for (auto& t : starts) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(extracted.load(), 1);
  EXPECT_EQ(RuntimeEntries().size(), 1U);
}

TEST_F(ExtractTest, SlotChecksThePinFromTheManifestAndExtractsOnProvide) {
  BundleArchive archive = Make(SampleFiles());
  auto out = NewRealBundleOutput();
  auto slot = NewBundleSlot(archive, runtime_, *fs_, out.get());
  auto version = slot->Version();
  ASSERT_TRUE(version);
  EXPECT_EQ(version->text, "15.20");
  EXPECT_THAT(slot->Describe(), HasSubstr("(PostgreSQL 15.20)"));
  auto provided = slot->Provide();
  ASSERT_TRUE(provided.ok()) << provided.error().message;
  ASSERT_TRUE(provided->has_value());
  EXPECT_TRUE(fs_->IsExecutable(**provided + "/postgres"));
}

TEST_F(ExtractTest, DoctorSlotVerifiesButWritesNothing) {
  auto slot = NewBundleSlot(Make(SampleFiles()), runtime_, *fs_, /*out=*/nullptr);
  auto provided = slot->Provide();
  ASSERT_TRUE(provided.ok()) << provided.error().message;
  EXPECT_FALSE(provided->has_value());
  EXPECT_FALSE(fs_->Exists(runtime_));
}

}  // namespace
}  // namespace skydb
