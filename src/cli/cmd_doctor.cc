// placeholder: filled by its owner
#include "cli/command.h"
namespace skydb::cli {
void AddDoctorCommand(CLI::App&, CommandContext&) {}
}  // namespace skydb::cli
