// The bundle's container: a zstd-compressed ustar archive written deterministically (entries in
// the caller's order, mtime 0, uid/gid 0, no user or group names, no atime/ctime), read from
// memory. libarchive does the format work. The file ends with a zstd skippable frame holding
// the SHA-256 of every byte before it: tar padding and zstd framing are covered by no member's
// hash, so without it some flipped bytes would go unnoticed. Decompressors skip the frame.
// Internal to src/bundle. Thread-safety: stateless.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::bundle {

struct ArchiveEntry {
  std::string name;         // path inside the archive
  std::string source_file;  // read from here when non-empty
  std::string contents;     // otherwise these bytes
  uint32_t mode = 0644;
};

// Writes `entries` in order to `path` (created or truncated). `written` is called after each.
Status WriteArchive(const std::string& path, const std::vector<ArchiveEntry>& entries,
                    int zstd_level, const FileSystem& fs,
                    const std::function<void(size_t written)>& written);

struct ArchiveMember {
  std::string name;
  bool regular = false;  // anything else (directory, symlink, device) is refused by callers
  uint32_t mode = 0;
  std::string_view data;  // valid during the callback
};

// Checks the trailing SHA-256 frame first (InvalidArgument when absent or wrong), then calls
// `visit` for each member in order, at most `limit` of them (0: all). A visit error
// stops the walk and is returned; so is any archive or decompression error, with `name`.
Status ReadArchive(std::string_view bytes, const std::string& name, size_t limit,
                   const std::function<Status(const ArchiveMember&)>& visit);

}  // namespace skydb::bundle
