// `skydb bundle stage`: collect an installation's server files and the libraries they need,
// make them load relative to themselves, hash them, and write one deterministic archive.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "base/strings.h"
#include "bundle/archive.h"
#include "bundle/deps.h"
#include "bundle/elf.h"
#include "bundle/sha256.h"
#include "pg/discovery_sources.h"
#include "skydb/bundle.h"

namespace skydb {
namespace {

using bundle::BundleLayout;
using bundle::InstallDirs;

// What skydb runs from a bundle staged from an installation (pg_config's): the server, cluster
// setup and checks, upgrades, and psql. Debian's postgresql-N and postgresql-client-N have them.
constexpr const char* kInstallationBinaries[] = {
    "postgres", "initdb", "pg_ctl", "pg_controldata", "pg_isready", "pg_upgrade", "psql"};
// A relocatable tree (an embedded-postgres build, Sky's six-binary bundles) needs only what
// runs a cluster.
constexpr const char* kRelocatableBinaries[] = {"postgres", "initdb", "pg_ctl"};
// Carried when the source has them: the logical upgrade path (pg_dump, pg_dumpall, pg_restore),
// pg_upgrade's helpers (pg_resetwal, vacuumdb), backups (docs/backup.md), and for a relocatable
// tree whatever of the installation's list it has.
constexpr const char* kOptionalBinaries[] = {
    "pg_controldata",  "pg_isready", "pg_upgrade",       "psql",     "pg_dump",
    "pg_dumpall",      "pg_restore", "pg_resetwal",      "vacuumdb", "pg_basebackup",
    "pg_verifybackup", "pg_waldump", "pg_archivecleanup"};
// The JIT provider pulls in LLVM (over 100 MB); without it PostgreSQL runs with JIT off.
constexpr const char* kLeftOutModules[] = {"llvmjit.so"};
// Manual pages are documentation, not runtime data.
constexpr const char* kLeftOutShare[] = {"man"};

struct Planned {
  std::string source;  // absolute path on this host
  std::string path;    // relative path in the bundle
  uint32_t mode = 0644;
  bool elf = false;
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <size_t N>
bool Listed(const char* const (&list)[N], const std::string& name) {
  return std::find_if(std::begin(list), std::end(list),
                      [&](const char* item) { return name == item; }) != std::end(list);
}

class Stager {
 public:
  Stager(const StageOptions& o, const FileSystem& fs, BundleOutput& out, ProcessRunner& runner)
      : o_(o), fs_(fs), out_(out), runner_(runner) {}

  Result<BundleManifest> Run();

 private:
  void Progress(const char* phase, size_t done, size_t total) {
    if (o_.progress) o_.progress({phase, done, total});
  }
  Result<std::string> RunTool(const std::vector<std::string>& argv);
  Status ReadInstallation();
  Status PlanBinaries();
  void PlanBinary(const std::string& name);
  Status PlanModules();
  Status PlanShare(const std::string& dir, const std::string& rel);
  Status PlanLibraries();
  Status Copy(const std::string& staging);
  Status Patch(const std::string& staging);
  Status HashAndWrite(const std::string& staging);

