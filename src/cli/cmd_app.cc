// `skydb app add NAME | list | remove NAME --keep-data|--drop-data | rotate-password NAME`
// (docs/apps.md): the apps of the private cluster under --data-dir, each a role and a database of
// its own (supervisor/app_admin.h).
//
// On a running daemon: through PostgreSQL as the cluster's superuser over the private socket, as
// `skydb psql` reaches it, after becoming the cluster user when run as root (pg_hba.conf is that
// user's file). On a stopped data dir: the cluster is started for the change and stopped again,
// with DIR/skydb.lock held throughout (daemon/cluster_task.h). A password appears once, on
// stdout, inside DATABASE_URL; never in a log line or an error.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/published_env.h"
#include "daemon/cluster_task.h"
#include "skydb/app_env.h"
#include "skydb/log.h"
#include "skydb/status_file.h"
#include "supervisor/app_admin.h"
#include "supervisor/data_dir.h"

namespace skydb::cli {
namespace {

enum class AppCommand { kAdd, kList, kRemove, kRotate };

struct AppFlags {
  std::string data_dir;
  std::string user;
  std::string name;
  std::string os_user;
  int connections = 8;
  bool keep_data = false;
  bool drop_data = false;
  bool json = false;
};

// Where the app connects: the data dir's sockets, as the running daemon published them.
struct Contract {
  std::string socket_dir;
  std::string redis_url;
};

int AppFail(const std::string& message) {
  std::fprintf(stderr, "skydb app: %s\n", message.c_str());
  return kExitFailure;
}

void PrintCredentials(const supervisor::AppCredentials& made, const Contract& contract,
                      bool with_store) {
  const auto& app = made.app;
  std::string url =
      made.password.empty()
          ? EmbeddedDatabaseUrl(contract.socket_dir, app.database, app.role)
          : EmbeddedDatabaseUrl(contract.socket_dir, app.database, app.role, made.password);
  AppEnvironment env;
  env.vars.emplace_back("DATABASE_URL", url);
  std::string redis_url = contract.redis_url;
  // The app's store user and its password (hex digits and [a-z0-9_]: nothing to escape).
  size_t scheme = redis_url.find("://");
  if (!made.store_password.empty() && scheme != std::string::npos) {
    redis_url.insert(scheme + 3, app.name + ":" + made.store_password + "@");
  }
  if (with_store) env.vars.emplace_back("REDIS_URL", redis_url);
  std::fputs(RenderSystemdEnvironment(env).c_str(), stdout);
}

std::string Row(const schema::AppRow& app) {
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-20s %-20s %-14s %-9s %11d  %s%s", app.name.c_str(),
                app.role.c_str(), app.database.c_str(), schema::AppAuthName(app.auth),
                schema::AppStateName(app.state), app.connection_limit,
                app.created_at.substr(0, 19).c_str(),
                app.configured ? "  (configured: [app])" : "");
  return line;
}

Status PrintList(supervisor::AppAdmin& admin, bool json) {
  SKYDB_ASSIGN_OR_RETURN(auto apps, admin.List());
  SKYDB_ASSIGN_OR_RETURN(auto budget, admin.Budget());
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& app : apps) {
      out.push_back({{"name", app.name},
                     {"role", app.role},
                     {"database", app.database},
                     {"auth", schema::AppAuthName(app.auth)},
                     {"os_users", app.os_users},
                     {"state", schema::AppStateName(app.state)},
                     {"connection_limit", app.connection_limit},
                     {"configured", app.configured},
                     {"origin", app.origin},
                     {"created_at", app.created_at}});
    }
    std::printf("%s\n", out.dump().c_str());
    return Ok();
  }
  std::printf("%-20s %-20s %-20s %-14s %-9s %11s  %s\n", "NAME", "ROLE", "DATABASE", "AUTH",
              "STATE", "CONNECTIONS", "CREATED");
  for (const auto& app : apps) std::printf("%s\n", Row(app).c_str());
  std::printf(
      "connections: max_connections %d = %d reserved + %d skydb's store + %d apps' limits + %d "
      "free\n",
      budget.max_connections, budget.reserved, budget.skydb, budget.apps, budget.free());
  return Ok();
}

