// `skydb serve --embed --data-dir DIR`, `skydb serve --database-url URL`, `skydb serve --store
// memory` and `skydb dev [--data-dir DIR]`: run the daemon.
#include <stdlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <utility>

#include "cli/command.h"
#include "daemon/daemon.h"

namespace skydb::cli {
namespace {

struct ServeFlags {
  bool embed = false;
  std::string store;
  std::string database_url;
  std::string data_dir;
  std::string user;
  bool exit_with_parent = false;
  bool ephemeral = false;
  int parent_pid = 0;
  int ready_fd = -1;
};

void AddDirAndUser(CLI::App* cmd, ServeFlags& flags, const std::string& dir_help) {
  cmd->add_option("--data-dir", flags.data_dir, dir_help);
  cmd->add_option("--user", flags.user,
                  "when run as root: the unprivileged user that owns DIR and runs PostgreSQL");
}

bool ParsePid(const char* text, int& pid) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0 || value > INT32_MAX) return false;
  pid = static_cast<int>(value);
  return true;
}

// Child mode (an app, a test harness, starts skydb): the HTTP endpoints stay off unless
// http.port or http.listen was set, so that several instances on one host never race for the
// default port (the ready line then says "http": null).
// --ephemeral: what a throwaway instance trades away for speed (it is deleted at stop, so
// crash safety buys nothing); a setting the user pinned wins.
constexpr std::pair<const char*, const char*> kEphemeralSettings[] = {
    {"fsync", "off"}, {"synchronous_commit", "off"}, {"full_page_writes", "off"}};

Result<Config> LoadServeConfig(const CommandContext& ctx, bool child_mode, bool ephemeral) {
  SKYDB_ASSIGN_OR_RETURN(LoadedConfig loaded, ctx.LoadConfigWithOrigins());
  if (child_mode && loaded.OriginOf("http.port").source == ConfigSource::kDefault &&
      loaded.OriginOf("http.listen").source == ConfigSource::kDefault) {
    loaded.config.http.port = 0;
  }
  if (ephemeral) {
    for (const auto& [name, value] : kEphemeralSettings) {
      loaded.config.postgres.settings.emplace(name, value);
    }
  }
  return std::move(loaded.config);
}

// A new directory for an ephemeral instance: $TMPDIR (else /tmp)/skydb-ephemeral-XXXXXX, 0700.
Result<std::string> MakeEphemeralDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/skydb-ephemeral-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    return ErrnoError("--ephemeral: cannot make a directory like " + templ, errno);
  }
  return templ;
}

constexpr char kModes[] =
    "--embed (a private PostgreSQL cluster under --data-dir), --database-url URL (an external "
    "PostgreSQL, also store.database_url) or --store memory (no PostgreSQL; nothing survives a "
    "restart)";

int RunServeIn(CommandContext& ctx, const ServeFlags& flags, Profile profile);
int RunEphemeral(CommandContext& ctx, const ServeFlags& flags);

int RunServe(CommandContext& ctx, const ServeFlags& flags, Profile profile) {
  if (flags.ephemeral) return RunEphemeral(ctx, flags);
  return RunServeIn(ctx, flags, profile);
}

