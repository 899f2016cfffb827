// Reads what a bundle needs to know from an ELF file: architecture, NEEDED libraries, RUNPATH
// and the GLIBC_x.y symbol versions it requires. A pure function over the file's bytes.
// Internal to src/bundle. Thread-safety: stateless.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "skydb/result.h"

namespace skydb::bundle {

struct ElfInfo {
  std::string arch;                         // "x86_64", "aarch64", or "machine-<n>"
  bool shared_object = false;               // ET_DYN (libraries and PIE executables)
  std::string soname;                       // DT_SONAME, empty if none
  std::vector<std::string> needed;          // DT_NEEDED in order
  std::vector<std::string> runpath;         // DT_RUNPATH (or DT_RPATH) entries, unexpanded
  std::vector<std::string> glibc_versions;  // "GLIBC_2.34", … from the version-needs table
};

// True when the bytes start with the ELF magic.
bool LooksLikeElf(std::string_view bytes);

// InvalidArgument (naming `name`) for anything but a well-formed 64-bit little-endian ELF.
Result<ElfInfo> ParseElf(std::string_view bytes, const std::string& name);

// "2.34" from {"GLIBC_2.2.5", "GLIBC_2.34", "GLIBC_PRIVATE"}; "" when none.
std::string NewestGlibcVersion(const std::vector<std::string>& versions);

}  // namespace skydb::bundle
