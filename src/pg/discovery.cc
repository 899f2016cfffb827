// Binary discovery: walks the sources in rank order, examines each candidate, dedupes, and
// explains every candidate it passes over.
#include "skydb/discovery.h"

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "base/strings.h"
#include "pg/discovery_sources.h"

namespace skydb {
namespace {

using pg::ParentDir;
using pg::SourceProposal;

constexpr const char* kRequiredBinaries[] = {"postgres", "initdb", "pg_ctl"};
// `postgres --version` prints and exits; anything slower is broken.
constexpr std::chrono::milliseconds kVersionTimeout{10000};
// The major the fix advice names when no pin says otherwise: Debian 12's PostgreSQL.
constexpr const char* kSuggestedMajor = "15";

// Why a candidate cannot be used; the kind picks the fix advice for an explicit bin_dir.
enum class Problem {
  kNone,         // acceptable
  kLayout,       // missing directory or binaries, or binaries not executable
  kBroken,       // postgres --version did not run or printed no version
  kUnsupported,  // outside kMinSupportedMajor..kMaxSupportedMajor
  kPin,          // does not match postgres.version
};

struct Verdict {
  Problem problem = Problem::kNone;
  std::string reason;
};

Verdict CheckLayout(const FileSystem& fs, const std::string& dir) {
  auto info = fs.Stat(dir);
  if (!info.ok()) {
    bool absent = info.error().code == ErrorCode::kNotFound;
    return {Problem::kLayout, absent ? "directory does not exist" : info.error().message};
  }
  if (info->type != FileType::kDirectory) return {Problem::kLayout, "not a directory"};
  std::vector<std::string> missing;
  std::vector<std::string> not_executable;
  for (const char* name : kRequiredBinaries) {
    std::string path = dir + "/" + name;
    if (!fs.Exists(path)) {
      missing.emplace_back(name);
    } else if (!fs.IsExecutable(path)) {
      not_executable.emplace_back(name);
    }
  }
  if (!missing.empty()) return {Problem::kLayout, "missing " + Join(missing, ", ")};
  if (!not_executable.empty()) {
    return {Problem::kLayout, Join(not_executable, ", ") + " not executable"};
  }
  return {};
}

// Runs `<dir>/postgres --version` and parses what it prints into `version`.
Verdict ReadVersion(ProcessRunner& runner, const std::string& dir,
                    std::optional<PgVersion>& version) {
  CommandSpec spec;
  spec.argv = {dir + "/postgres", "--version"};
  spec.timeout = kVersionTimeout;
  std::string command = spec.argv[0] + " --version";
  auto ran = runner.Run(spec);
  if (!ran.ok()) return {Problem::kBroken, ran.error().message};  // it names the binary
  if (ran->exit_code != 0) {
    std::string how = ran->exit_code < 0
                          ? "was killed by signal " + std::to_string(ran->term_signal)
                          : "exited with status " + std::to_string(ran->exit_code);
    return {Problem::kBroken, command + " " + how};
  }
  auto parsed = ParsePostgresVersion(ran->out);
  if (!parsed.ok()) return {Problem::kBroken, command + ": " + parsed.error().message};
  version = std::move(parsed).value();
  return {};
}

Verdict CheckVersion(const PgVersion& version, const std::string& pin) {
  if (std::string why = UnsupportedMajorReason(version); !why.empty()) {
    return {Problem::kUnsupported, why};
  }
  if (!VersionMatchesPin(version, pin)) {
    return {Problem::kPin, "PostgreSQL " + version.text +
                               " does not match the pin postgres.version = \"" + pin + "\""};
  }
  return {};
}

Verdict Inspect(const FileSystem& fs, ProcessRunner& runner, const std::string& pin,
                Candidate& candidate) {
  Verdict verdict = CheckLayout(fs, candidate.bin_dir);
  if (verdict.problem != Problem::kNone) return verdict;
  verdict = ReadVersion(runner, candidate.bin_dir, candidate.version);
  if (verdict.problem != Problem::kNone) return verdict;
  return CheckVersion(*candidate.version, pin);
}

std::string FixForExplicitDir(Problem problem, const std::string& pin) {
  switch (problem) {
    case Problem::kUnsupported:
      return "point it at PostgreSQL " + std::to_string(kMinSupportedMajor) + " to " +
             std::to_string(kMaxSupportedMajor) + ", or unset it";
    case Problem::kPin:
      return "point it at PostgreSQL " + pin + " binaries, change postgres.version, or unset it";
    case Problem::kBroken:
      return "set it to a directory holding working PostgreSQL binaries, or unset it";
    default:
      return "set it to a directory holding postgres, initdb and pg_ctl, or unset it";
  }
}

std::string Describe(const Candidate& c) {
  return c.bin_dir + " (" + BinarySourceName(c.source) + "): " + c.rejection;
}

// One pass over the sources; owns the report while it is being built.
class Discovery {
 public:
  Discovery(const DiscoveryOptions& options, const FileSystem& fs, ProcessRunner& runner)
      : options_(options), fs_(fs), runner_(runner) {}

