#include "daemon/app_access.h"

namespace skydb::daemon {
namespace {

Result<std::optional<RunAs>> AppUser(const Config& config, const std::string& service_user) {
  if (config.app.user.empty() || config.app.user == service_user) return std::optional<RunAs>();
  auto user = LookupUser(config.app.user);
  if (!user.ok()) {
    return Error::NotFound("app.user " + config.app.user + " does not exist: create it " +
                           "(useradd --system " + config.app.user + ") or set app.user");
  }
  if (user->uid == 0) {
    return Error::InvalidArgument("app.user is root: the app must run as an unprivileged user");
  }
  return std::optional<RunAs>(*user);
}

Result<std::string> ReadPassword(const FileSystem& fs, const std::string& path) {
  auto text = fs.ReadFile(path);
  if (!text.ok()) {
    return Error::Permission("cannot read app.password_file " + path + " (" + text.error().message +
                             "): the service user must be able to read it");
  }
  std::string line = text->substr(0, text->find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) {
    return Error::InvalidArgument("app.password_file " + path +
                                  " has no password on its first line; write one, or unset "
                                  "app.password_file for peer authentication");
  }
  return line;
}

}  // namespace

Result<std::optional<NamedGroup>> ResolveAppGroup(const Config& config,
                                                  const std::string& service_user) {
  if (!config.app.group.empty()) {
    auto group = LookupGroup(config.app.group);
    if (!group.ok()) {
      return Error::NotFound("app.group " + config.app.group + " does not exist: create it " +
                             "(groupadd " + config.app.group + ") or set app.group");
    }
    return std::optional<NamedGroup>(*group);
  }
  SKYDB_ASSIGN_OR_RETURN(std::optional<RunAs> user, AppUser(config, service_user));
  if (!user) return std::optional<NamedGroup>();
  SKYDB_ASSIGN_OR_RETURN(NamedGroup group, LookupGroupByGid(user->gid));
  return std::optional<NamedGroup>(group);
}

Result<AppAccess> ResolveAppAccess(const FileSystem& fs, const Config& config,
                                   const std::string& service_user) {
  for (const char* own : {"postgres", "template0", "template1"}) {
    if (config.app.database == own) {
      return Error::InvalidArgument("app.database " + config.app.database +
                                    " is one of PostgreSQL's own databases; choose another "
                                    "name (default \"app\")");
    }
  }
  if (config.app.role == service_user) {
    return Error::InvalidArgument("app.role " + config.app.role +
                                  " is the cluster's superuser role (the service user); the "
                                  "app needs a role of its own: choose another name");
  }
  AppAccess access;
  SKYDB_ASSIGN_OR_RETURN(access.user, AppUser(config, service_user));
  SKYDB_ASSIGN_OR_RETURN(access.group, ResolveAppGroup(config, service_user));
  if (!config.app.password_file.empty()) {
    SKYDB_ASSIGN_OR_RETURN(access.password, ReadPassword(fs, config.app.password_file));
  }
  return access;
}

}  // namespace skydb::daemon
