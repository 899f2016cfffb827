#include "cli/cli.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/command.h"

extern char** environ;

namespace skydb::cli {

Result<Config> CommandContext::LoadConfig() const {
  ConfigInputs inputs;
  if (!globals.config_file.empty()) {
    inputs.file = globals.config_file;
  } else if (const char* file = std::getenv("SKYDB_CONFIG"); file != nullptr && *file != '\0') {
    inputs.file = file;
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
      return Error::InvalidArgument("--set " + set +
                                    ": expected key=value, e.g. --set "
                                    "store.durability=async");
    }
    inputs.flags.emplace_back(set.substr(0, eq), set.substr(eq + 1));
  }
  for (const auto& flag : flag_values) inputs.flags.push_back(flag);
  return skydb::LoadConfig(inputs);
}

void PrintError(const std::string& message) {
  size_t at = 0;
  do {
    size_t end = message.find('\n', at);
    if (end == std::string::npos) end = message.size();
    std::fprintf(stderr, "skydb: %.*s\n", static_cast<int>(end - at), message.data() + at);
    at = end + 1;
  } while (at < message.size());
}

int ExitUsage(const std::string& what) {
  PrintError(what);
  return kExitUsage;
}

std::optional<Config> CommandContext::LoadConfigOrPrint() const {
  auto config = LoadConfig();
  if (config.ok()) return std::move(config).value();
  PrintError(config.error().message);
  return std::nullopt;
}

namespace {

// The command given deepest on the line ("skydb config"), or the app itself.
const CLI::App& DeepestCommand(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return *at;
}

// When a required command is missing because the word in its place is none of them, names the
// word and the commands there are; CLI11 would only say "A subcommand is required". False when
// no command word was given at all.
bool PrintUnknownCommand(const CLI::App& app) {
  std::string word;
  for (const std::string& arg : app.remaining(true)) {
    if (!arg.empty() && arg.front() != '-') {
      word = arg;
      break;
    }
  }
  if (word.empty()) return false;
  const CLI::App& parent = DeepestCommand(app);
  std::string names;
  for (const CLI::App* command : parent.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  std::string where = &parent == &app ? "" : " for '" + parent.get_name() + "'";
  std::fprintf(stderr, "skydb: unknown command '%s'%s; commands: %s (--help explains them)\n",
               word.c_str(), where.c_str(), names.c_str());
  return true;
}

}  // namespace

int Main(int argc, char** argv, Env& env) {
  CLI::App app{"skydb: embedded-PostgreSQL supervisor and session store for Sky.Live"};
  app.require_subcommand(1);
  // Every command made after this inherits it: an option a command does not know (--config,
  // --set) falls through to the global ones, so they may follow the command too.
  app.fallthrough();
  CommandContext ctx(env);
  app.add_option("--config", ctx.globals.config_file,
                 "configuration file (default $SKYDB_CONFIG, else /etc/skydb/skydb.toml)");
  // One key=value per --set, so the word after it is the command again ("--set k=v frob").
  app.add_option("--set", ctx.globals.sets,
                 "override one config key, e.g. --set store.durability=async (repeatable)")
      ->allow_extra_args(false);
  AddVersionCommand(app, ctx);
  AddConfigCommand(app, ctx);
  AddTuneCommand(app, ctx);
  AddDoctorCommand(app, ctx);
  AddServeCommands(app, ctx);
  AddStatusCommand(app, ctx);
  AddPsqlCommand(app, ctx);
  AddEnvCommand(app, ctx);
  AddRunCommand(app, ctx);
  AddBundleCommand(app, ctx);
  AddUpgradeCommand(app, ctx);
  AddBackupCommands(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    if (PrintUnknownCommand(app)) return kExitUsage;
    app.exit(e);
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  return ctx.exit_code;
}

}  // namespace skydb::cli
