// placeholder: filled by its owner
#include "cli/command.h"
namespace skydb::cli {
void AddStatusCommand(CLI::App&, CommandContext&) {}
}  // namespace skydb::cli
