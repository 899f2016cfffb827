#include "cli/cli.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/command.h"

extern char** environ;

namespace skydb::cli {

Result<Config> CommandContext::LoadConfig() const {
  ConfigInputs inputs;
  if (!globals.config_file.empty()) {
    inputs.file = globals.config_file;
  } else if (const char* env = std::getenv("SKYDB_CONFIG"); env != nullptr && *env != '\0') {
    inputs.file = env;
  } else {
    inputs.file = "/etc/skydb/skydb.toml";
    inputs.file_must_exist = false;
  }
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos) inputs.environment[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& set : globals.sets) {
    auto eq = set.find('=');
    if (eq == std::string::npos) {
      return Error::InvalidArgument("--set " + set + ": expected key=value, e.g. --set "
                                    "store.durability=async");
    }
    inputs.flags.emplace_back(set.substr(0, eq), set.substr(eq + 1));
  }
  for (const auto& flag : flag_values) inputs.flags.push_back(flag);
  return skydb::LoadConfig(inputs);
}

std::optional<Config> CommandContext::LoadConfigOrPrint() const {
  auto config = LoadConfig();
  if (config.ok()) return std::move(config).value();
  std::fprintf(stderr, "skydb: %s\n", config.error().message.c_str());
  return std::nullopt;
}

int Main(int argc, char** argv) {
  CLI::App app{"skydb: embedded-PostgreSQL supervisor and session store for Sky.Live"};
  app.require_subcommand(1);
  CommandContext ctx;
  app.add_option("--config", ctx.globals.config_file,
                 "configuration file (default $SKYDB_CONFIG, else /etc/skydb/skydb.toml)");
  app.add_option("--set", ctx.globals.sets,
                 "override one config key, e.g. --set store.durability=async (repeatable)");
  AddVersionCommand(app, ctx);
  AddConfigCommand(app, ctx);
  AddTuneCommand(app, ctx);
  AddDoctorCommand(app, ctx);
  AddServeCommands(app, ctx);
  AddStatusCommand(app, ctx);
  AddPsqlCommand(app, ctx);
  AddBundleCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  return ctx.exit_code;
}

}  // namespace skydb::cli
