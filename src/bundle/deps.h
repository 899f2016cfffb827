// Which files a bundle holds and where: the installation's directories mapped into the bundle,
// and the shared libraries its ELF files need, found by walking NEEDED entries the way the
// dynamic loader searches. Pure over the injected FileSystem. Internal to src/bundle.
// Thread-safety: stateless.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "skydb/env.h"
#include "skydb/result.h"

namespace skydb::bundle {

// What `pg_config` (no arguments) reports about an installation.
struct InstallDirs {
  std::string bindir, pkglibdir, sharedir;
  std::string system_tzdata;  // --with-system-tzdata=PATH from CONFIGURE, or ""
};
Result<InstallDirs> ParsePgConfig(const std::string& output);

// The same for a relocatable tree without pg_config (an embedded-postgres build, Sky's
// six-binary bundles): `root`/bin, the first of lib/postgresql and lib that holds plpgsql.so,
// the first of share/postgresql and share that holds postgres.bki. NotFound names what is
// missing. A tree with its own share/.../timezone has no system_tzdata.
Result<InstallDirs> RelocatableDirs(const FileSystem& fs, const std::string& root);

// The bundle keeps the installation's directories relative to their longest common prefix, so
// PostgreSQL's relocation (share and lib found from the binary's own path) keeps working:
// /usr/lib/postgresql/15/bin → lib/postgresql/15/bin, /usr/share/postgresql/15 →
// share/postgresql/15.
struct BundleLayout {
  std::string bin, pkglib, share;
  std::string libs = "skydb-libs";  // shared libraries from outside the installation
};
BundleLayout LayoutFor(const InstallDirs& dirs);

// The relative path from directory `from` to directory `to`, both relative to one root:
// ("lib/postgresql/15/bin", "skydb-libs") → "../../../../skydb-libs".
std::string RelativeDir(const std::string& from, const std::string& to);

// glibc's own libraries and the dynamic loader: the base every Linux host provides, never
// bundled.
bool IsBaseCLibrary(const std::string& soname);

// Where the loader looks by default on a Debian-style host for `arch`.
std::vector<std::string> DefaultLibraryDirs(const std::string& arch);

struct ResolvedLibrary {
  std::string soname;     // the NEEDED name: "libpq.so.5"
  std::string path;       // the file found, symlinks resolved
  std::string needed_by;  // the first file that needed it
};

struct DependencyWalk {
  std::string arch;
  std::vector<ResolvedLibrary> libraries;   // sorted by soname
  std::vector<std::string> glibc_versions;  // every GLIBC_x.y any file requires
  // With tolerate_missing: each object's resolved libraries (paths), and the sonames it needs
  // that were found nowhere ("needs X, which is in none of …" for the first one).
  std::map<std::string, std::vector<std::string>> needs;
  std::map<std::string, std::string> missing;
};

// Walks NEEDED transitively from `roots` (ELF files), searching each object's own RUNPATH
// ($ORIGIN expanded) and then `search_dirs`; base C libraries are not followed. NotFound names
// the library, who needs it and where it was looked for; with `tolerate_missing` that reason
// is recorded in `missing` instead and the walk goes on.
Result<DependencyWalk> WalkDependencies(const std::vector<std::string>& roots, const FileSystem& fs,
                                        const std::vector<std::string>& search_dirs,
                                        bool tolerate_missing = false);

// With a tolerant walk: why `object` cannot load (a library it needs, directly or through
// another, was found nowhere), or "" when it can.
std::string WhyUnloadable(const DependencyWalk& walk, const std::string& object);

}  // namespace skydb::bundle