  DiscoveryOutcome Run() {
    if (auto pin = ValidateVersionPin(options_.version_pin); !pin.ok()) {
      out_.error = std::move(pin).error();
      return std::move(out_);
    }
    ExplicitBinDir();
    Bundle();
    FromSource(BinarySource::kPgConfig,
               [&] { return pg::ProposePgConfig(fs_, runner_, options_.path_env); });
    FromSource(BinarySource::kDistro, [&] { return pg::ProposeDistro(fs_); });
    FromSource(BinarySource::kPath, [&] { return pg::ProposePath(fs_, options_.path_env); });
    if (!out_.report.chosen && !out_.error) {
      out_.error = NothingUsable();
      out_.advice = Advice();
    }
    return std::move(out_);
  }

 private:
  bool Allowed(BinarySource s) const {
    for (BinarySource a : options_.allowed) {
      if (a == s) return true;
    }
    return false;
  }
  // Serve stops at the first decision; doctor looks at everything.
  bool Done() const { return !options_.examine_all && (out_.report.chosen || out_.error); }
  std::string Origin() const {
    return options_.bin_dir_origin.empty() ? "postgres.bin_dir" : options_.bin_dir_origin;
  }
  void Skip(BinarySource s, const std::string& why) {
    out_.report.skipped_sources.push_back(std::string(BinarySourceName(s)) + ": " + why);
  }
  void Reject(Candidate c, std::string reason) {
    c.rejection = std::move(reason);
    out_.report.rejected.push_back(std::move(c));
  }

  void ExplicitBinDir();
  void Bundle();
  void FromSource(BinarySource s, const std::function<SourceProposal()>& propose);
  void Consider(Candidate c);
  std::string DedupeKey(const std::string& dir) const;
  std::string Advice() const;
  Error NothingUsable() const;

