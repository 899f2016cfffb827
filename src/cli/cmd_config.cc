// `skydb config check|show|keys`: validate, inspect and list the configuration.
// Exit status: 0 valid, 2 any configuration error (printed as "skydb: <message>").
#include <cstdlib>
#include <iostream>

#include "cli/command.h"

extern char** environ;

namespace skydb::cli {
namespace {

constexpr const char* kDefaultConfigPath = "/etc/skydb/skydb.toml";

// The same inputs CommandContext::LoadConfig() merges, kept here because `show` also needs the
// origin of every value, which only LoadConfigWithOrigins() reports.
Result<ConfigInputs> InputsFrom(const CommandContext& ctx) {
  ConfigInputs inputs;
  const char* env_file = std::getenv("SKYDB_CONFIG");
  if (!ctx.globals.config_file.empty()) {
    inputs.file = ctx.globals.config_file;
  } else if (env_file != nullptr && *env_file != '\0') {
    inputs.file = env_file;
  } else {
    inputs.file = kDefaultConfigPath;
    inputs.file_must_exist = false;
  }
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos) inputs.environment[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const std::string& set : ctx.globals.sets) {
    auto eq = set.find('=');
    if (eq == std::string::npos) {
      return Error::InvalidArgument("--set " + set +
                                    ": expected key=value, e.g. --set "
                                    "log.level=debug");
    }
    inputs.flags.emplace_back(set.substr(0, eq), set.substr(eq + 1));
  }
  for (const auto& flag : ctx.flag_values) inputs.flags.push_back(flag);
  return inputs;
}

Result<LoadedConfig> Load(const CommandContext& ctx) {
  SKYDB_ASSIGN_OR_RETURN(ConfigInputs inputs, InputsFrom(ctx));
  return LoadConfigWithOrigins(inputs);
}

int Fail(const Error& error) { return ExitUsage(error.message); }

int Check(const CommandContext& ctx) {
  auto loaded = Load(ctx);
  if (!loaded.ok()) return Fail(loaded.error());
  if (loaded->file.empty()) {
    std::cout << "ok: no config file (" << kDefaultConfigPath
              << " does not exist); environment and flags are valid\n";
  } else {
    std::cout << "ok: " << loaded->file << "\n";
  }
  return kExitOk;
}

int Show(const CommandContext& ctx) {
  auto loaded = Load(ctx);
  if (!loaded.ok()) return Fail(loaded.error());
  std::cout << RenderConfigToml(*loaded);
  return kExitOk;
}

}  // namespace

void AddConfigCommand(CLI::App& app, CommandContext& ctx) {
  auto* config = app.add_subcommand("config", "check, show or list skydb's configuration");
  config->require_subcommand(1);

  auto* check = config->add_subcommand(
      "check",
      "validate the file, environment and flags; print \"ok: FILE\" or the error "
      "(exit 2)");
  check->callback([&ctx] { ctx.exit_code = Check(ctx); });

  auto* show = config->add_subcommand(
      "show", "print the effective configuration as TOML, each value with where it came from");
  show->callback([&ctx] { ctx.exit_code = Show(ctx); });

  auto* keys = config->add_subcommand("keys",
                                      "list every key: type, default, accepted values, "
                                      "environment variable, flag, reload behaviour");
  keys->callback([&ctx] {
    std::cout << RenderConfigHelp();
    ctx.exit_code = kExitOk;
  });
}

}  // namespace skydb::cli
