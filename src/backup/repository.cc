// The repository's files: its identity, the backups' descriptions, the WAL archive's writer.
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "base/strings.h"
#include "skydb/backup.h"

namespace skydb {
namespace {

constexpr int kFormat = 1;

template <typename T>
T Field(const nlohmann::json& j, const char* name, T fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

// A quoted postgresql.conf value cannot hold a newline; a command line run through the shell
// must not be able to break out of its single quotes.
std::string ShellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string RepositoryIdentityPath(const std::string& repo) { return repo + "/skydb-backup.json"; }
std::string RepositoryWalDir(const std::string& repo) { return repo + "/wal"; }
std::string RepositoryBaseDir(const std::string& repo) { return repo + "/base"; }

std::string RenderRepositoryIdentity(const RepositoryIdentity& identity) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["system_identifier"] = identity.system_identifier;
  j["pg_major"] = identity.pg_major;
  j["bin_dir"] = identity.bin_dir;
  return JsonText(j, 2) + "\n";
}

Result<RepositoryIdentity> ParseRepositoryIdentity(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("system_identifier")) {
    return Error::InvalidArgument("not a skydb backup repository identity");
  }
  RepositoryIdentity identity;
  identity.system_identifier = Field<std::string>(j, "system_identifier", "");
  identity.pg_major = Field<int>(j, "pg_major", 0);
  identity.bin_dir = Field<std::string>(j, "bin_dir", "");
  return identity;
}

std::string RenderBackupInfo(const BackupInfo& info) {
  nlohmann::json j;
  j["label"] = info.label;
  j["start_time"] = info.start_time;
  j["end_time"] = info.end_time;
  j["bytes"] = info.bytes;
  j["data_bytes"] = info.data_bytes;
  j["compression"] = info.compression;
  j["system_identifier"] = info.system_identifier;
  j["start_wal"] = info.start_wal;
  j["verified"] = info.verified;
  return JsonText(j, 2) + "\n";
}

Result<BackupInfo> ParseBackupInfo(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("label")) {
    return Error::InvalidArgument("not a skydb backup description");
  }
  BackupInfo info;
  info.label = Field<std::string>(j, "label", "");
  info.start_time = Field<int64_t>(j, "start_time", 0);
  info.end_time = Field<int64_t>(j, "end_time", 0);
  info.bytes = Field<uint64_t>(j, "bytes", 0);
  info.data_bytes = Field<uint64_t>(j, "data_bytes", info.bytes);
  info.compression = Field<std::string>(j, "compression", "none");
  info.system_identifier = Field<std::string>(j, "system_identifier", "");
  info.start_wal = Field<std::string>(j, "start_wal", "");
  info.verified = Field<bool>(j, "verified", false);
  return info;
}

Result<RepositoryIdentity> ReadRepositoryIdentity(const FileSystem& fs, const std::string& repo) {
  auto text = fs.ReadFile(RepositoryIdentityPath(repo));
  if (!text.ok()) {
    return Error::NotFound(repo + " is not a skydb backup repository (no " +
                           RepositoryIdentityPath(repo) +
                           "); give the directory backup.repository names, where skydb backup "
                           "wrote its backups");
  }
  auto identity = ParseRepositoryIdentity(*text);
  if (!identity.ok()) {
    return Error::InvalidArgument(RepositoryIdentityPath(repo) +
                                  " is damaged: " + identity.error().message);
  }
  return identity;
}

Result<std::vector<BackupInfo>> ListBackups(const FileSystem& fs, const std::string& repo) {
  std::string base = RepositoryBaseDir(repo);
  std::vector<BackupInfo> out;
  if (!fs.Exists(base)) return out;
  SKYDB_ASSIGN_OR_RETURN(auto names, fs.ListDir(base));
  for (const auto& name : names) {
    if (!EndsWith(name, ".json")) continue;
    std::string label = name.substr(0, name.size() - 5);
    if (!fs.IsDirectory(base + "/" + label)) continue;
    SKYDB_ASSIGN_OR_RETURN(auto text, fs.ReadFile(base + "/" + name));
    auto info = ParseBackupInfo(text);
    if (!info.ok()) continue;
    info->path = base + "/" + label;
    out.push_back(std::move(info).value());
  }
  // Labels are UTC timestamps: name order is time order.
  return out;
}

std::string ArchiveSettingsConf(const std::string& skydb_binary, const std::string& repo,
                                const std::string& status_file,
                                std::chrono::milliseconds archive_timeout) {
  std::string command = ShellQuote(skydb_binary) + " archive-wal --repo " + ShellQuote(repo) +
                        " --status-file " + ShellQuote(status_file) + " %p %f";
  std::string quoted;  // postgresql.conf doubles a single quote inside a quoted value
  for (char c : command) {
    if (c == '\'') quoted += '\'';
    quoted += c;
  }
  std::string out = "\n# WAL archiving into backup.repository (docs/backup.md):\n";
  out += "archive_mode = on\n";
  out += "archive_command = '" + quoted + "'\n";
  out += "archive_timeout = " + std::to_string(archive_timeout.count() / 1000) + "s\n";
  return out;
}

Status ArchiveWal(FileSystem& fs, const std::string& repo, const std::string& wal_path,
                  const std::string& name, const std::string& status_file) {
  auto fail = [&](const std::string& why) -> Status {
    std::string message = "cannot archive " + name + " into " + RepositoryWalDir(repo) + ": " +
                          why +
                          "; PostgreSQL keeps it in pg_wal and retries, so fix the repository "
                          "(space, permissions, mount) before pg_wal fills its disk";
    if (!status_file.empty()) (void)fs.WriteFileAtomic(status_file, message + "\n", 0640);
    return Error::Io(message);
  };
  if (name.empty() || name.find('/') != std::string::npos) return fail("not a WAL file name");
  auto wal = fs.ReadFile(wal_path);
  if (!wal.ok()) return fail(wal.error().message);
  std::string dir = RepositoryWalDir(repo);
  if (!fs.IsDirectory(dir)) {
    if (!fs.IsDirectory(repo)) {
      if (auto made = fs.MakeDir(repo, 0700); !made.ok()) return fail(made.error().message);
    }
    if (auto made = fs.MakeDir(dir, 0700); !made.ok() && !fs.IsDirectory(dir)) {
      return fail(made.error().message);
    }
  }
  std::string dest = dir + "/" + name;
  if (auto existing = fs.ReadFile(dest); existing.ok()) {
    if (*existing != *wal) {
      return fail(dest +
                  " already exists with other contents: the repository holds another "
                  "cluster's WAL; give this cluster its own backup.repository");
    }
  } else if (auto written = fs.WriteFileAtomic(dest, *wal, 0600); !written.ok()) {
    return fail(written.error().message);
  }
  if (!status_file.empty()) {
    if (fs.Exists(status_file)) (void)fs.WriteFileAtomic(status_file, "", 0640);
  }
  return Ok();
}

std::string ReadArchiveFailure(const FileSystem& fs, const std::string& status_file) {
  auto text = fs.ReadFile(status_file);
  return text.ok() ? std::string(Trim(*text)) : "";
}

}  // namespace skydb
