// placeholder: filled by its owner
#include "cli/command.h"
namespace skydb::cli {
void AddConfigCommand(CLI::App&, CommandContext&) {}
}  // namespace skydb::cli