Status RunCommand(AppCommand command, const AppFlags& flags, supervisor::AppAdmin& admin,
                  const Contract& contract) {
  switch (command) {
    case AppCommand::kList:
      return PrintList(admin, flags.json);
    case AppCommand::kAdd: {
      supervisor::NewApp request{flags.name, flags.os_user, flags.connections};
      SKYDB_ASSIGN_OR_RETURN(auto made, admin.Add(request));
      PrintCredentials(made, contract, true);
      std::fprintf(stderr,
                   "skydb app: added %s: role %s, database %s, %s, connection limit %d%s. In "
                   "the session store at REDIS_URL it is user %s: its keys and channels are "
                   "those that start with \"%s:\".\n",
                   made.app.name.c_str(), made.app.role.c_str(), made.app.database.c_str(),
                   schema::AppAuthName(made.app.auth), made.app.connection_limit,
                   made.password.empty()
                       ? (", peer-mapped to OS user " + flags.os_user).c_str()
                       : "; its password is in DATABASE_URL, shown this once: skydb keeps only "
                         "PostgreSQL's verifier of it",
                   made.app.name.c_str(), made.app.name.c_str());
      return Ok();
    }
    case AppCommand::kRemove:
      SKYDB_RETURN_IF_ERROR(admin.Remove(flags.name, flags.keep_data));
      std::fprintf(stderr, "skydb app: removed %s%s\n", flags.name.c_str(),
                   flags.keep_data ? "; its database and role are kept, and the role may not log "
                                     "in (skydb app remove NAME --drop-data deletes them)"
                                   : " with its database and role");
      return Ok();
    case AppCommand::kRotate: {
      SKYDB_ASSIGN_OR_RETURN(auto rotated, admin.RotatePassword(flags.name));
      PrintCredentials(rotated, contract, true);
      std::fprintf(stderr,
                   "skydb app: %s has new passwords (in DATABASE_URL and REDIS_URL); the old "
                   "ones fail from the next login on, and connections already open stay open\n",
                   flags.name.c_str());
      return Ok();
    }
  }
  return Ok();
}

Status OnCluster(AppCommand command, const AppFlags& flags, const std::string& conninfo,
                 AccessTarget access, const Contract& contract) {
  SKYDB_ASSIGN_OR_RETURN(auto admin, supervisor::OpenAppAdmin(conninfo, std::move(access)));
  return RunCommand(command, flags, *admin, contract);
}

AccessTarget FilesOf(Env& env, const std::string& pgdata, const std::string& superuser) {
  AccessTarget access;
  access.pgdata = pgdata;
  access.superuser = superuser;
  access.read = [&env](const std::string& path) { return env.fs->ReadFile(path); };
  access.write = [&env](const std::string& path, const std::string& contents) {
    return env.fs->WriteFileAtomic(path, contents, 0600);
  };
  return access;
}

int OnRunningDaemon(CommandContext& ctx, AppCommand command, const AppFlags& flags,
                    const supervisor::DataDirLayout& layout, Contract contract) {
  Env& env = ctx.env;
  auto text = env.fs->ReadFile(layout.status_file);
  auto record = text.ok() ? supervisor::ParseStatusJson(*text)
                          : Result<supervisor::StatusRecord>(text.error());
  if (!record.ok() || record->state != "ready") {
    return AppFail("the daemon on " + layout.root + " is not ready (" +
                   (record.ok() ? record->state : std::string("no status file")) +
                   "); try again once skydb status says it is");
  }
  if (auto became = BecomeUser(env, record->superuser); !became.ok()) {
    return AppFail(became.error().message);
  }
  contract.socket_dir = record->socket_dir;
  Status done = OnCluster(command, flags,
                          supervisor::ClusterConnInfo(record->socket_dir, record->port,
                                                      record->superuser, record->database),
                          FilesOf(env, layout.pgdata, record->superuser), contract);
  return done.ok() ? kExitOk : AppFail(done.error().message);
}

int OnStoppedDir(CommandContext& ctx, AppCommand command, const AppFlags& flags, Config config,
                 const supervisor::DataDirLayout& layout, Contract contract) {
  Env& env = ctx.env;
  if (env.host->EffectiveUid() == 0 && config.run_as_user.empty()) {
    // The cluster's owner: what the daemon drops to (serve --user) and PostgreSQL runs as.
    auto owner = env.fs->Stat(layout.pgdata);
    auto user = owner.ok() ? LookupUserByUid(owner->uid) : Result<RunAs>(owner.error());
    if (!user.ok() || user->uid == 0) {
      return AppFail("cannot tell whose cluster " + layout.pgdata + " is; give --user USER");
    }
    config.run_as_user = user->name;
  }
  std::fprintf(stderr, "skydb app: no daemon runs on %s; starting its cluster for this change\n",
               layout.root.c_str());
  Status done =
      daemon::RunOnStoppedCluster(env, config, [&](const daemon::ClusterSession& session) {
        return OnCluster(command, flags, session.conninfo,
                         FilesOf(env, session.pgdata, session.superuser), contract);
      });
  return done.ok() ? kExitOk : AppFail(done.error().message);
}

