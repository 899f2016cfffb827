// skydb's command line: parses flags, loads configuration and runs one command.
// Exit status: 0 success, 1 the command failed (or doctor found a blocker), 2 bad usage or
// configuration.
#pragma once

#include "skydb/env.h"

namespace skydb::cli {

// `env`: every OS seam the commands use (main.cc builds the real one).
int Main(int argc, char** argv, Env& env);

}  // namespace skydb::cli
