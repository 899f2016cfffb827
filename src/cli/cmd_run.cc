// `skydb run --data-dir DIR [--embed|--database-url URL] [--user NAME] -- APP [ARGS…]`: the
// app's production mode as one process tree. skydb readies PostgreSQL and the session store,
// then runs APP as its child (as app.user when started as root) with the connection contract
// (skydb/app_env.h) in its environment, and stops in order: the app first, then the store and
// PostgreSQL (src/daemon/app_runner.h). DIR defaults to $SKY_DATA_DIR, else data_dir.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/command.h"
#include "daemon/daemon.h"

namespace skydb::cli {
namespace {

struct RunFlags {
  bool embed = false;
  std::string database_url;
  std::string data_dir;
  std::string user;
  std::vector<std::string> app;
};

int RunRun(CommandContext& ctx, const RunFlags& flags) {
  if (flags.app.empty()) {
    return ExitUsage(
        "skydb run needs the app to run after --: skydb run --data-dir DIR -- APP [ARGS...]");
  }
  if (flags.embed && !flags.database_url.empty()) {
    return ExitUsage("skydb run takes only one of --embed and --database-url URL");
  }
  std::string dir = flags.data_dir;
  if (const char* env_dir = std::getenv("SKY_DATA_DIR"); dir.empty() && env_dir != nullptr) {
    dir = env_dir;
  }
  if (!dir.empty()) ctx.flag_values.emplace_back("data_dir", dir);
  if (!flags.user.empty()) ctx.flag_values.emplace_back("run_as_user", flags.user);
  if (!flags.database_url.empty()) {
    ctx.flag_values.emplace_back("store.database_url", flags.database_url);
  }
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  if (flags.embed && !config->store.database_url.empty()) {
    return ExitUsage(
        "skydb run --embed runs a private cluster, but store.database_url is set: unset "
        "it, or use --database-url");
  }
  daemon::DaemonOptions options;
  options.config = std::move(config).value();
  options.profile = Profile::kEmbedded;
  options.reload_config = [&ctx] { return ctx.LoadConfig(); };
  options.app = flags.app;
  return daemon::RunDaemon(ctx.env, options);
}

}  // namespace

void AddRunCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "run the app as skydb's child once PostgreSQL and the store are ready: skydb run "
      "--data-dir DIR -- APP [ARGS...] (docs/embedding.md)");
  cmd->add_flag("--embed", flags->embed,
                "a private PostgreSQL cluster under --data-dir (the default)");
  cmd->add_option("--database-url", flags->database_url,
                  "an external PostgreSQL instead of the private cluster");
  cmd->add_option("--data-dir", flags->data_dir,
                  "data directory (default $SKY_DATA_DIR, else config data_dir)");
  cmd->add_option("--user", flags->user,
                  "when run as root: the unprivileged user that owns DIR and runs PostgreSQL "
                  "(the app runs as app.user, by default this one)");
  cmd->add_option("app", flags->app, "the app and its arguments, after --");
  cmd->callback([&ctx, flags] { ctx.exit_code = RunRun(ctx, *flags); });
}

}  // namespace skydb::cli
