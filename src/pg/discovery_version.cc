// Source names, `postgres --version` parsing and version pins: the pure parts of discovery.
#include <cctype>
#include <string_view>

#include "base/strings.h"
#include "skydb/discovery.h"

namespace skydb {
namespace {

struct SourceName {
  BinarySource source;
  const char* name;
};

constexpr SourceName kSourceNames[] = {
    {BinarySource::kBinDir, "bin_dir"},     {BinarySource::kBundle, "bundle"},
    {BinarySource::kPgConfig, "pg_config"}, {BinarySource::kDistro, "distro"},
    {BinarySource::kPath, "path"},
};

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Consumes leading digits of `s` into `out`; false if there are none (or too many to be sane).
bool TakeNumber(std::string_view& s, int& out) {
  size_t n = 0;
  while (n < s.size() && IsDigit(s[n])) ++n;
  if (n == 0 || n > 6) return false;
  out = std::stoi(std::string(s.substr(0, n)));
  s.remove_prefix(n);
  return true;
}

// The version token: the first token after "(PostgreSQL)" (or anywhere, if the marker is
// missing) that starts with a digit.
std::string VersionToken(std::string_view output) {
  constexpr std::string_view kMarker = "(PostgreSQL)";
  auto marker = output.find(kMarker);
  if (marker != std::string_view::npos) output.remove_prefix(marker + kMarker.size());
  std::string flat(output);
  for (char& c : flat) {
    if (std::isspace(static_cast<unsigned char>(c))) c = ' ';
  }
  for (const auto& token : Split(flat, ' ')) {
    if (!token.empty() && IsDigit(token[0])) return token;
  }
  return "";
}

// Digits only, one to six of them.
bool IsNumber(std::string_view s) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

}  // namespace

const char* BinarySourceName(BinarySource s) {
  for (const auto& entry : kSourceNames) {
    if (entry.source == s) return entry.name;
  }
  return "unknown";
}

Result<BinarySource> ParseBinarySource(const std::string& name) {
  for (const auto& entry : kSourceNames) {
    if (name == entry.name) return entry.source;
  }
  return Error::InvalidArgument("'" + name +
                                "' is not a binary source; use bin_dir, bundle, pg_config, "
                                "distro or path");
}

Result<PgVersion> ParsePostgresVersion(const std::string& output) {
  PgVersion version;
  version.text = VersionToken(output);
  std::string_view rest = version.text;
  if (!TakeNumber(rest, version.major)) {
    return Error::InvalidArgument("cannot find a version in '" + std::string(Trim(output)) + "'");
  }
  // "15.18" → minor 18; "17beta1" has none; "9.6.24" → 9 and 6 (pre-10 majors are two parts).
  if (!rest.empty() && rest[0] == '.') {
    rest.remove_prefix(1);
    if (!TakeNumber(rest, version.minor)) {
      return Error::InvalidArgument("malformed version '" + version.text + "'");
    }
  }
  return version;
}

Status ValidateVersionPin(const std::string& pin) {
  if (pin.empty()) return Ok();
  auto parts = Split(pin, '.');
  bool ok = parts.size() <= 2;
  for (const auto& part : parts) ok = ok && IsNumber(part);
  if (ok) return Ok();
  return Error::InvalidArgument("postgres.version '" + pin +
                                "' is not a version pin; use a major (\"15\") or major.minor "
                                "(\"15.18\"), or leave it empty for any version");
}

std::string UnsupportedMajorReason(const PgVersion& version) {
  if (version.major >= kMinSupportedMajor && version.major <= kMaxSupportedMajor) return "";
  return "PostgreSQL " + version.text + " is not supported (skydb supports " +
         std::to_string(kMinSupportedMajor) + " to " + std::to_string(kMaxSupportedMajor) + ")";
}

bool VersionMatchesPin(const PgVersion& v, const std::string& pin) {
  if (pin.empty() || pin == v.text) return true;
  auto parts = Split(pin, '.');
  if (parts.empty() || parts.size() > 2 || !IsNumber(parts[0])) return false;
  if (std::stoi(parts[0]) != v.major) return false;
  if (parts.size() == 1) return true;
  // "15.0" must not match "15beta1": a pinned minor needs a printed minor.
  bool has_minor = v.text.find('.') != std::string::npos;
  return has_minor && IsNumber(parts[1]) && std::stoi(parts[1]) == v.minor;
}

}  // namespace skydb
