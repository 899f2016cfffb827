// skydb's command line: parses flags, loads configuration and runs one command.
// Exit status: 0 success, 1 the command failed (or doctor found a blocker), 2 bad usage or
// configuration.
#pragma once

namespace skydb::cli {

int Main(int argc, char** argv);

}  // namespace skydb::cli
