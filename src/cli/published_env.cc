#include "cli/published_env.h"

#include <nlohmann/json.hpp>

#include "skydb/data_dir_layout.h"

namespace skydb::cli {

std::optional<AppEnvironment> ParseJsonEnvironment(const std::string& text) {
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  AppEnvironment env;
  for (const auto& [name, value] : j.items()) {
    if (!value.is_string()) return std::nullopt;
    env.vars.emplace_back(name, value.get<std::string>());
  }
  return env;
}

std::optional<AppEnvironment> PublishedEnvironment(const FileSystem& fs, const std::string& dir) {
  const DataDirLayout layout = DataDirLayout::For(dir);
  auto lock = ProbeDirLock(layout.lock_file);
  if (!lock.ok() || !lock->held) return std::nullopt;
  auto text = fs.ReadFile(layout.app_json);
  if (!text.ok()) return std::nullopt;
  return ParseJsonEnvironment(*text);
}

}  // namespace skydb::cli
