// manifest.json: rendering, parsing and self-consistency.
#include <nlohmann/json.hpp>
#include <set>

#include "base/json_text.h"
#include "base/strings.h"
#include "skydb/bundle.h"

namespace skydb {
namespace {

// A relative path with no empty, "." or ".." component: it cannot leave the bundle root.
bool SafeRelativePath(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.back() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::string RenderManifest(const BundleManifest& m) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& f : m.files) {
    files.push_back({{"path", f.path}, {"sha256", f.sha256}, {"mode", f.mode}, {"size", f.size}});
  }
  nlohmann::ordered_json j = {
      {"format", m.format},
      {"postgresql_version", m.pg_version},
      {"postgres_version_output", m.pg_version_line},
      {"arch", m.arch},
      {"glibc_baseline", m.glibc_baseline},
      {"source", m.source},
      {"bin_dir", m.bin_dir},
      {"system_tzdata", m.system_tzdata},
      {"total_size", m.total_size},
      {"files", files},
  };
  return JsonText(j, 1) + "\n";
}

Result<BundleManifest> ParseManifest(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Error::InvalidArgument("manifest.json is not a JSON object");
  }
  BundleManifest m;
  try {
    m.format = j.at("format").get<int>();
    if (m.format != 1) {
      return Error::VersionMismatch("manifest format " + std::to_string(m.format) +
                                    " is not supported (this skydb reads format 1); stage the "
                                    "bundle with this skydb version");
    }
    m.pg_version = j.at("postgresql_version").get<std::string>();
    m.pg_version_line = j.at("postgres_version_output").get<std::string>();
    m.arch = j.at("arch").get<std::string>();
    m.glibc_baseline = j.at("glibc_baseline").get<std::string>();
    m.source = j.at("source").get<std::string>();
    m.bin_dir = j.at("bin_dir").get<std::string>();
    m.system_tzdata = j.at("system_tzdata").get<std::string>();
    m.total_size = j.at("total_size").get<uint64_t>();
    for (const auto& f : j.at("files")) {
      m.files.push_back({f.at("path").get<std::string>(), f.at("sha256").get<std::string>(),
                         f.at("mode").get<uint32_t>(), f.at("size").get<uint64_t>()});
    }
  } catch (const nlohmann::json::exception& e) {
    return Error::InvalidArgument(std::string("manifest.json: ") + e.what());
  }
  SKYDB_RETURN_IF_ERROR(CheckManifest(m));
  return m;
}

namespace {

Error DamagedBaseline(const BundleManifest& m) {
  return Error::InvalidArgument("manifest.json: glibc_baseline '" + m.glibc_baseline +
                                "' is not a version such as 2.34; the bundle is damaged: stage "
                                "it again");
}

}  // namespace

Status CheckHostCompatible(const BundleManifest& m, const std::string& host_arch,
                           const std::string& host_glibc) {
  if (m.arch != host_arch) {
    return Error::VersionMismatch("the bundle is for " + m.arch + " but this host is " + host_arch +
                                  "; stage a bundle on a host of this architecture");
  }
  if (m.glibc_baseline.empty()) return Ok();
  auto needed = ParseVersionNumbers(m.glibc_baseline);
  if (!needed) return DamagedBaseline(m);
  auto host = ParseVersionNumbers(host_glibc);
  if (!host) {
    return Error::VersionMismatch("cannot compare this host's glibc version '" + host_glibc +
                                  "' with the bundle's baseline " + m.glibc_baseline +
                                  "; extract the bundle on a host with a numbered glibc release");
  }
  if (*host < *needed) {
    return Error::VersionMismatch(
        "the bundle needs glibc " + m.glibc_baseline + " or newer but this host has " + host_glibc +
        "; stage it on a host whose glibc is " + host_glibc + " or older, or upgrade this host");
  }
  return Ok();
}

Status CheckManifest(const BundleManifest& m) {
  if (!m.glibc_baseline.empty() && !ParseVersionNumbers(m.glibc_baseline)) {
    return DamagedBaseline(m);
  }
  uint64_t total = 0;
  std::set<std::string> seen;
  const std::string* previous = nullptr;
  for (const auto& f : m.files) {
    if (!SafeRelativePath(f.path) || f.path == "manifest.json") {
      return Error::InvalidArgument("manifest.json lists an unsafe path '" + f.path + "'");
    }
    if (!IsValidUtf8(f.path)) {
      // A JSON string cannot hold it; rendered with U+FFFD it would name a file not in the archive.
      return Error::InvalidArgument("cannot bundle '" + f.path +
                                    "': its name is not UTF-8, which "
                                    "manifest.json cannot hold; rename the file");
    }
    if (previous != nullptr && !(*previous < f.path)) {
      return Error::InvalidArgument("manifest.json: files are not sorted and unique at '" + f.path +
                                    "'");
    }
    if (f.sha256.size() != 64 || (f.mode & ~07777U) != 0) {
      return Error::InvalidArgument("manifest.json: bad sha256 or mode for '" + f.path + "'");
    }
    previous = &f.path;
    total += f.size;
    seen.insert(f.path);
  }
  if (total != m.total_size) {
    return Error::InvalidArgument("manifest.json: total_size " + std::to_string(m.total_size) +
                                  " differs from the sum of file sizes " + std::to_string(total));
  }
  if (seen.count(m.bin_dir + "/postgres") == 0) {
    return Error::InvalidArgument("manifest.json: bin_dir '" + m.bin_dir +
                                  "' holds no postgres binary");
  }
  if (m.pg_version.empty()) return Error::InvalidArgument("manifest.json: no postgresql_version");
  return Ok();
}

}  // namespace skydb
