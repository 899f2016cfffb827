// `skydb env [--data-dir DIR] [--database-url URL] [--format shell|systemd|json]`: the
// connection contract (skydb/app_env.h) an app needs: what the daemon running on DIR published
// (its configuration may differ from the caller's), else from the configuration alone, so it
// works before the daemon runs and in scripts that start the app.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/published_env.h"
#include "skydb/app_env.h"

namespace skydb::cli {
namespace {

struct EnvFlags {
  std::string data_dir;
  std::string database_url;
  std::string format = "shell";
};

int RunEnv(CommandContext& ctx, const EnvFlags& flags) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  if (!flags.database_url.empty()) {
    ctx.flag_values.emplace_back("store.database_url", flags.database_url);
  }
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  Result<AppEnvironment> env = AppEnvironment{};
  auto abs = ctx.env.fs->RealPath(config->data_dir);
  if (auto published = PublishedEnvironment(*ctx.env.fs, abs.ok() ? *abs : config->data_dir);
      published && flags.database_url.empty()) {
    env = std::move(*published);
  } else {
    env = AppEnvironmentFor(*config);
  }
  if (!env.ok()) return ExitUsage(env.error().message);
  std::string text = flags.format == "json"      ? RenderJsonEnvironment(*env)
                     : flags.format == "systemd" ? RenderSystemdEnvironment(*env)
                                                 : RenderShellEnvironment(*env);
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddEnvCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<EnvFlags>();
  CLI::App* cmd = app.add_subcommand(
      "env",
      "print the environment an app needs (DATABASE_URL, SKY_DB_PATH, PG*, SKY_LIVE_STORE*, "
      "REDIS_URL) for the data directory");
  cmd->add_option("--data-dir", flags->data_dir, "data directory (config data_dir)");
  cmd->add_option("--database-url", flags->database_url,
                  "an external PostgreSQL, as skydb serve/run --database-url");
  cmd->add_option("--format", flags->format,
                  "shell (export lines), systemd (an EnvironmentFile) or json (one object)")
      ->check(CLI::IsMember({"shell", "systemd", "json"}));
  cmd->callback([&ctx, flags] { ctx.exit_code = RunEnv(ctx, *flags); });
}

}  // namespace skydb::cli
