#include "cli_support.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "skydb/env.h"

namespace skydb::testing {

CliRun RunSkydb(const std::vector<std::string>& args,
                const std::map<std::string, std::optional<std::string>>& env) {
  CommandSpec spec;
  spec.argv.push_back(SKYDB_BINARY);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = env;
  // Keep the tests independent of the machine's /etc/skydb/skydb.toml and SKYDB_* variables.
  if (spec.env.count("SKYDB_CONFIG") == 0) spec.env["SKYDB_CONFIG"] = "";
  spec.timeout = std::chrono::seconds(60);
  auto result = NewRealProcessRunner()->Run(spec);
  CliRun run;
  if (!result.ok()) {
    run.err = result.error().message;
    return run;
  }
  run.exit_code = result->exit_code;
  run.out = result->out;
  run.err = result->err;
  return run;
}

TempDir::TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "skydb-test-XXXXXX").string();
  char* made = ::mkdtemp(templ.data());
  path_ = made != nullptr ? made : "";
  // A daemon started as root drops to the service user, which must reach DIR below it.
  if (!path_.empty()) ::chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  std::string full = path_ + "/" + name;
  std::ofstream(full, std::ios::binary) << contents;
  return full;
}

}  // namespace skydb::testing
