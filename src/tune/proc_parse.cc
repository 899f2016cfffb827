// Pure parsers for the /proc and /sys formats host facts are read from.
#include <algorithm>
#include <charconv>

#include "base/strings.h"
#include "tune/host_readers.h"

namespace skydb::tune_internal {
namespace {

// Guards ParseCpuList against a corrupt range asking for billions of CPUs.
constexpr int kMaxCpuNumber = 1 << 16;

}  // namespace

std::optional<uint64_t> ParseDecimal(std::string_view text) {
  text = Trim(text);
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

Result<uint64_t> ParseMemTotal(const std::string& meminfo, const std::string& path) {
  for (const std::string& line : Split(meminfo, '\n')) {
    if (!StartsWith(line, "MemTotal:")) continue;
    std::string_view rest = Trim(std::string_view(line).substr(9));
    std::optional<uint64_t> kib;
    if (EndsWith(rest, "kB")) kib = ParseDecimal(rest.substr(0, rest.size() - 2));
    if (!kib || *kib == 0) {
      return Error::Io("cannot parse MemTotal in " + path + ": expected '<number> kB', got '" +
                       std::string(rest) + "'");
    }
    return *kib * 1024;
  }
  return Error::Io("cannot find MemTotal in " + path);
}

Result<std::vector<int>> ParseCpuList(const std::string& text, const std::string& path) {
  auto malformed = [&] {
    return Error::Io("cannot parse the CPU list in " + path +
                     ": expected ranges like "
                     "'0-3,8-11', got '" +
                     std::string(Trim(text)) + "'");
  };
  std::vector<int> cpus;
  std::string_view trimmed = Trim(text);
  if (trimmed.empty()) return malformed();
  for (const std::string& range : Split(trimmed, ',')) {
    auto bounds = Split(range, '-');
    if (bounds.size() > 2) return malformed();
    auto first = ParseDecimal(bounds.front());
    auto last = ParseDecimal(bounds.back());
    if (!first || !last || *first > *last || *last >= kMaxCpuNumber) return malformed();
    for (uint64_t cpu = *first; cpu <= *last; ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

CgroupPaths ParseSelfCgroup(const std::string& text) {
  CgroupPaths paths;
  for (const std::string& line : Split(text, '\n')) {
    // "hierarchy-id:controller,list:/path"; the path itself may contain ':'.
    auto first = line.find(':');
    auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string id = line.substr(0, first);
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = std::string(Trim(line.substr(second + 1)));
    if (!StartsWith(path, "/")) continue;
    if (id == "0" && controllers.empty()) {
      paths.unified = path;
      continue;
    }
    for (const std::string& controller : Split(controllers, ',')) {
      if (controller == "memory") paths.v1_memory = path;
      if (controller == "cpu") paths.v1_cpu = path;
    }
  }
  return paths;
}

std::vector<std::string> SelfAndAncestors(const std::string& cgroup_path) {
  std::vector<std::string> parts;
  for (const std::string& part : Split(cgroup_path, '/')) {
    if (part == "..") return {"/"};  // outside our namespace: only the visible root applies
    if (!part.empty() && part != ".") parts.push_back(part);
  }
  std::vector<std::string> chain;
  for (size_t depth = parts.size(); depth > 0; --depth) {
    std::string path;
    for (size_t i = 0; i < depth; ++i) path += "/" + parts[i];
    chain.push_back(path);
  }
  chain.emplace_back("/");
  return chain;
}

}  // namespace skydb::tune_internal
