#include "daemon/run_dir.h"

#include "supervisor/data_dir.h"

namespace skydb::daemon {

Status PrepareRunDir(FileSystem& fs, const std::string& data_dir) {
  for (const std::string& dir : {data_dir, data_dir + "/run"}) {
    auto info = fs.Stat(dir);
    if (info.ok()) {
      SKYDB_RETURN_IF_ERROR(supervisor::CheckDirSafe(dir, *info));
      continue;
    }
    if (info.error().code != ErrorCode::kNotFound) return info.error();
    SKYDB_RETURN_IF_ERROR(fs.MakeDir(dir, 0700));
  }
  return Ok();
}

}  // namespace skydb::daemon
