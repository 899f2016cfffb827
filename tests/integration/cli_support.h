// Runs the built skydb binary the way a user would, for integration tests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace skydb::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs SKYDB_BINARY with `args`; `env` changes the inherited environment (nullopt unsets).
CliRun RunSkydb(const std::vector<std::string>& args,
                const std::map<std::string, std::optional<std::string>>& env = {});

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `contents` to path()/name and returns the full path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

}  // namespace skydb::testing