int RunApp(CommandContext& ctx, AppCommand command, const AppFlags& flags) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  if (!flags.user.empty()) ctx.flag_values.emplace_back("run_as_user", flags.user);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  if (command == AppCommand::kRemove && flags.keep_data == flags.drop_data) {
    return ExitUsage("skydb app remove " + flags.name +
                     ": say what becomes of its data: --keep-data or --drop-data");
  }
  if (!config->store.database_url.empty() || config->store.kind == StoreKind::kMemory) {
    return ExitUsage(
        "skydb app manages the apps of skydb's private cluster (serve --embed); this "
        "configuration names an external database or a memory store");
  }
  // The supervisor's and the registry's own lines are for the daemon's log; here only what went
  // wrong (as an error message) and what was made (stdout, stderr).
  (void)InitLogging("warn", "text");
  Env& env = ctx.env;
  auto abs = env.fs->RealPath(config->data_dir);
  auto layout = supervisor::DataDirLayout::For(abs.ok() ? *abs : config->data_dir);
  if (!env.fs->Exists(layout.pgdata + "/PG_VERSION")) {
    return AppFail("no cluster under " + layout.root + "; start one first: skydb serve --embed " +
                   "--data-dir " + layout.root);
  }
  config->data_dir = layout.root;
  Contract contract{layout.run, "unix://" + StoreSocketPath(*config)};
  if (auto published = PublishedEnvironment(*env.fs, layout.root)) {
    if (const std::string* url = published->Find("REDIS_URL")) contract.redis_url = *url;
  }
  auto lock = ProbeDirLock(layout.lock_file);
  if (lock.ok() && lock->held) return OnRunningDaemon(ctx, command, flags, layout, contract);
  return OnStoppedDir(ctx, command, flags, *config, layout, contract);
}

CLI::App* AddOne(CLI::App& parent, CommandContext& ctx, std::shared_ptr<AppFlags> flags,
                 AppCommand command, const char* name, const char* help) {
  CLI::App* cmd = parent.add_subcommand(name, help);
  cmd->add_option("--data-dir", flags->data_dir, "data directory (config data_dir)");
  cmd->add_option("--user", flags->user,
                  "as root, on a stopped data dir: the service user (default: the cluster's "
                  "owner)");
  cmd->callback([&ctx, flags, command] { ctx.exit_code = RunApp(ctx, command, *flags); });
  return cmd;
}

}  // namespace

void AddAppCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<AppFlags>();
  CLI::App* group = app.add_subcommand(
      "app", "the apps of the private cluster, each its own role and database (docs/apps.md)");
  group->require_subcommand(1);
  CLI::App* add = AddOne(*group, ctx, flags, AppCommand::kAdd, "add",
                         "make an app: its role and database; prints DATABASE_URL and REDIS_URL");
  add->add_option("name", flags->name, "the app's name (its role and database)")->required();
  add->add_option("--os-user", flags->os_user,
                  "peer authentication for this OS user instead of a password");
  add->add_option("--connections", flags->connections, "the role's connection limit (default 8)")
      ->check(CLI::Range(1, 10000));
  CLI::App* list = AddOne(*group, ctx, flags, AppCommand::kList, "list",
                          "the apps, their state and the connections left");
  list->add_flag("--json", flags->json, "one JSON array");
  CLI::App* remove = AddOne(*group, ctx, flags, AppCommand::kRemove, "remove",
                            "remove an app: --keep-data or --drop-data, said explicitly");
  remove->add_option("name", flags->name, "the app's name")->required();
  remove->add_flag("--keep-data", flags->keep_data,
                   "keep its database and role; the role may no longer log in");
  remove->add_flag("--drop-data", flags->drop_data, "drop its database and role");
  CLI::App* rotate = AddOne(*group, ctx, flags, AppCommand::kRotate, "rotate-password",
                            "a new password for an app; prints its DATABASE_URL");
  rotate->add_option("name", flags->name, "the app's name")->required();
}

}  // namespace skydb::cli
