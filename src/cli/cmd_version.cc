#include <iostream>

#include "cli/command.h"
#include "skydb/version.h"

namespace skydb::cli {

void AddVersionCommand(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("version", "print skydb's version");
  app.set_version_flag("--version", std::string("skydb ") + kVersion);
  cmd->callback([&ctx] {
    std::cout << "skydb " << kVersion << "\n";
    ctx.exit_code = kExitOk;
  });
}

}  // namespace skydb::cli
