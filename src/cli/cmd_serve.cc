// placeholder: filled by its owner
#include "cli/command.h"
namespace skydb::cli {
void AddServeCommands(CLI::App&, CommandContext&) {}
}  // namespace skydb::cli
