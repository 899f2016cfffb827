// DIR and DIR/run before anything else uses them: created 0700 when missing; an existing DIR
// writable by others, or holding anything that is not skydb's, is refused with the fix; wider
// modes are set to 0700.
// Thread-safety: free function over the injected FileSystem.
#pragma once

#include <string>

#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::daemon {

Status PrepareRunDir(FileSystem& fs, const std::string& data_dir);

// `path` made absolute against the working directory and normalised; `path` itself if that fails.
std::string AbsolutePath(const std::string& path);

}  // namespace skydb::daemon
