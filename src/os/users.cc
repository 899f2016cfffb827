#include <grp.h>
#include <pwd.h>
#include <sched.h>

#include <cerrno>
#include <vector>

#include "skydb/env.h"

namespace skydb {

Result<RunAs> LookupUser(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  int rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
  if (rc != 0) return ErrnoError("cannot look up user '" + name + "'", rc);
  if (found == nullptr) {
    return Error::NotFound("user '" + name + "' does not exist; create it (useradd --system " +
                           name + ") or name another with run_as_user / --user");
  }
  return RunAs{name, pw.pw_uid, pw.pw_gid, pw.pw_dir ? pw.pw_dir : ""};
}

Result<NamedGroup> LookupGroup(const std::string& name) {
  struct group gr {};
  struct group* found = nullptr;
  std::vector<char> buf(16384);
  int rc = ::getgrnam_r(name.c_str(), &gr, buf.data(), buf.size(), &found);
  if (rc != 0) return ErrnoError("cannot look up group '" + name + "'", rc);
  if (found == nullptr) {
    return Error::NotFound("group '" + name + "' does not exist; create it (groupadd " + name +
                           ") or name another");
  }
  return NamedGroup{name, gr.gr_gid};
}

Result<NamedGroup> LookupGroupByGid(gid_t gid) {
  struct group gr {};
  struct group* found = nullptr;
  std::vector<char> buf(16384);
  int rc = ::getgrgid_r(gid, &gr, buf.data(), buf.size(), &found);
  if (rc != 0) return ErrnoError("cannot look up gid " + std::to_string(gid), rc);
  if (found == nullptr) return Error::NotFound("gid " + std::to_string(gid) + " has no group");
  return NamedGroup{gr.gr_name, gr.gr_gid};
}

int SchedAffinityCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace skydb
