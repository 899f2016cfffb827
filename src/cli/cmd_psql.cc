// `skydb psql [--data-dir DIR] [PSQL ARGS...]`: psql on the cluster's private socket, as its
// superuser role (root and the cluster user are mapped to it by pg_ident.conf). skydb's own
// options come first; from the first argument skydb does not know (or after `--`), every
// argument is psql's, `-h`, `-c` and `-d` included.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "cli/command.h"
#include "skydb/env.h"
#include "skydb/status_file.h"
#include "skydb/supervisor.h"
#include "supervisor/data_dir.h"

namespace skydb::cli {
namespace {

struct PsqlFlags {
  std::string data_dir;
  std::vector<std::string> args;
};

int RunPsql(CommandContext& ctx, const PsqlFlags& flags) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  FileSystem* fs = ctx.env.fs;
  auto abs = fs->RealPath(config->data_dir);
  auto layout = supervisor::DataDirLayout::For(abs.ok() ? *abs : config->data_dir);
  auto text = fs->ReadFile(layout.status_file);
  auto record = text.ok() ? supervisor::ParseStatusJson(*text)
                          : Result<supervisor::StatusRecord>(text.error());
  if (!record.ok() || record->bin_dir.empty()) {
    std::fprintf(stderr,
                 "skydb: no daemon has run on %s (cannot read %s); start one with "
                 "skydb serve --embed --data-dir %s\n",
                 layout.root.c_str(), layout.status_file.c_str(), layout.root.c_str());
    return kExitFailure;
  }
  std::string psql = record->bin_dir + "/psql";
  // The status file is the cluster user's to write: root runs the psql it names only when no
  // one else could have put it there.
  if (ctx.env.host->EffectiveUid() == 0) {
    if (Status trusted = CheckRootMayExecute(psql); !trusted.ok()) {
      auto owner = fs->Stat(layout.root);
      auto user = owner.ok() ? LookupUserByUid(owner->uid) : Result<RunAs>(owner.error());
      std::fprintf(stderr,
                   "skydb: %s; as the cluster's user: sudo -u %s skydb psql --data-dir %s\n",
                   trusted.error().message.c_str(), user.ok() ? user->name.c_str() : "USER",
                   layout.root.c_str());
      return kExitFailure;
    }
  }
  std::vector<std::string> argv = {psql,
                                   "-h",
                                   record->socket_dir,
                                   "-p",
                                   std::to_string(record->port),
                                   "-U",
                                   record->superuser,
                                   "-d",
                                   record->database};
  argv.insert(argv.end(), flags.args.begin(), flags.args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(cargv[0], cargv.data());
  std::fprintf(stderr, "skydb: cannot run %s: %s\n", cargv[0], std::strerror(errno));
  return kExitFailure;
}

}  // namespace

void AddPsqlCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<PsqlFlags>();
  CLI::App* cmd = app.add_subcommand(
      "psql",
      "psql on the private socket of the cluster under --data-dir; the arguments after skydb's "
      "own go to psql (skydb psql --data-dir DIR -c 'SELECT 1')");
  // psql's -h is its host: skydb's help is --help only here.
  cmd->set_help_flag("--help", "this help (psql's own: skydb psql -- --help)");
  cmd->add_option("--data-dir", flags->data_dir, "data directory (config data_dir)");
  // The global options, also after the command; they would otherwise be passed to psql.
  cmd->add_option("--config", ctx.globals.config_file, "configuration file");
  cmd->add_option("--set", ctx.globals.sets, "override one config key (repeatable)")
      ->allow_extra_args(false);
  // Everything from the first argument skydb does not know is psql's, in order (what follows
  // `--` Main hands over in ctx.passthrough).
  cmd->fallthrough(false);
  cmd->prefix_command();
  cmd->callback([&ctx, flags, cmd] {
    flags->args = cmd->remaining();
    flags->args.insert(flags->args.end(), ctx.passthrough.begin(), ctx.passthrough.end());
    ctx.exit_code = RunPsql(ctx, *flags);
  });
}

}  // namespace skydb::cli
