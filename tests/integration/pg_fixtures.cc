#include "pg_fixtures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/strings.h"
#include "supervisor_support.h"

namespace skydb::testing {

std::string ReadAll(const std::string& path) {
  auto data = NewRealFileSystem()->ReadFile(path);
  return data.ok() ? *data : "";
}

CommandOutput RunCommand(const std::vector<std::string>& argv, int timeout_seconds) {
  CommandSpec spec;
  spec.argv = argv;
  spec.env["SKYDB_CONFIG"] = "";
  spec.timeout = std::chrono::seconds(timeout_seconds);
  auto ran = NewRealProcessRunner()->Run(spec);
  if (!ran.ok()) return {-1, 0, "", ran.error().message};
  return *ran;
}

std::string RelocatableTree(int major) {
  // The first call on a machine downloads (tools/pg-fixtures.sh caches outside the repo).
  auto fetched = RunCommand(
      {"/bin/bash", SKYDB_SOURCE_DIR "/tools/pg-fixtures.sh", std::to_string(major)}, 600);
  EXPECT_EQ(fetched.exit_code, 0) << fetched.err;
  auto words = Split(std::string(Trim(fetched.out)), ' ');
  if (fetched.exit_code != 0 || words.size() != 2 || words[0] != std::to_string(major)) {
    ADD_FAILURE() << "tools/pg-fixtures.sh " << major << " printed '" << fetched.out << "'";
    return "/nonexistent";
  }
  return words[1];
}

std::string TreeFor(int major) { return major == 15 ? kDebian15 : RelocatableTree(major); }

std::string StageBundle(const std::string& from, const std::string& out) {
  // zstd level 1: these tests exercise what a bundle holds, not how small it is.
  auto staged = RunCommand(
      {SKYDB_BINARY, "bundle", "stage", "--zstd-level", "1", "--from", from, "--out", out}, 300);
  return staged.exit_code == 0 ? "" : staged.out + staged.err;
}

std::string PsqlAs(const std::string& socket_dir, const std::string& role,
                   const std::string& database, const std::string& sql) {
  CommandSpec spec;
  spec.argv = {std::string(kDebian15) + "/bin/psql",
               "-X",
               "-q",
               "-h",
               socket_dir,
               "-U",
               role,
               "-d",
               database,
               "-v",
               "ON_ERROR_STOP=1",
               "-Atc",
               sql};
  if (::geteuid() == 0) {
    auto user = LookupUser(TestUser());
    if (user.ok()) spec.run_as = *user;
  }
  spec.working_dir = "/";
  spec.timeout = std::chrono::seconds(120);
  auto ran = NewRealProcessRunner()->Run(spec);
  if (!ran.ok()) return "ERROR: " + ran.error().message;
  if (ran->exit_code != 0) return "ERROR: " + ran->err;
  return std::string(Trim(ran->out));
}

bool SwitchWalAndWaitArchived(const std::string& socket_dir, const std::string& repo) {
  std::string switched = PsqlAs(socket_dir, TestUser(), "postgres", "SELECT pg_switch_wal()");
  EXPECT_EQ(switched.find("ERROR"), std::string::npos) << switched;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(repo + "/wal", ec)) {
      if (e.path().filename().string().size() == 24) return true;  // a segment's name
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace skydb::testing
