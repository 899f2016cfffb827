#include "daemon/run_dir.h"

#include <filesystem>

#include "supervisor/data_dir.h"

namespace skydb::daemon {

Status PrepareRunDir(FileSystem& fs, const std::string& data_dir) {
  // The same rules in every mode (src/supervisor/data_dir.h): a skydb data dir, 0700, run/ 0700.
  auto layout = supervisor::DataDirLayout::For(data_dir);
  SKYDB_RETURN_IF_ERROR(supervisor::PrepareRoot(fs, layout.root));
  return supervisor::EnsurePrivateDir(fs, layout.run);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

}  // namespace skydb::daemon
