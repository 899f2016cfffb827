// Candidate proposals for the pg_config, distro and path sources.
#include "pg/discovery_sources.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <utility>

#include "base/strings.h"

namespace skydb::pg {
namespace {

// pg_config is a small program (or postgresql-common's Perl wrapper); it never takes long.
constexpr std::chrono::milliseconds kPgConfigTimeout{10000};

// A version directory name: "15", "9.6"; parsed to (major, minor) for ordering.
std::optional<std::pair<int, int>> ParseVersionDir(const std::string& name) {
  auto parts = Split(name, '.');
  if (parts.size() > 2) return std::nullopt;
  for (const auto& part : parts) {
    if (part.empty() || part.size() > 6) return std::nullopt;
    for (char c : part) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
  }
  int minor = parts.size() == 2 ? std::stoi(parts[1]) : 0;
  return std::make_pair(std::stoi(parts[0]), minor);
}

struct VersionedDir {
  std::pair<int, int> version;
  Candidate candidate;
};

// Candidates for one layout: every entry of `parent` named `prefix` + version.
void AddLayout(const FileSystem& fs, const std::string& parent, const std::string& prefix,
               const std::string& origin, std::vector<VersionedDir>& out) {
  auto names = fs.ListDir(parent);
  if (!names.ok()) return;  // the layout is simply absent
  for (const auto& name : *names) {
    if (!StartsWith(name, prefix)) continue;
    auto version = ParseVersionDir(name.substr(prefix.size()));
    if (!version) continue;
    Candidate c;
    c.bin_dir = (parent == "/" ? "" : parent) + "/" + name + "/bin";
    c.source = BinarySource::kDistro;
    c.origin = origin;
    out.push_back({*version, std::move(c)});
  }
}

// First line of a command's stderr (or stdout), for a one-line reason.
std::string FirstLine(const CommandOutput& output) {
  const std::string& text = output.err.empty() ? output.out : output.err;
  std::string_view line = Trim(text);
  return std::string(line.substr(0, line.find('\n')));
}

std::string ExitDescription(const CommandOutput& output) {
  if (output.exit_code < 0) return "was killed by signal " + std::to_string(output.term_signal);
  return "exited with status " + std::to_string(output.exit_code);
}

}  // namespace

std::string ParentDir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::optional<std::string> FindOnPath(const FileSystem& fs, const std::string& path_env,
                                      const std::string& name) {
  for (const auto& dir : Split(path_env, ':')) {
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = (dir == "/" ? "" : dir) + "/" + name;
    if (fs.IsExecutable(candidate)) return candidate;
  }
  return std::nullopt;
}

SourceProposal ProposePgConfig(const FileSystem& fs, ProcessRunner& runner,
                               const std::string& path_env) {
  SourceProposal proposal;
  auto pg_config = FindOnPath(fs, path_env, "pg_config");
  if (!pg_config) {
    proposal.skipped = "pg_config: no pg_config on PATH";
    return proposal;
  }
  CommandSpec spec;
  spec.argv = {*pg_config, "--bindir"};
  spec.timeout = kPgConfigTimeout;
  std::string command = *pg_config + " --bindir";
  auto ran = runner.Run(spec);
  if (!ran.ok()) {
    proposal.skipped = "pg_config: " + ran.error().message;
  } else if (ran->exit_code != 0) {
    proposal.skipped =
        "pg_config: " + command + " " + ExitDescription(*ran) + ": " + FirstLine(*ran);
  } else if (Trim(ran->out).empty()) {
    proposal.skipped = "pg_config: " + command + " printed nothing";
  } else {
    Candidate c;
    c.bin_dir = std::string(Trim(ran->out));
    c.source = BinarySource::kPgConfig;
    c.origin = command;
    proposal.candidates.push_back(std::move(c));
  }
  return proposal;
}

SourceProposal ProposeDistro(const FileSystem& fs) {
  std::vector<VersionedDir> found;
  AddLayout(fs, "/usr/lib/postgresql", "", "Debian layout /usr/lib/postgresql/<version>/bin",
            found);
  AddLayout(fs, "/usr", "pgsql-", "PGDG RPM layout /usr/pgsql-<version>/bin", found);
  // Highest version first; stable, so Debian's layout stays ahead at an equal version.
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.version > b.version; });
  SourceProposal proposal;
  for (auto& entry : found) proposal.candidates.push_back(std::move(entry.candidate));
  Candidate source_build;
  source_build.bin_dir = "/usr/local/pgsql/bin";
  source_build.source = BinarySource::kDistro;
  source_build.origin = "source-build layout /usr/local/pgsql/bin";
  proposal.candidates.push_back(std::move(source_build));
  return proposal;
}

SourceProposal ProposePath(const FileSystem& fs, const std::string& path_env) {
  SourceProposal proposal;
  auto postgres = FindOnPath(fs, path_env, "postgres");
  if (!postgres) {
    proposal.skipped = "path: no postgres on PATH";
    return proposal;
  }
  Candidate c;
  c.bin_dir = ParentDir(*postgres);
  c.source = BinarySource::kPath;
  c.origin = *postgres + " on PATH";
  proposal.candidates.push_back(std::move(c));
  return proposal;
}

}  // namespace skydb::pg