int RunServeIn(CommandContext& ctx, const ServeFlags& flags, Profile profile) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  if (!flags.user.empty()) ctx.flag_values.emplace_back("run_as_user", flags.user);
  if (!flags.store.empty()) ctx.flag_values.emplace_back("store.kind", flags.store);
  if (!flags.database_url.empty()) {
    ctx.flag_values.emplace_back("store.database_url", flags.database_url);
  }
  const bool child_mode = flags.exit_with_parent || flags.ready_fd != -1 || flags.ephemeral;
  auto config = LoadServeConfig(ctx, child_mode, flags.ephemeral);
  if (!config.ok()) return ExitUsage(config.error().message);
  if (flags.parent_pid != 0 && !flags.exit_with_parent) {
    return ExitUsage("--parent-pid names the parent --exit-with-parent watches; add that flag");
  }
  int parent_pid = flags.parent_pid;
  if (const char* env = std::getenv("SKYDB_PARENT_PID"); env != nullptr) {
    if (parent_pid == 0 && flags.exit_with_parent && !ParsePid(env, parent_pid)) {
      return ExitUsage(std::string("SKYDB_PARENT_PID=") + env + " is not a process id");
    }
    ::unsetenv("SKYDB_PARENT_PID");  // the app skydb starts, and PostgreSQL, must not inherit it
  }
  bool external = !config->store.database_url.empty();
  bool memory = config->store.kind == StoreKind::kMemory;
  if (profile == Profile::kDev && external) {
    return ExitUsage(
        "skydb dev runs a private cluster; store.database_url is set (unset it, or "
        "use skydb serve --database-url)");
  }
  const bool embed = flags.embed || (flags.ephemeral && !external && !memory);
  if (profile != Profile::kDev && embed + external + memory != 1) {
    return ExitUsage(std::string(embed + external + memory == 0 ? "serve needs one of "
                                                                : "serve takes only one of ") +
                     kModes);
  }
  daemon::DaemonOptions options;
  options.config = std::move(config).value();
  options.profile = profile;
  options.reload_config = [&ctx, child_mode, ephemeral = flags.ephemeral] {
    return LoadServeConfig(ctx, child_mode, ephemeral);
  };
  options.exit_with_parent = flags.exit_with_parent;
  options.parent_pid = parent_pid;
  options.ready_fd = flags.ready_fd;
  return daemon::RunDaemon(ctx.env, options);
}

// `serve --ephemeral`: the dev profile's small settings in a new temporary data dir, removed
// once the daemon has stopped (a kill -9 leaves it: it is under $TMPDIR).
int RunEphemeral(CommandContext& ctx, const ServeFlags& flags) {
  if (!flags.data_dir.empty()) {
    return ExitUsage("--ephemeral makes its own temporary data dir; drop --data-dir");
  }
  if (!flags.database_url.empty()) {
    return ExitUsage("--ephemeral runs a private cluster (or --store memory), not --database-url");
  }
  auto dir = MakeEphemeralDir();
  if (!dir.ok()) return ExitUsage(dir.error().message);
  ServeFlags in = flags;
  in.data_dir = *dir;
  int status = RunServeIn(ctx, in, Profile::kDev);
  std::error_code ec;
  std::filesystem::remove_all(*dir, ec);
  if (ec)
    std::fprintf(stderr, "skydb: --ephemeral: cannot remove %s: %s\n", dir->c_str(),
                 ec.message().c_str());
  return status;
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
  serve->add_option("--database-url", serve_flags->database_url,
                    "an external PostgreSQL (libpq URI or keyword string, several hosts "
                    "allowed): no private cluster; coherence shared (docs/scaling.md)");
  serve->add_flag("--exit-with-parent", serve_flags->exit_with_parent,
                  "child mode: stop in order (drain, fast stop) when the parent process dies, "
                  "even by kill -9");
  serve->add_flag("--ephemeral", serve_flags->ephemeral,
                  "test mode, for an app's test suite: a private cluster in a new temporary data "
                  "dir ($TMPDIR, else /tmp) removed at stop, fsync off, the dev profile's small "
                  "settings, HTTP off; --ready-fd says where it is");
  serve
      ->add_option("--parent-pid", serve_flags->parent_pid,
                   "child mode: the parent's own pid (the app passes its getpid()), so that a "
                   "parent that dies while skydb starts is never missed (also "
                   "SKYDB_PARENT_PID); default getppid()")
      ->check(CLI::PositiveNumber);
  serve->add_option("--ready-fd", serve_flags->ready_fd,
                    "child mode: at READY write one JSON line (database_url, store_socket, http, "
                    "pid) to this open descriptor and close it");
  serve->callback(
      [&ctx, serve_flags] { ctx.exit_code = RunServe(ctx, *serve_flags, Profile::kEmbedded); });

  auto dev_flags = std::make_shared<ServeFlags>();
  dev_flags->data_dir = ".skydb";
  CLI::App* dev = app.add_subcommand(
      "dev", "development: a private cluster with the small dev profile (default DIR .skydb)");
  AddDirAndUser(dev, *dev_flags, "data directory (default .skydb in the current directory)");
  dev->callback([&ctx, dev_flags] { ctx.exit_code = RunServe(ctx, *dev_flags, Profile::kDev); });
}

}  // namespace skydb::cli
