#include "supervisor/upgrade_steps.h"

#include "base/strings.h"

namespace skydb::upgrade {

std::optional<std::string> FindExtensionControl(const FileSystem& fs, const std::string& bin_dir,
                                                const std::string& name) {
  std::vector<std::string> dirs = {bin_dir + "/../share/postgresql/extension",
                                   bin_dir + "/../share/extension"};
  // PREFIX/lib/postgresql/N/bin → PREFIX/share/postgresql/N/extension (Debian, and bundles
  // staged from it).
  auto parts = Split(bin_dir, '/');
  if (parts.size() >= 4 && parts[parts.size() - 1] == "bin" &&
      parts[parts.size() - 3] == "postgresql" && parts[parts.size() - 4] == "lib") {
    std::string prefix = Join(std::vector<std::string>(parts.begin(), parts.end() - 4), "/");
    dirs.push_back(prefix + "/share/postgresql/" + parts[parts.size() - 2] + "/extension");
  }
  for (const auto& dir : dirs) {
    if (!fs.IsDirectory(dir)) continue;
    std::string control = dir + "/" + name + ".control";
    return fs.Exists(control) ? control : std::string();
  }
  return std::nullopt;
}

Result<std::vector<std::string>> RoleNames(pg::Connection& conn) {
  SKYDB_ASSIGN_OR_RETURN(auto rows,
                         conn.Exec("SELECT rolname FROM pg_roles WHERE rolname !~ '^pg_' "
                                   "ORDER BY 1"));
  std::vector<std::string> names;
  for (int i = 0; i < rows.rows(); ++i) names.push_back(rows.Get(i, 0));
  return names;
}

}  // namespace skydb::upgrade
