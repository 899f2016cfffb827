#include "bundle/deps.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "base/strings.h"
#include "bundle/elf.h"

namespace skydb::bundle {
namespace {

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

std::vector<std::string> PathParts(const std::string& p) {
  std::vector<std::string> parts;
  for (auto& part : Split(p, '/')) {
    if (!part.empty() && part != ".") parts.push_back(part);
  }
  return parts;
}

std::string ValueAfter(const std::string& line, const std::string& key) {
  if (line.rfind(key + " = ", 0) != 0) return "";
  return std::string(Trim(line.substr(key.size() + 3)));
}

struct Object {
  std::string path;
  std::string needed_by;
};

}  // namespace

Result<InstallDirs> ParsePgConfig(const std::string& output) {
  InstallDirs dirs;
  for (const auto& line : Split(output, '\n')) {
    if (auto v = ValueAfter(line, "BINDIR"); !v.empty()) dirs.bindir = v;
    if (auto v = ValueAfter(line, "PKGLIBDIR"); !v.empty()) dirs.pkglibdir = v;
    if (auto v = ValueAfter(line, "SHAREDIR"); !v.empty()) dirs.sharedir = v;
    if (auto v = ValueAfter(line, "CONFIGURE"); !v.empty()) {
      const std::string flag = "--with-system-tzdata=";
      if (size_t at = v.find(flag); at != std::string::npos) {
        size_t start = at + flag.size();
        size_t end = v.find_first_of("' ", start);
        dirs.system_tzdata = v.substr(start, end == std::string::npos ? end : end - start);
      }
    }
  }
  if (dirs.bindir.empty() || dirs.pkglibdir.empty() || dirs.sharedir.empty()) {
    return Error::InvalidArgument("pg_config did not report BINDIR, PKGLIBDIR and SHAREDIR");
  }
  return dirs;
}

Result<InstallDirs> RelocatableDirs(const FileSystem& fs, const std::string& root) {
  InstallDirs dirs;
  dirs.bindir = root + "/bin";
  for (const char* dir : {"/lib/postgresql", "/lib"}) {
    if (fs.Exists(root + dir + "/plpgsql.so")) {
      dirs.pkglibdir = root + dir;
      break;
    }
  }
  for (const char* dir : {"/share/postgresql", "/share"}) {
    if (fs.Exists(root + dir + "/postgres.bki")) {
      dirs.sharedir = root + dir;
      break;
    }
  }
  std::vector<std::string> missing;
  if (dirs.pkglibdir.empty()) missing.emplace_back("lib/postgresql/plpgsql.so (or lib/plpgsql.so)");
  if (dirs.sharedir.empty()) {
    missing.emplace_back("share/postgresql/postgres.bki (or share/postgres.bki)");
  }
  if (!missing.empty()) {
    return Error::NotFound(
        root + " has no bin/pg_config and is not a relocatable PostgreSQL tree: " + "it lacks " +
        Join(missing, " and ") +
        "; --from must be an installation such as /usr/lib/postgresql/15 or a "
        "tree with bin/, lib/ and share/");
  }
  return dirs;
}

BundleLayout LayoutFor(const InstallDirs& dirs) {
  std::vector<std::vector<std::string>> all = {PathParts(dirs.bindir), PathParts(dirs.pkglibdir),
                                               PathParts(dirs.sharedir)};
  size_t common = 0;
  while (std::all_of(all.begin(), all.end(), [&](const auto& p) {
    return common + 1 < p.size() && p[common] == all[0][common];
  })) {
    ++common;
  }
  auto tail = [&](const std::vector<std::string>& p) {
    return Join(std::vector<std::string>(p.begin() + static_cast<long>(common), p.end()), "/");
  };
  BundleLayout layout;
  layout.bin = tail(all[0]);
  layout.pkglib = tail(all[1]);
  layout.share = tail(all[2]);
  return layout;
}

std::string RelativeDir(const std::string& from, const std::string& to) {
  auto a = PathParts(from);
  auto b = PathParts(to);
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  std::vector<std::string> parts(a.size() - common, "..");
  parts.insert(parts.end(), b.begin() + static_cast<long>(common), b.end());
  return parts.empty() ? "." : Join(parts, "/");
}

bool IsBaseCLibrary(const std::string& soname) {
  static const std::set<std::string> kGlibc = {"libc.so.6",
                                               "libm.so.6",
                                               "libdl.so.2",
                                               "libpthread.so.0",
                                               "librt.so.1",
                                               "libutil.so.1",
                                               "libresolv.so.2",
                                               "libanl.so.1",
                                               "libnsl.so.1",
                                               "libmvec.so.1",
                                               "libBrokenLocale.so.1",
                                               "libthread_db.so.1",
                                               "libc_malloc_debug.so.0"};
  return kGlibc.count(soname) != 0 || soname.rfind("ld-linux", 0) == 0 ||
         soname.rfind("libnss_", 0) == 0;
}

std::vector<std::string> DefaultLibraryDirs(const std::string& arch) {
  std::string triplet = arch + "-linux-gnu";
  return {"/lib/" + triplet, "/usr/lib/" + triplet, "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
}

Result<DependencyWalk> WalkDependencies(const std::vector<std::string>& roots, const FileSystem& fs,
                                        const std::vector<std::string>& search_dirs,
                                        bool tolerate_missing) {
  DependencyWalk walk;
  std::map<std::string, ResolvedLibrary> found;  // soname → library
  std::set<std::string> glibc;
  std::deque<Object> queue;
  for (const auto& r : roots) queue.push_back({r, ""});
  std::set<std::string> visited;
  while (!queue.empty()) {
    Object object = queue.front();
    queue.pop_front();
    if (!visited.insert(object.path).second) continue;
    SKYDB_ASSIGN_OR_RETURN(std::string bytes, fs.ReadFile(object.path));
    SKYDB_ASSIGN_OR_RETURN(ElfInfo info, ParseElf(bytes, object.path));
    if (walk.arch.empty()) walk.arch = info.arch;
    glibc.insert(info.glibc_versions.begin(), info.glibc_versions.end());
    std::vector<std::string> dirs;
    std::string origin = DirOf(object.path);
    for (auto dir : info.runpath) {
      if (size_t at = dir.find("$ORIGIN"); at != std::string::npos) dir.replace(at, 7, origin);
      dirs.push_back(dir);
    }
    dirs.insert(dirs.end(), search_dirs.begin(), search_dirs.end());
    auto& needs = walk.needs[object.path];
    for (const auto& soname : info.needed) {
      if (IsBaseCLibrary(soname)) continue;
      if (auto known = found.find(soname); known != found.end()) {
        needs.push_back(known->second.path);
        continue;
      }
      std::optional<std::string> hit;
      for (const auto& dir : dirs) {
        auto real = fs.RealPath(dir + "/" + soname);
        if (!real.ok()) continue;
        auto lib = fs.ReadFile(*real);
        if (!lib.ok() || !LooksLikeElf(*lib)) continue;
        auto lib_info = ParseElf(*lib, *real);
        if (lib_info.ok() && lib_info->arch == walk.arch) {
          hit = *real;
          break;
        }
      }
      if (!hit) {
        std::string why = object.path + " needs " + soname + ", which is in none of " +
                          Join(dirs, ", ") + "; install the package that provides it";
        if (!tolerate_missing) return Error::NotFound(why);
        walk.missing.emplace(object.path, why);
        continue;
      }
      found[soname] = {soname, *hit, object.path};
      needs.push_back(*hit);
      queue.push_back({*hit, object.path});
    }
  }
  for (auto& [name, lib] : found) walk.libraries.push_back(lib);
  walk.glibc_versions.assign(glibc.begin(), glibc.end());
  return walk;
}

std::string WhyUnloadable(const DependencyWalk& walk, const std::string& object) {
  std::set<std::string> seen;
  std::deque<std::string> queue = {object};
  while (!queue.empty()) {
    std::string at = queue.front();
    queue.pop_front();
    if (!seen.insert(at).second) continue;
    if (auto missing = walk.missing.find(at); missing != walk.missing.end()) return missing->second;
    if (auto needs = walk.needs.find(at); needs != walk.needs.end()) {
      queue.insert(queue.end(), needs->second.begin(), needs->second.end());
    }
  }
  return "";
}

}  // namespace skydb::bundle