  const StageOptions& o_;
  const FileSystem& fs_;
  BundleOutput& out_;
  ProcessRunner& runner_;
  InstallDirs dirs_;
  bool relocatable_ = false;  // no pg_config: directories found by their contents
  BundleLayout layout_;
  BundleManifest manifest_;
  std::vector<Planned> files_;
  std::vector<std::string> glibc_versions_;
};

Result<std::string> Stager::RunTool(const std::vector<std::string>& argv) {
  CommandSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::seconds(60);
  SKYDB_ASSIGN_OR_RETURN(CommandOutput ran, runner_.Run(spec));
  if (ran.exit_code != 0) {
    return Error::Io(Join(argv, " ") + " failed (status " + std::to_string(ran.exit_code) +
                     "): " + std::string(Trim(ran.err)));
  }
  return ran.out;
}

Status Stager::ReadInstallation() {
  std::string bin = o_.from + "/bin";
  if (!fs_.IsExecutable(bin + "/postgres")) {
    return Error::NotFound(bin +
                           "/postgres not found: --from must be a PostgreSQL installation "
                           "directory such as /usr/lib/postgresql/15, or a relocatable tree with "
                           "bin/, lib/ and share/");
  }
  if (fs_.IsExecutable(bin + "/pg_config")) {
    SKYDB_ASSIGN_OR_RETURN(std::string config, RunTool({bin + "/pg_config"}));
    SKYDB_ASSIGN_OR_RETURN(dirs_, bundle::ParsePgConfig(config));
    auto real_bin = fs_.RealPath(bin);
    auto real_reported = fs_.RealPath(dirs_.bindir);
    if (!real_bin.ok() || !real_reported.ok() || *real_bin != *real_reported) {
      return Error::InvalidArgument(bin + "/pg_config reports BINDIR " + dirs_.bindir +
                                    "; --from must be the installation it describes");
    }
  } else {
    // PostgreSQL finds share/ and lib/ relative to its own binary; without pg_config they are
    // found by what they hold, and kept where they are relative to bin/.
    relocatable_ = true;
    SKYDB_ASSIGN_OR_RETURN(dirs_, bundle::RelocatableDirs(fs_, o_.from));
  }
  layout_ = bundle::LayoutFor(dirs_);
  SKYDB_ASSIGN_OR_RETURN(std::string version_out, RunTool({bin + "/postgres", "--version"}));
  SKYDB_ASSIGN_OR_RETURN(PgVersion version, ParsePostgresVersion(version_out));
  manifest_.pg_version = version.text;
  manifest_.pg_version_line = std::string(Trim(version_out));
  manifest_.source = o_.from;
  manifest_.bin_dir = layout_.bin;
  manifest_.system_tzdata = dirs_.system_tzdata;
  return Ok();
}

void Stager::PlanBinary(const std::string& name) {
  std::string path = layout_.bin + "/" + name;
  bool planned =
      std::any_of(files_.begin(), files_.end(), [&](const Planned& f) { return f.path == path; });
  if (!planned) files_.push_back({o_.from + "/bin/" + name, path, 0755, true});
}

Status Stager::PlanBinaries() {
  std::vector<std::string> missing;
  auto require = [&](const auto& names) {
    for (const char* name : names) {
      if (fs_.IsExecutable(o_.from + "/bin/" + name)) {
        PlanBinary(name);
      } else {
        missing.emplace_back(name);
      }
    }
  };
  if (relocatable_) {
    require(kRelocatableBinaries);
  } else {
    require(kInstallationBinaries);
  }
  if (!missing.empty() && relocatable_) {
    return Error::NotFound(o_.from + "/bin lacks " + Join(missing, ", ") +
                           "; a relocatable tree needs at least postgres, initdb and pg_ctl");
  }
  if (!missing.empty()) {
    std::string major = Split(manifest_.pg_version, '.')[0];
    return Error::NotFound(o_.from + "/bin lacks " + Join(missing, ", ") +
                           "; install the server and client packages (Debian: postgresql-" + major +
                           " and postgresql-client-" + major + ")");
  }
  for (const char* name : kOptionalBinaries) {
    if (fs_.IsExecutable(o_.from + "/bin/" + name)) PlanBinary(name);
  }
  return Ok();
}

Status Stager::PlanModules() {
  SKYDB_ASSIGN_OR_RETURN(auto names, fs_.ListDir(dirs_.pkglibdir));
  for (const auto& name : names) {
    std::string source = dirs_.pkglibdir + "/" + name;
    auto info = fs_.Stat(source);
    if (!info.ok() || info->type != FileType::kRegular || !EndsWith(name, ".so") ||
        Listed(kLeftOutModules, name)) {
      continue;
    }
    files_.push_back({source, layout_.pkglib + "/" + name, 0644, true});
  }
  return Ok();
}

Status Stager::PlanShare(const std::string& dir, const std::string& rel) {
  SKYDB_ASSIGN_OR_RETURN(auto names, fs_.ListDir(dir));
  for (const auto& name : names) {
    if (rel == layout_.share && Listed(kLeftOutShare, name)) continue;
    std::string source = dir + "/" + name;
    SKYDB_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(source));
    if (info.type == FileType::kDirectory) {
      SKYDB_RETURN_IF_ERROR(PlanShare(source, rel + "/" + name));
    } else if (info.type == FileType::kRegular) {
      files_.push_back({source, rel + "/" + name, (info.mode & 0111) != 0 ? 0755U : 0644U, false});
    }
  }
  return Ok();
}

Status Stager::PlanLibraries() {
  std::vector<std::string> roots;
  for (const auto& f : files_) {
    if (f.elf) roots.push_back(f.source);
  }
  auto arch_probe = fs_.ReadFile(roots.front());
  if (!arch_probe.ok()) return std::move(arch_probe).error();
  SKYDB_ASSIGN_OR_RETURN(auto root_info, bundle::ParseElf(*arch_probe, roots.front()));
  manifest_.arch = root_info.arch;
  auto search = bundle::DefaultLibraryDirs(root_info.arch);
  SKYDB_ASSIGN_OR_RETURN(auto walk, bundle::WalkDependencies(roots, fs_, search, true));
  if (!walk.missing.empty()) {
    // A module whose libraries this host lacks (a relocatable build's plperl.so needs the
    // libperl it was built against) could not load here either: it is left out, and said so.
    // A binary whose libraries are missing stops staging.
    std::vector<Planned> kept;
    for (auto& f : files_) {
      std::string why = f.elf ? bundle::WhyUnloadable(walk, f.source) : "";
      if (why.empty()) {
        kept.push_back(std::move(f));
        continue;
      }
      if (!StartsWith(f.path, layout_.pkglib + "/")) return Error::NotFound(why);
      size_t needs = why.find(" needs "), which = why.find(", which");
      if (o_.left_out != nullptr && needs != std::string::npos && which != std::string::npos) {
        o_.left_out->push_back(f.path.substr(f.path.rfind('/') + 1) + " (needs " +
                               why.substr(needs + 7, which - needs - 7) + ")");
      }
    }
    files_ = std::move(kept);
    roots.clear();
    for (const auto& f : files_) {
      if (f.elf) roots.push_back(f.source);
    }
    SKYDB_ASSIGN_OR_RETURN(walk, bundle::WalkDependencies(roots, fs_, search));
  }

  for (const auto& lib : walk.libraries) {
    files_.push_back({lib.path, layout_.libs + "/" + lib.soname, 0644, true});
  }
  glibc_versions_ = walk.glibc_versions;
  manifest_.glibc_baseline = bundle::NewestGlibcVersion(glibc_versions_);
  return Ok();
}

Status Stager::Copy(const std::string& staging) {
  for (size_t i = 0; i < files_.size(); ++i) {
    const Planned& f = files_[i];
    SKYDB_ASSIGN_OR_RETURN(std::string data, fs_.ReadFile(f.source));
    std::string target = staging + "/" + f.path;
    SKYDB_RETURN_IF_ERROR(out_.MakeDirs(target.substr(0, target.rfind('/')), 0755));
    // Writable by us so patchelf can rewrite it; the manifest records the real mode. Scratch:
    // the staging directory is removed once the archive is written.
    SKYDB_RETURN_IF_ERROR(out_.WriteScratchFile(target, data, 0644));
    Progress("collect", i + 1, files_.size());
  }
  return Ok();
}

// Every ELF file finds the bundled libraries relative to itself. One patchelf per directory
// (files of one directory share a RUNPATH), in path order, so the bytes stay deterministic.
Status Stager::Patch(const std::string& staging) {
  auto patchelf =
      pg::FindOnPath(fs_, std::getenv("PATH") != nullptr ? std::getenv("PATH") : "", "patchelf");
  if (!patchelf) {
    return Error::NotFound("patchelf not found on PATH; install it (apt-get install patchelf)");
  }
  std::map<std::string, std::vector<std::string>> by_dir;  // relative dir → staged files
  size_t total = 0;
  for (const auto& f : files_) {
    if (!f.elf) continue;
    by_dir[f.path.substr(0, f.path.rfind('/'))].push_back(staging + "/" + f.path);
    ++total;
  }
  size_t done = 0;
  for (auto& [dir, paths] : by_dir) {
    std::sort(paths.begin(), paths.end());
    std::string rel = bundle::RelativeDir(dir, layout_.libs);
    std::vector<std::string> argv = {*patchelf, "--set-rpath",
                                     rel == "." ? "$ORIGIN" : "$ORIGIN/" + rel};
    argv.insert(argv.end(), paths.begin(), paths.end());
    auto patched = RunTool(argv);
    if (!patched.ok()) {
      return std::move(patched).error().Within("setting the RUNPATH of the files in " + dir);
    }
    done += paths.size();
    Progress("patch", done, total);
  }
  return Ok();
}

Status Stager::HashAndWrite(const std::string& staging) {
  std::sort(files_.begin(), files_.end(),
            [](const Planned& a, const Planned& b) { return a.path < b.path; });
  std::vector<bundle::ArchiveEntry> entries(1);
  for (size_t i = 0; i < files_.size(); ++i) {
    const Planned& f = files_[i];
    std::string staged = staging + "/" + f.path;
    SKYDB_ASSIGN_OR_RETURN(std::string data, fs_.ReadFile(staged));
    manifest_.files.push_back({f.path, bundle::Sha256Hex(data), f.mode, data.size()});
    manifest_.total_size += data.size();
    entries.push_back({f.path, staged, "", f.mode});
    Progress("hash", i + 1, files_.size());
  }
  SKYDB_RETURN_IF_ERROR(CheckManifest(manifest_));
  entries[0] = {"manifest.json", "", RenderManifest(manifest_), 0644};
  std::string partial = staging + "/.archive";
  SKYDB_RETURN_IF_ERROR(bundle::WriteArchive(partial, entries, o_.zstd_level, fs_, [&](size_t n) {
    Progress("archive", n, entries.size());
  }));
  return out_.Rename(partial, o_.out);
}

Result<BundleManifest> Stager::Run() {
  SKYDB_RETURN_IF_ERROR(ReadInstallation());
  SKYDB_RETURN_IF_ERROR(PlanBinaries());
  SKYDB_RETURN_IF_ERROR(PlanModules());
  SKYDB_RETURN_IF_ERROR(PlanShare(dirs_.sharedir, layout_.share));
  SKYDB_RETURN_IF_ERROR(PlanLibraries());
  std::string out_dir =
      o_.out.find('/') == std::string::npos ? "." : o_.out.substr(0, o_.out.rfind('/'));
  if (out_dir.empty()) out_dir = "/";
  SKYDB_ASSIGN_OR_RETURN(std::string staging, out_.MakeTempDir(out_dir, ".skydb-stage-"));
  Status status = Copy(staging);
  if (status.ok()) status = Patch(staging);
  if (status.ok()) status = HashAndWrite(staging);
  Status removed = out_.RemoveTree(staging);
  if (!status.ok()) return std::move(status).error().Within("staging " + o_.out);
  if (!removed.ok()) return std::move(removed).error();
  return manifest_;
}

}  // namespace

Result<BundleManifest> StageBundle(const StageOptions& options, const FileSystem& fs,
                                   BundleOutput& out, ProcessRunner& runner) {
  return Stager(options, fs, out, runner).Run();
}

}  // namespace skydb
