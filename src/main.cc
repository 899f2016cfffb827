#include "cli/cli.h"
#include "env/real_env.h"

int main(int argc, char** argv) {
  skydb::RealEnv env;  // every OS seam, built once and passed down
  return skydb::cli::Main(argc, argv, env.env());
}
