#include "cli/cli.h"

int main(int argc, char** argv) { return skydb::cli::Main(argc, argv); }
