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

int SchedAffinityCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace skydb
