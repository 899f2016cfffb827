#include "cli/cli.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/command.h"

extern char** environ;

namespace skydb::cli {

Result<Config> CommandContext::LoadConfig() const {
  SKYDB_ASSIGN_OR_RETURN(LoadedConfig loaded, LoadConfigWithOrigins());
  return std::move(loaded.config);
}

Result<LoadedConfig> CommandContext::LoadConfigWithOrigins() const {
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
  return skydb::LoadConfigWithOrigins(inputs);
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

Status BecomeUser(Env& env, const std::string& user) {
  if (env.host->EffectiveUid() != 0) return Ok();
  if (user.empty()) {
    return Error::InvalidArgument(
        "run as root, but no service user is known; give --user USER (the cluster's owner)");
  }
  SKYDB_ASSIGN_OR_RETURN(RunAs who, LookupUser(user));
  SKYDB_ASSIGN_OR_RETURN(auto groups, GroupsToKeep(who, {}));
  return env.host->DropPrivileges(who, groups);
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

// Names the first option no command knows, the likeliest meant one and where the options are
// listed; CLI11 would say only "The following arguments were not expected", or "A subcommand
// is required" when a mistyped option took the command word as its value. False when every
// word left over is a plain word.
bool PrintUnknownOption(const CLI::App& app) {
  std::string option;
  for (const std::string& arg : app.remaining(true)) {
    if (arg.size() > 1 && arg.front() == '-') {
      option = arg.substr(0, arg.find('='));
      break;
    }
  }
  if (option.empty()) return false;
  const CLI::App& command = DeepestCommand(app);
  std::vector<std::string> known;
  for (const CLI::App* at : {&command, &app}) {
    for (const CLI::Option* o : at->get_options()) {
      for (const std::string& name : o->get_lnames()) known.push_back("--" + name);
    }
  }
  std::string guess = ClosestName(option, known);
  std::string where = &command == &app ? "skydb --help" : "skydb " + command.get_name() + " --help";
  std::fprintf(stderr, "skydb: unknown option '%s'%s; %s lists the options\n", option.c_str(),
               guess.empty() ? "" : (" (did you mean '" + guess + "'?)").c_str(), where.c_str());
  return true;
}

// The command line in parse order; for `[globals] psql ... -- ARGS`, ARGS go to `passthrough`
// instead (CLI11 would hand what follows `--` back to the top level).
std::vector<std::string> SplitPassthrough(int argc, char** argv,
                                          std::vector<std::string>& passthrough) {
  std::vector<std::string> args(argv + 1, argv + argc);
  size_t at = 0;
  while (at < args.size() && (args[at] == "--config" || args[at] == "--set")) at += 2;
  if (at >= args.size() || args[at] != "psql") return args;
  auto dashes = std::find(args.begin() + static_cast<std::ptrdiff_t>(at), args.end(), "--");
  if (dashes == args.end()) return args;
  passthrough.assign(dashes + 1, args.end());
  args.erase(dashes, args.end());
  return args;
}

}  // namespace

int Main(int argc, char** argv, Env& env) {
  CLI::App app{"skydb: embedded-PostgreSQL supervisor and session store for Sky.Live"};
  // parse() gets a vector, not argv, so the name is set here: every "Usage:" line (and the
  // manual pages help2man makes from them) reads "skydb COMMAND ...".
  app.name("skydb");
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
  AddAppCommands(app, ctx);
  std::vector<std::string> args = SplitPassthrough(argc, argv, ctx.passthrough);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  try {
    app.parse(args);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    if (PrintUnknownOption(app)) return kExitUsage;
    app.exit(e);
    return kExitUsage;
  } catch (const CLI::RequiredError& e) {
    // Whichever comes first on the line: a word in the command's place, or an option.
    auto left = app.remaining(true);
    bool word_first = !left.empty() && (left.front().empty() || left.front().front() != '-');
    if (word_first ? PrintUnknownCommand(app) : PrintUnknownOption(app)) return kExitUsage;
    app.exit(e);
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  return ctx.exit_code;
}

}  // namespace skydb::cli
