// Helpers shared by the process runner, the supervisor's child spawning and the app launcher
// (src/os/app_launcher.cc), for the code between fork and exec.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "skydb/env.h"

namespace skydb {

// The parent's environment with `changes` applied (nullopt removes a variable), as "K=V".
std::vector<std::string> BuildEnvironment(
    const std::map<std::string, std::optional<std::string>>& changes);
// Null-terminated char* view of `strings` (which must outlive it).
std::vector<char*> CStringArray(std::vector<std::string>& strings);
// In a forked child: an empty signal mask and default dispositions, whatever the parent set.
void ChildResetSignals();
// Whether a child started with `run_as` would exec as root (CheckRootMayExecute applies).
bool ExecutesAsRoot(const std::optional<RunAs>& run_as);
// CheckRootMayExecute, its refusal ending with what to do.
Status CheckRootMayRun(const std::string& program);
// In a forked child: setgroups/setgid/setuid to `user`, or write errno to report_fd and _exit.
void ChildDropPrivilegesOrDie(const RunAs& user, int report_fd);

}  // namespace skydb
