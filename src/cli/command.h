// What every command sees: the global options and a way to load the merged configuration.
// Internal to src/cli.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skydb/config.h"
#include "skydb/env.h"

namespace skydb::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct GlobalOptions {
  std::string config_file;        // --config; else $SKYDB_CONFIG; else /etc/skydb/skydb.toml
  std::vector<std::string> sets;  // --set key=value, repeatable
};

class CommandContext {
 public:
  explicit CommandContext(Env& e) : env(e) {}
  Env& env;  // the OS, for every command
  GlobalOptions globals;
  // Command-specific flags that set config keys (e.g. --data-dir → data_dir), in order.
  std::vector<std::pair<std::string, std::string>> flag_values;
  int exit_code = kExitOk;
  // `skydb psql ... -- ARGS`: ARGS, taken off the command line before parsing (psql's).
  std::vector<std::string> passthrough;

  // Merges file, environment and flags. The caller prints a failure as "skydb: <message>" and
  // exits with kExitUsage.
  Result<Config> LoadConfig() const;
  // The same, with where each value came from.
  Result<LoadedConfig> LoadConfigWithOrigins() const;
  // LoadConfig, printing a failure as "skydb: <message>"; nullopt then (exit kExitUsage).
  std::optional<Config> LoadConfigOrPrint() const;
};

// Prints "skydb: <line>" to stderr for each line of `message` (a configuration file's errors
// come one per line).
void PrintError(const std::string& message);
// PrintError(what); returns kExitUsage.
int ExitUsage(const std::string& what);
// Becomes `user` for good when root (a cluster or repository that user owns is worked on as
// it, never as root); nothing otherwise.
Status BecomeUser(Env& env, const std::string& user);

// Each command adds itself to `app`; its callback stores the exit status in ctx.exit_code.
void AddVersionCommand(CLI::App& app, CommandContext& ctx);
void AddConfigCommand(CLI::App& app, CommandContext& ctx);
void AddTuneCommand(CLI::App& app, CommandContext& ctx);
void AddDoctorCommand(CLI::App& app, CommandContext& ctx);
void AddServeCommands(CLI::App& app, CommandContext& ctx);  // serve, dev
void AddStatusCommand(CLI::App& app, CommandContext& ctx);
void AddPsqlCommand(CLI::App& app, CommandContext& ctx);
void AddEnvCommand(CLI::App& app, CommandContext& ctx);
void AddRunCommand(CLI::App& app, CommandContext& ctx);
void AddBundleCommand(CLI::App& app, CommandContext& ctx);   // bundle stage, verify, list
void AddUpgradeCommand(CLI::App& app, CommandContext& ctx);  // upgrade (skydb/upgrade.h)
void AddBackupCommands(CLI::App& app, CommandContext& ctx);  // backup, restore, archive-wal
void AddAppCommands(CLI::App& app, CommandContext& ctx);     // app add, list, remove, ...

}  // namespace skydb::cli
