#include "daemon/run_dir.h"

#include <filesystem>

#include "daemon/app_access.h"
#include "supervisor/data_dir.h"

namespace skydb::daemon {

Status PrepareRunDir(Env& env, const Config& config) {
  // The same rules in every mode (src/supervisor/data_dir.h).
  SKYDB_ASSIGN_OR_RETURN(RunAs self, LookupUserByUid(env.host->EffectiveUid()));
  SKYDB_ASSIGN_OR_RETURN(auto group, ResolveAppGroup(config, self.name));
  supervisor::RunDirAccess access{group};
  auto layout = supervisor::DataDirLayout::For(config.data_dir);
  SKYDB_RETURN_IF_ERROR(supervisor::PrepareRoot(*env.fs, layout.root, access.root_mode()));
  return supervisor::ShareRunDir(*env.fs, *env.host, layout, access);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

}  // namespace skydb::daemon
