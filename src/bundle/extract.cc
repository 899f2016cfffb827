// Reading, verifying and extracting bundles (discovery step 2).
#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include <set>

#include "bundle/archive.h"
#include "bundle/sha256.h"
#include "skydb/bundle.h"

namespace skydb {
namespace {

constexpr const char* kManifestName = "manifest.json";
constexpr std::chrono::minutes kLockTimeout{5};

std::string Mode(uint32_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode);
  return text;
}

// Walks every member after the manifest, checking each against it; `on_file` sees each one
// only once it matched.
Status WalkVerified(const BundleArchive& archive, BundleManifest& manifest,
                    const std::function<Status(const BundleFile&, std::string_view)>& on_file) {
  const std::string& name = archive.name();
  size_t index = 0;
  bool have_manifest = false;
  auto check = [&](const bundle::ArchiveMember& m) -> Status {
    if (!have_manifest) {
      if (m.name != kManifestName || !m.regular) {
        return Status(Error::InvalidArgument(name + " does not start with " + kManifestName +
                                             "; it is not a skydb bundle"));
      }
      SKYDB_ASSIGN_OR_RETURN(manifest, ParseManifest(m.data));
      have_manifest = true;
      return Ok();
    }
    if (index >= manifest.files.size() || manifest.files[index].path != m.name) {
      return Status(
          Error::InvalidArgument(name + " holds " + m.name + " where the manifest lists " +
                                 (index < manifest.files.size() ? manifest.files[index].path
                                                                : std::string("nothing more"))));
    }
    const BundleFile& f = manifest.files[index++];
    if (!m.regular || m.mode != f.mode || m.data.size() != f.size) {
      return Status(Error::InvalidArgument(
          name + ": " + f.path + " is not the regular file of mode " + Mode(f.mode) + " and " +
          std::to_string(f.size) + " bytes the manifest lists"));
    }
    if (bundle::Sha256Hex(m.data) != f.sha256) {
      return Status(
          Error::InvalidArgument(name + ": SHA-256 of " + f.path + " does not match the manifest"));
    }
    return on_file(f, m.data);
  };
  Status walked = bundle::ReadArchive(archive.bytes(), name, 0, check);
  if (!walked.ok()) return walked;
  if (!have_manifest) return Error::InvalidArgument(name + " is empty; it is not a skydb bundle");
  if (index != manifest.files.size()) {
    return Error::InvalidArgument(name + " ends before " + manifest.files[index].path +
                                  " (the manifest lists " + std::to_string(manifest.files.size()) +
                                  " files, the archive holds " + std::to_string(index) + ")");
  }
  return Ok();
}

// An earlier extraction counts when every listed file is there with its size and mode.
Status CheckExtracted(const FileSystem& fs, const std::string& dir, const BundleManifest& m) {
  for (const auto& f : m.files) {
    auto info = fs.Stat(dir + "/" + f.path);
    if (!info.ok()) return Error::NotFound(f.path + " is missing");
    if (info->type != FileType::kRegular || info->size != f.size || info->mode != f.mode) {
      return Error::Conflict(f.path + " differs from the manifest (size or mode)");
    }
  }
  return Ok();
}

std::string HostArch() {
  struct utsname u {};
  return ::uname(&u) == 0 ? u.machine : "unknown";
}

std::string ParentOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

Status ExtractInto(const BundleArchive& archive, const std::string& tmp, BundleOutput& out,
                   BundleManifest& manifest) {
  std::set<std::string> dirs = {tmp};
  auto write = [&](const BundleFile& f, std::string_view data) -> Status {
    std::string path = tmp + "/" + f.path;
    std::string parent = ParentOf(path);
    if (dirs.insert(parent).second) {
      SKYDB_RETURN_IF_ERROR(out.MakeDirs(parent, 0755));
      for (std::string up = ParentOf(parent); up.size() > tmp.size(); up = ParentOf(up)) {
        dirs.insert(up);
      }
    }
    return out.WriteFile(path, data, f.mode);
  };
  SKYDB_RETURN_IF_ERROR(WalkVerified(archive, manifest, write));
  SKYDB_RETURN_IF_ERROR(out.WriteFile(tmp + "/" + kManifestName, RenderManifest(manifest), 0644));
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) SKYDB_RETURN_IF_ERROR(out.SyncDir(*it));
  return Ok();
}

}  // namespace

BundleArchive BundleArchive::Embedded(std::span<const unsigned char> bytes) {
  BundleArchive a;
  a.bytes_ = std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  a.name_ = "embedded bundle";
  a.sha256_ = bundle::Sha256Hex(a.bytes_);
  return a;
}

