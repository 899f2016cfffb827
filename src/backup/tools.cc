// What taking, verifying and restoring share: compression names, tree sizes, copies watched for
// progress, and the extraction of a compressed (tar-format) backup.
#include <optional>
#include <thread>

#include "backup/pg_tools.h"
#include "base/strings.h"
#include "skydb/mutex.h"

namespace skydb {

std::string CompressionName(BackupCompression compression) {
  switch (compression) {
    case BackupCompression::kNone:
      return "none";
    case BackupCompression::kGzip:
      return "gzip";
    case BackupCompression::kLz4:
      return "lz4";
    case BackupCompression::kZstd:
      return "zstd";
  }
  return "none";
}

std::optional<BackupCompression> ParseCompressionName(const std::string& name) {
  for (auto c : {BackupCompression::kNone, BackupCompression::kGzip, BackupCompression::kLz4,
                 BackupCompression::kZstd}) {
    if (CompressionName(c) == name) return c;
  }
  return std::nullopt;
}

namespace backup_internal {
namespace {

constexpr auto kProgressEvery = std::chrono::seconds(1);

// The program that decompresses a tar file with this name's suffix; "" = none needed.
struct Decompressor {
  std::string suffix;
  std::string program;
  std::string package;
};
const Decompressor kDecompressors[] = {
    {".tar.gz", "gzip", "gzip"}, {".tar.lz4", "lz4", "lz4"}, {".tar.zst", "zstd", "zstd"}};

Result<std::string> FindProgram(const FileSystem& fs, const std::string& name,
                                const std::string& package) {
  for (const char* dir : {"/usr/bin/", "/bin/"}) {
    if (fs.IsExecutable(dir + name)) return dir + name;
  }
  return Error::NotFound("no " + name +
                         " program in /usr/bin or /bin to extract the backup with; " +
                         "install the " + package + " package");
}

}  // namespace

uint64_t TreeBytes(const FileSystem& fs, const std::string& path) {
  auto info = fs.Stat(path);
  if (!info.ok()) return 0;
  if (info->type != FileType::kDirectory) return info->type == FileType::kRegular ? info->size : 0;
  uint64_t total = 0;
  if (auto names = fs.ListDir(path); names.ok()) {
    for (const auto& name : *names) total += TreeBytes(fs, path + "/" + name);
  }
  return total;
}

Result<CommandOutput> RunWatched(Env& env, const CommandSpec& spec, const std::string& watch,
                                 CopyProgress progress, const CopyProgressFn& report) {
  if (!report) return env.runner->Run(spec);
  Mutex mu;
  CondVar cv;
  std::optional<Result<CommandOutput>> result;  // guarded by mu
  std::thread worker([&] {
    auto out = env.runner->Run(spec);
    MutexLock lock(mu);
    result.emplace(std::move(out));
    cv.NotifyAll();
  });
  {
    MutexLock lock(mu);
    while (!result) {
      cv.WaitFor(mu, kProgressEvery);  // a timed wait: progress reads no clock
      if (result) break;
      lock.Unlock();
      progress.done = TreeBytes(*env.fs, watch);
      report(progress);
      lock.Lock();
    }
  }
  worker.join();
  progress.done = TreeBytes(*env.fs, watch);
  progress.finished = true;
  report(progress);
  return std::move(*result);
}

Status RemoveTree(Env& env, const std::string& dir) {
  CommandSpec spec;
  spec.argv = {"/bin/rm", "-rf", "--one-file-system", "--", dir};
  spec.timeout = std::chrono::hours(1);
  SKYDB_ASSIGN_OR_RETURN(CommandOutput out, env.runner->Run(spec));
  if (out.exit_code != 0) {
    return Error::Io("removing " + dir + " failed: " + std::string(Trim(out.err)));
  }
  return Ok();
}

Status ExtractTarBackup(Env& env, const std::string& backup_dir, const std::string& into,
                        uint64_t data_bytes, const std::string& step,
                        const CopyProgressFn& report) {
  FileSystem& fs = *env.fs;
  SKYDB_ASSIGN_OR_RETURN(auto names, fs.ListDir(backup_dir));
  SKYDB_ASSIGN_OR_RETURN(std::string tar, FindProgram(fs, "tar", "tar"));
  // What goes where, all checked before anything is extracted; base.tar first: it makes the
  // directories pg_wal.tar goes into.
  std::vector<std::pair<std::string, std::string>> archives;  // file, destination
  bool have_manifest = false;
  for (const auto& name : names) {
    if (name == "backup_manifest") {
      have_manifest = true;
    } else if (StartsWith(name, "base.tar")) {
      archives.insert(archives.begin(), {name, into});
    } else if (StartsWith(name, "pg_wal.tar")) {
      archives.emplace_back(name, into + "/pg_wal");
    } else {
      return Error::InvalidArgument(
          backup_dir + " holds " + name +
          ", which skydb does not restore (a tablespace's archive?); extract it by hand");
    }
  }
  if (archives.empty() || !StartsWith(archives.front().first, "base.tar")) {
    return Error::NotFound(backup_dir + " holds no base.tar file: not a tar-format base backup");
  }
  if (have_manifest) {
    SKYDB_ASSIGN_OR_RETURN(std::string manifest, fs.ReadFile(backup_dir + "/backup_manifest"));
    SKYDB_RETURN_IF_ERROR(fs.WriteFileAtomic(into + "/backup_manifest", manifest, 0600));
  }
  for (const auto& [name, dest] : archives) {
    if (!fs.IsDirectory(dest)) SKYDB_RETURN_IF_ERROR(fs.MakeDir(dest, 0700));
    CommandSpec spec;
    spec.argv = {tar, "-x", "-p", "-f", backup_dir + "/" + name, "-C", dest};
    for (const auto& d : kDecompressors) {
      if (EndsWith(name, d.suffix)) {
        SKYDB_ASSIGN_OR_RETURN(std::string program, FindProgram(fs, d.program, d.package));
        spec.argv.insert(spec.argv.begin() + 1, {"-I", program});
      }
    }
    spec.timeout = std::chrono::hours(24);
    CopyProgress progress{step, 0, data_bytes, false, false};
    SKYDB_ASSIGN_OR_RETURN(CommandOutput out, RunWatched(env, spec, into, progress, report));
    if (out.exit_code != 0) {
      return Error::Io("extracting " + backup_dir + "/" + name + " into " + dest +
                       " failed: " + std::string(Trim(out.err)));
    }
  }
  return Ok();
}

Status ExtractForCheck(Env& env, const std::string& backup_dir, const std::string& checked,
                       uint64_t data_bytes, const std::string& step, const CopyProgressFn& report) {
  SKYDB_RETURN_IF_ERROR(RemoveTree(env, checked));
  SKYDB_RETURN_IF_ERROR(env.fs->MakeDir(checked, 0700));
  auto extracted = ExtractTarBackup(env, backup_dir, checked, data_bytes, step, report);
  if (!extracted.ok()) (void)RemoveTree(env, checked);
  return extracted;
}

}  // namespace backup_internal

Status CheckCompressionPrograms(const FileSystem& fs, BackupCompression compression) {
  if (compression == BackupCompression::kNone) return Ok();
  std::string name = CompressionName(compression);
  for (const std::string& program : {std::string("tar"), name}) {
    auto found = backup_internal::FindProgram(fs, program, program);
    if (!found.ok()) return std::move(found).error();
  }
  return Ok();
}

}  // namespace skydb
