// Binary discovery and version pinning: which PostgreSQL binaries skydb runs, and why.
//
// Sources in rank order (docs/discovery.md "Order"); the first acceptable candidate wins:
//   1. bin_dir   — SKY_POSTGRES_BIN or config postgres.bin_dir. If set and unusable, discovery
//                  fails with a message naming the variable/key and what is missing; it never
//                  silently falls through to another source.
//   2. bundle    — a bundle embedded in the binary or configured (skydb/bundle.h); its manifest
//                  version meets the pin before it is extracted.
//   3. pg_config — `pg_config --bindir` of the first pg_config on PATH.
//   4. distro    — /usr/lib/postgresql/<major>/bin, /usr/pgsql-<major>/bin (highest major first),
//                  then /usr/local/pgsql/bin.
//   5. path      — the directory of the first `postgres` on PATH.
// A candidate must hold executable postgres, initdb and pg_ctl; its version is what
// `postgres --version` prints; a version pin rejects other versions. Every candidate that was
// looked at and passed over is reported with its reason. A candidate whose postgres resolves
// (symlinks followed) to a directory already examined is reported as "same as <dir> (already
// examined)" and not examined again. docs/discovery.md lists every rejection reason.
//
// Thread-safety: pure with respect to its injected FileSystem and ProcessRunner.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "skydb/config.h"
#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb {

enum class BinarySource { kBinDir, kBundle, kPgConfig, kDistro, kPath };
const char* BinarySourceName(BinarySource s);  // "bin_dir", "bundle", "pg_config", ...
Result<BinarySource> ParseBinarySource(const std::string& name);

struct PgVersion {
  int major = 0;
  int minor = 0;
  std::string text;  // as printed: "15.18"
};
// Parses `postgres --version` output: "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)".
Result<PgVersion> ParsePostgresVersion(const std::string& output);

// A version pin: "" matches all, "15" any 15.x, "15.18" exactly that.
bool VersionMatchesPin(const PgVersion& v, const std::string& pin);
// InvalidArgument unless `pin` is "", a major ("15") or major.minor ("15.18").
Status ValidateVersionPin(const std::string& pin);

// The majors skydb supports, each tested in CI (tools/test.sh, tests/integration/
// pg_majors_test.cc); others are rejected as unsupported, whatever the pin says.
inline constexpr int kMinSupportedMajor = 14;
inline constexpr int kMaxSupportedMajor = 18;
// "" for a supported major, else why not: "PostgreSQL 19.1 is not supported (skydb supports
// 14 to 18)".
std::string UnsupportedMajorReason(const PgVersion& version);

struct Candidate {
  std::string bin_dir;
  BinarySource source = BinarySource::kPath;
  std::string origin;  // where it came from: "SKY_POSTGRES_BIN", "/usr/bin/pg_config"
  std::optional<PgVersion> version;
  std::string rejection;  // why it was passed over; empty for the chosen one
};

struct DiscoveryReport {
  std::optional<Candidate> chosen;
  std::vector<Candidate> rejected;           // in the order they were examined
  std::vector<std::string> skipped_sources;  // "bundle: no bundle", "path: not allowed"
};

// The bundle slot: returns the bin dir of an extracted, verified bundle, or nullopt for none.
class BundleSlot {
 public:
  virtual ~BundleSlot() = default;
  virtual Result<std::optional<std::string>> Provide() = 0;
  virtual std::string Describe() const = 0;  // for reports: "no bundle", "embedded 15.18-..."
  // The bundle's version from its manifest, read without extracting, so a bundle the pin
  // rejects is never extracted; nullopt when unknown (Provide then reports the problem).
  virtual std::optional<PgVersion> Version() { return std::nullopt; }
};

struct DiscoveryOptions {
  std::string bin_dir;         // explicit directory, empty if none
  std::string bin_dir_origin;  // "SKY_POSTGRES_BIN" or "postgres.bin_dir in /etc/skydb.toml"
  std::string version_pin;     // postgres.version
  std::vector<BinarySource> allowed = {BinarySource::kBinDir, BinarySource::kBundle,
                                       BinarySource::kPgConfig, BinarySource::kDistro,
                                       BinarySource::kPath};
  std::string path_env;          // the PATH to search
  BundleSlot* bundle = nullptr;  // nullptr: "no bundle"
  // false (serve): stop at the first acceptable candidate. true (doctor): examine every source,
  // and report acceptable candidates ranked below the chosen one as passed over with why.
  bool examine_all = false;
};

// Builds options from [postgres] config. `sky_postgres_bin_env` is the value of
// SKY_POSTGRES_BIN (empty if unset): when it equals bin_dir the origin is that variable,
// otherwise the config key. InvalidArgument names a bad postgres.sources entry or pin.
Result<DiscoveryOptions> DiscoveryOptionsFromConfig(const PostgresConfig& config,
                                                    const std::string& sky_postgres_bin_env,
                                                    const std::string& path_env);

// Everything discovery saw, whether or not it chose something; `error` is set exactly when
// DiscoverBinaries would fail, with the same message.
struct DiscoveryOutcome {
  DiscoveryReport report;
  std::optional<Error> error;
  // When nothing was usable: the fix alone ("install postgresql-15 ..."), for reports such as
  // doctor's that list the candidates themselves. Empty otherwise.
  std::string advice;
};
DiscoveryOutcome ExamineBinaries(const DiscoveryOptions& options, const FileSystem& fs,
                                 ProcessRunner& runner);

// Fails only when nothing acceptable was found or the explicit bin_dir is unusable; the error
// message lists every rejected candidate with its reason.
Result<DiscoveryReport> DiscoverBinaries(const DiscoveryOptions& options, const FileSystem& fs,
                                         ProcessRunner& runner);

}  // namespace skydb
