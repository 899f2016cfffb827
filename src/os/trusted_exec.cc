// Whether root may execute a program: the rule behind "root never executes a program from a
// place the cluster user can write" (docs/security.md).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
#include <string>

#include "skydb/env.h"

namespace skydb {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's own limit on a path's symlinks

std::deque<std::string> Components(const std::string& path) {
  std::deque<std::string> out;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    if (slash > at) out.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

std::string Parent(const std::string& dir) {
  auto slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

std::string OwnerName(uid_t uid) {
  auto user = LookupUserByUid(uid);
  return user.ok() ? user->name + " (uid " + std::to_string(uid) + ")"
                   : "uid " + std::to_string(uid);
}

// Why root must not trust `path` (a directory on the way or the program itself); "" if it may.
std::string Untrusted(const std::string& path, const struct stat& st) {
  if (st.st_uid != 0) return path + " belongs to " + OwnerName(st.st_uid) + ", not root";
  if ((st.st_mode & S_IWOTH) != 0) return path + " is writable by every user";
  if ((st.st_mode & S_IWGRP) != 0) {
    return path + " is writable by its group (gid " + std::to_string(st.st_gid) + ")";
  }
  return "";
}

Error Refusal(const std::string& program, const std::string& why) {
  return Error::Permission(
      "root does not run " + program + ": " + why +
      " (root runs only programs whose file and every directory above it belong to root and "
      "are writable by no one else)");
}

}  // namespace

Status CheckRootMayExecute(const std::string& program) {
  if (program.empty() || program.front() != '/') {
    return Refusal(program, "it is not an absolute path");
  }
  struct stat st {};
  if (::lstat("/", &st) != 0) return ErrnoError("cannot inspect /", errno);
  if (std::string why = Untrusted("/", st); !why.empty()) return Refusal(program, why);
  // Walked as the kernel resolves it: every directory passed through and every symlink's
  // target. A symlink is as safe as the directory that holds it, which was checked before it.
  std::deque<std::string> todo = Components(program);
  std::string at = "/";
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      at = Parent(at);
      continue;
    }
    std::string next = at == "/" ? "/" + name : at + "/" + name;
    // Nothing there: exec fails with its own error, and nothing runs.
    if (::lstat(next.c_str(), &st) != 0) return Ok();
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) return Refusal(program, "its path has too many symlinks");
      std::string target(PATH_MAX, '\0');
      ssize_t n = ::readlink(next.c_str(), target.data(), target.size());
      if (n < 0) return ErrnoError("cannot read the symlink " + next, errno);
      target.resize(static_cast<size_t>(n));
      if (!target.empty() && target.front() == '/') at = "/";
      auto parts = Components(target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      continue;
    }
    if (std::string why = Untrusted(next, st); !why.empty()) return Refusal(program, why);
    at = next;
  }
  return Ok();
}

}  // namespace skydb