  const DiscoveryOptions& options_;
  const FileSystem& fs_;
  ProcessRunner& runner_;
  DiscoveryOutcome out_;
  std::map<std::string, std::string> examined_;  // dedupe key → the first dir that had it
  std::string overridden_by_;  // why usable candidates are not used after an explicit failure
  bool pin_rejected_ = false;
};

void Discovery::ExplicitBinDir() {
  if (options_.bin_dir.empty()) {
    Skip(BinarySource::kBinDir, "not set (SKY_POSTGRES_BIN, postgres.bin_dir)");
    return;
  }
  std::string named = Origin() + "=" + options_.bin_dir;
  overridden_by_ = Origin() + " is set and ranks first";
  if (!Allowed(BinarySource::kBinDir)) {
    out_.error = Error::InvalidArgument(
        named +
        " is set but postgres.sources does not allow bin_dir; add \"bin_dir\" to "
        "postgres.sources or unset it");
    return;
  }
  Candidate c{options_.bin_dir, BinarySource::kBinDir, Origin(), std::nullopt, ""};
  examined_[DedupeKey(c.bin_dir)] = c.bin_dir;
  Verdict verdict = Inspect(fs_, runner_, options_.version_pin, c);
  if (verdict.problem == Problem::kNone) {
    out_.report.chosen = std::move(c);
    return;
  }
  std::string message = named + ": " + verdict.reason + "; " +
                        FixForExplicitDir(verdict.problem, options_.version_pin);
  out_.error = verdict.problem == Problem::kPin || verdict.problem == Problem::kUnsupported
                   ? Error::VersionMismatch(message)
                   : Error::NotFound(message);
  Reject(std::move(c), verdict.reason);
}

void Discovery::Bundle() {
  if (Done()) return;
  if (!Allowed(BinarySource::kBundle)) {
    return Skip(BinarySource::kBundle, "not allowed by postgres.sources");
  }
  if (options_.bundle == nullptr) return Skip(BinarySource::kBundle, "no bundle");
  std::string described = options_.bundle->Describe();
  if (auto version = options_.bundle->Version()) {
    Verdict verdict = CheckVersion(*version, options_.version_pin);
    if (verdict.problem != Problem::kNone) {
      pin_rejected_ = pin_rejected_ || verdict.problem == Problem::kPin;
      return Reject(Candidate{"(not extracted)", BinarySource::kBundle, described, version, ""},
                    verdict.reason);
    }
  }
  auto provided = options_.bundle->Provide();
  if (!provided.ok()) {
    // A bundle that is there but fails verification is never silently replaced.
    if (!out_.error) out_.error = std::move(provided).error().Within("bundle " + described);
    overridden_by_ = "the bundle failed";
    return;
  }
  if (!provided->has_value()) return Skip(BinarySource::kBundle, described);
  Consider(Candidate{**provided, BinarySource::kBundle, described, std::nullopt, ""});
}

void Discovery::FromSource(BinarySource s, const std::function<SourceProposal()>& propose) {
  if (Done()) return;
  if (!Allowed(s)) return Skip(s, "not allowed by postgres.sources");
  SourceProposal proposal = propose();
  if (!proposal.skipped.empty()) out_.report.skipped_sources.push_back(proposal.skipped);
  for (auto& candidate : proposal.candidates) {
    if (Done()) return;
    Consider(std::move(candidate));
  }
}

void Discovery::Consider(Candidate c) {
  std::string key = DedupeKey(c.bin_dir);
  if (auto seen = examined_.find(key); seen != examined_.end()) {
    return Reject(std::move(c), "same as " + seen->second + " (already examined)");
  }
  examined_[key] = c.bin_dir;
  Verdict verdict = Inspect(fs_, runner_, options_.version_pin, c);
  if (verdict.problem == Problem::kPin) pin_rejected_ = true;
  if (verdict.problem != Problem::kNone) return Reject(std::move(c), verdict.reason);
  if (out_.report.chosen) {
    const Candidate& chosen = *out_.report.chosen;
    return Reject(std::move(c), std::string("usable, but ranked below the chosen ") +
                                    chosen.bin_dir + " (" + BinarySourceName(chosen.source) + ")");
  }
  if (out_.error) return Reject(std::move(c), "usable, but not used: " + overridden_by_);
  out_.report.chosen = std::move(c);
}

// Directories are the same installation when all three binaries resolve into one directory
// (a PATH dir of symlinks into /usr/lib/postgresql/15/bin is that directory: PostgreSQL
// resolves its own symlinks to find its siblings); otherwise the directory's real path.
std::string Discovery::DedupeKey(const std::string& dir) const {
  std::set<std::string> homes;
  bool all_resolved = true;
  for (const char* name : kRequiredBinaries) {
    auto real = fs_.RealPath(dir + "/" + name);
    all_resolved = all_resolved && real.ok();
    if (real.ok()) homes.insert(ParentDir(*real));
  }
  if (all_resolved && homes.size() == 1) return *homes.begin();
  auto real_dir = fs_.RealPath(dir);
  return real_dir.ok() ? *real_dir : dir;
}

std::string Discovery::Advice() const {
  const std::string& pin = options_.version_pin;
  std::string major = pin.empty() ? kSuggestedMajor : Split(pin, '.')[0];
  std::string fix = "install postgresql-" + major + " (apt-get install postgresql-" + major +
                    "), set SKY_POSTGRES_BIN to a directory holding postgres, initdb and pg_ctl";
  return fix + (pin.empty() ? "" : ", or change postgres.version (now \"" + pin + "\")");
}

Error Discovery::NothingUsable() const {
  std::vector<std::string> looked_at;
  for (const auto& c : out_.report.rejected) looked_at.push_back(Describe(c));
  for (const auto& s : out_.report.skipped_sources) looked_at.push_back("skipped " + s);
  std::string message =
      "no usable PostgreSQL binaries found (" + Join(looked_at, "; ") + "); " + Advice();
  return pin_rejected_ ? Error::VersionMismatch(message) : Error::NotFound(message);
}

}  // namespace

DiscoveryOutcome ExamineBinaries(const DiscoveryOptions& options, const FileSystem& fs,
                                 ProcessRunner& runner) {
  return Discovery(options, fs, runner).Run();
}

Result<DiscoveryReport> DiscoverBinaries(const DiscoveryOptions& options, const FileSystem& fs,
                                         ProcessRunner& runner) {
  DiscoveryOutcome outcome = ExamineBinaries(options, fs, runner);
  if (outcome.error) return std::move(*outcome.error);
  return std::move(outcome.report);
}

Result<DiscoveryOptions> DiscoveryOptionsFromConfig(const PostgresConfig& config,
                                                    const std::string& sky_postgres_bin_env,
                                                    const std::string& path_env) {
  SKYDB_RETURN_IF_ERROR(ValidateVersionPin(config.version));
  DiscoveryOptions options;
  options.bin_dir = config.bin_dir;
  bool from_env = !sky_postgres_bin_env.empty() && sky_postgres_bin_env == config.bin_dir;
  options.bin_dir_origin = from_env ? "SKY_POSTGRES_BIN" : "postgres.bin_dir";
  options.version_pin = config.version;
  options.allowed.clear();
  for (const auto& name : config.sources) {
    auto source = ParseBinarySource(name);
    if (!source.ok()) return std::move(source).error().Within("postgres.sources");
    options.allowed.push_back(*source);
  }
  options.path_env = path_env;
  return options;
}

}  // namespace skydb
