// `skydb serve --embed --data-dir DIR` and `skydb dev [--data-dir DIR]`: run the daemon.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "daemon/daemon.h"

namespace skydb::cli {
namespace {

struct ServeFlags {
  bool embed = false;
  std::string store;
  std::string data_dir;
  std::string user;
};

void AddDirAndUser(CLI::App* cmd, ServeFlags& flags, const std::string& dir_help) {
  cmd->add_option("--data-dir", flags.data_dir, dir_help);
  cmd->add_option("--user", flags.user,
                  "when run as root: the unprivileged user that owns DIR and runs PostgreSQL");
}

int RunServe(CommandContext& ctx, const ServeFlags& flags, Profile profile) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  if (!flags.user.empty()) ctx.flag_values.emplace_back("run_as_user", flags.user);
  if (!flags.store.empty()) ctx.flag_values.emplace_back("store.kind", flags.store);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  daemon::DaemonOptions options;
  options.config = std::move(config).value();
  options.profile = profile;
  options.reload_config = [&ctx] { return ctx.LoadConfig(); };
  return daemon::RunDaemon(options);
}

}  // namespace

void AddServeCommands(CLI::App& app, CommandContext& ctx) {
  auto serve_flags = std::make_shared<ServeFlags>();
  CLI::App* serve = app.add_subcommand(
      "serve", "run the daemon: --embed runs a private PostgreSQL cluster under --data-dir");
  serve->add_flag("--embed", serve_flags->embed,
                  "supervise a private PostgreSQL cluster under the data directory");
  AddDirAndUser(serve, *serve_flags, "data directory (config data_dir, default /var/lib/skydb)");
  serve->add_option("--store", serve_flags->store,
                    "store.kind: tiered (with --embed) or memory (no PostgreSQL; nothing "
                    "survives a restart)");
  serve->callback([&ctx, serve_flags] {
    bool memory = serve_flags->store == "memory";
    if (serve_flags->embed == memory) {
      std::fprintf(stderr, "skydb: serve needs either --embed (a private PostgreSQL cluster "
                           "under --data-dir, the durable store) or --store memory (no "
                           "PostgreSQL; nothing survives a restart); --database-url is not "
                           "available yet\n");
      ctx.exit_code = kExitUsage;
      return;
    }
    ctx.exit_code = RunServe(ctx, *serve_flags, Profile::kEmbedded);
  });

  auto dev_flags = std::make_shared<ServeFlags>();
  dev_flags->data_dir = ".skydb";
  CLI::App* dev = app.add_subcommand(
      "dev", "development: a private cluster with the small dev profile (default DIR .skydb)");
  AddDirAndUser(dev, *dev_flags, "data directory (default .skydb in the current directory)");
  dev->callback([&ctx, dev_flags] { ctx.exit_code = RunServe(ctx, *dev_flags, Profile::kDev); });
}

}  // namespace skydb::cli