Result<BundleArchive> BundleArchive::FromFile(const FileSystem& fs, const std::string& path) {
  auto data = fs.ReadFile(path);
  if (!data.ok()) return std::move(data).error().Within("bundle file");
  BundleArchive a;
  a.storage_ = std::make_shared<const std::string>(std::move(data).value());
  a.bytes_ = *a.storage_;
  a.name_ = path;
  a.sha256_ = bundle::Sha256Hex(a.bytes_);
  return a;
}

Result<BundleManifest> ReadBundleManifest(const BundleArchive& archive) {
  std::optional<Result<BundleManifest>> manifest;
  SKYDB_RETURN_IF_ERROR(
      bundle::ReadArchive(archive.bytes(), archive.name(), 1, [&](const bundle::ArchiveMember& m) {
        if (m.name == kManifestName && m.regular) {
          manifest = ParseManifest(m.data);
        }
        return Ok();
      }));
  if (!manifest) {
    return Error::InvalidArgument(archive.name() + " does not start with " + kManifestName +
                                  "; it is not a skydb bundle");
  }
  if (!manifest->ok()) return std::move(*manifest).error().Within(archive.name());
  return std::move(*manifest).value();
}

Result<BundleManifest> VerifyBundle(const BundleArchive& archive) {
  BundleManifest manifest;
  SKYDB_RETURN_IF_ERROR(
      WalkVerified(archive, manifest, [](const BundleFile&, std::string_view) { return Ok(); }));
  return manifest;
}

std::string ExtractionName(const BundleManifest& manifest, const std::string& archive_sha256) {
  return manifest.pg_version + "-" + archive_sha256.substr(0, 12);
}

Result<Extraction> ExtractBundle(const BundleArchive& archive, const std::string& runtime_dir,
                                 BundleOutput& out, const FileSystem& fs) {
  Extraction result;
  const std::string refused = "refused, nothing was extracted";
  auto manifest = ReadBundleManifest(archive);
  if (!manifest.ok()) return std::move(manifest).error().Within(refused);
  result.manifest = std::move(manifest).value();
  SKYDB_RETURN_IF_ERROR(CheckHostCompatible(result.manifest, HostArch(), gnu_get_libc_version()));
  std::string name = ExtractionName(result.manifest, archive.Sha256());
  result.dir = runtime_dir + "/" + name;
  result.bin_dir = result.dir + "/" + result.manifest.bin_dir;
  SKYDB_RETURN_IF_ERROR(out.MakeDirs(runtime_dir, 0700));
  SKYDB_ASSIGN_OR_RETURN(auto lock, out.Lock(runtime_dir + "/.extract.lock", kLockTimeout));
  if (fs.IsDirectory(result.dir)) {
    if (CheckExtracted(fs, result.dir, result.manifest).ok()) return result;
    SKYDB_RETURN_IF_ERROR(out.RemoveTree(result.dir));  // damaged since: extract afresh
  }
  // Leftovers of an extraction that died; we hold the lock, so no one is writing them.
  if (auto entries = fs.ListDir(runtime_dir); entries.ok()) {
    for (const auto& e : *entries) {
      if (e.rfind(".tmp-", 0) == 0) SKYDB_RETURN_IF_ERROR(out.RemoveTree(runtime_dir + "/" + e));
    }
  }
  SKYDB_ASSIGN_OR_RETURN(std::string tmp, out.MakeTempDir(runtime_dir, ".tmp-" + name + "-"));
  BundleManifest verified;
  Status status = ExtractInto(archive, tmp, out, verified);
  if (status.ok()) status = out.Rename(tmp, result.dir);
  if (status.ok()) status = out.SyncDir(runtime_dir);
  if (!status.ok()) {
    Status removed = out.RemoveTree(tmp);
    Error error = std::move(status).error();
    std::string what = refused;
    if (error.code == ErrorCode::kUnavailable) {
      uint64_t mib = (result.manifest.total_size + (1 << 20) - 1) >> 20;
      what = "ran out of disk space while extracting; the partial extraction was removed; free " +
             std::string("at least ") + std::to_string(mib) + " MiB in " + runtime_dir +
             " and start again";
    } else if (error.code != ErrorCode::kInvalidArgument) {
      what = "extracting into " + runtime_dir + " failed; the partial extraction was removed";
    }
    if (!removed.ok())
      what += " (but removing " + tmp + " failed: " + removed.error().message + ")";
    return std::move(error).Within(what);
  }
  result.extracted = true;
  return result;
}

}  // namespace skydb
