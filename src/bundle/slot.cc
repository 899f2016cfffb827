// The bundle as a discovery source, and which bundle applies (configured file over embedded).
#include "skydb/bundle.h"
#include "skydb/data_dir_layout.h"

namespace skydb {
namespace {

class ArchiveSlot final : public BundleSlot {
 public:
  ArchiveSlot(BundleArchive archive, std::string runtime_dir, FileSystem& fs, BundleOutput* out)
      : archive_(std::move(archive)), runtime_dir_(std::move(runtime_dir)), fs_(fs), out_(out) {
    auto manifest = ReadBundleManifest(archive_);
    if (manifest.ok()) manifest_ = std::move(manifest).value();
  }

  std::optional<PgVersion> Version() override {
    if (!manifest_) return std::nullopt;
    auto parsed = ParsePostgresVersion(manifest_->pg_version_line);
    if (!parsed.ok()) return std::nullopt;
    return std::move(parsed).value();
  }

  std::string Describe() const override {
    // Discovery prefixes "bundle ", so: "bundle embedded (PostgreSQL 15.20)".
    std::string what = archive_.name() == "embedded bundle" ? "embedded" : archive_.name();
    if (manifest_) what += " (PostgreSQL " + manifest_->pg_version + ")";
    if (out_ == nullptr)
      what += ", not extracted by this command (serve extracts it under " + runtime_dir_ + ")";
    return what;
  }

  Result<std::optional<std::string>> Provide() override {
    if (out_ != nullptr) {
      SKYDB_ASSIGN_OR_RETURN(Extraction done, ExtractBundle(archive_, runtime_dir_, *out_, fs_));
      return std::optional<std::string>(done.bin_dir);
    }
    SKYDB_ASSIGN_OR_RETURN(BundleManifest manifest, VerifyBundle(archive_));
    std::string dir = runtime_dir_ + "/" + ExtractionName(manifest, archive_.Sha256());
    if (fs_.IsDirectory(dir + "/" + manifest.bin_dir)) {
      return std::optional<std::string>(dir + "/" + manifest.bin_dir);
    }
    return std::optional<std::string>();
  }

 private:
  BundleArchive archive_;
  std::string runtime_dir_;
  FileSystem& fs_;
  BundleOutput* out_;
  std::optional<BundleManifest> manifest_;
};

}  // namespace

std::unique_ptr<BundleSlot> NewBundleSlot(BundleArchive archive, std::string runtime_dir,
                                          FileSystem& fs, BundleOutput* out) {
  return std::make_unique<ArchiveSlot>(std::move(archive), std::move(runtime_dir), fs, out);
}

Result<std::unique_ptr<BundleSlot>> BundleSlotFor(const std::string& configured_file,
                                                  const std::string& data_dir, FileSystem& fs,
                                                  BundleOutput* out) {
  std::string runtime = DataDirLayout::For(data_dir).runtime;
  if (!configured_file.empty()) {
    auto archive = BundleArchive::FromFile(fs, configured_file);
    if (!archive.ok()) {
      return std::move(archive).error().Within("postgres.bundle = " + configured_file +
                                               " cannot be read; fix the path or unset it");
    }
    return NewBundleSlot(std::move(archive).value(), runtime, fs, out);
  }
  auto embedded = EmbeddedBundle();
  if (embedded.empty()) return std::unique_ptr<BundleSlot>();
  return NewBundleSlot(BundleArchive::Embedded(embedded), runtime, fs, out);
}

}  // namespace skydb
