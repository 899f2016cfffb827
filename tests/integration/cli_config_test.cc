// `skydb config ...` and configuration errors, through the built binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_support.h"

namespace skydb::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kShippedConfig = std::string(SKYDB_SOURCE_DIR) + "/conf/skydb.toml";

TEST(CliConfigTest, CheckAcceptsTheShippedFile) {
  CliRun run = RunSkydb({"config", "check", "--config", kShippedConfig});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "ok: " + kShippedConfig + "\n");
}

TEST(CliConfigTest, CheckAcceptsTheFileBeforeTheCommandOrFromTheEnvironment) {
  TempDir tmp;
  std::string file = tmp.Write("skydb.toml", "[log]\nlevel = \"warn\"\n");
  CliRun before = RunSkydb({"--config", file, "config", "check"});
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, "ok: " + file + "\n");
  CliRun from_env = RunSkydb({"config", "check"}, {{"SKYDB_CONFIG", file}});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(from_env.out, "ok: " + file + "\n");
}

struct BadFileCase {
  std::string name;
  std::string toml;
  std::string line;                  // ":N" after the path
  std::vector<std::string> expects;  // key and what is accepted
};

TEST(CliConfigTest, BadFilesExitTwoNamingFileLineAndKey) {
  const BadFileCase cases[] = {
      {"unknown key",
       "[log]\nlevel = \"info\"\nlevle = \"debug\"\n",
       ":3:",
       {"unknown key 'log.levle'", "known keys in [log]: level, format"}},
      {"wrong type",
       "[host]\ncores = \"four\"\n",
       ":2:",
       {"host.cores = \"four\" must be an integer", "accepted: 0..4096 (0 = detect)"}},
      {"out of range",
       "[supervisor]\n\nmax_crashes = 0\n",
       ":3:",
       {"supervisor.max_crashes = 0 is out of range", "accepted: 1..1000"}},
      {"malformed", "[log]\nlevel = = \"info\"\n", ":2:", {"malformed TOML"}},
  };
  TempDir tmp;
  for (const BadFileCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string file = tmp.Write("bad.toml", c.toml);
    CliRun run = RunSkydb({"config", "check", "--config", file});
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_EQ(run.out, "");
    EXPECT_THAT(run.err, StartsWith("skydb: " + file + c.line));
    for (const std::string& expect : c.expects) EXPECT_THAT(run.err, HasSubstr(expect));
  }
}

// Every error of a file in one run, one line each, in the file's order, whatever kind: a value
// out of range, an unknown key, a wrong type, a bad setting (they used to come one per run).
TEST(CliConfigTest, EveryErrorOfAFileInOneRunInFileOrder) {
  TempDir tmp;
  std::string file = tmp.Write("bad.toml",
                               "[supervisor]\nmax_crashes = 0\n[log]\nlevle = \"debug\"\n"
                               "[host]\ncores = \"four\"\n[store]\ndurability = \"never\"\n"
                               "[postgres.settings]\nwork_mem = [1]\n");
  CliRun run = RunSkydb({"config", "check", "--config", file});
  EXPECT_EQ(run.exit_code, 2);
  std::vector<std::string> lines;
  for (size_t at = 0, end; at < run.err.size(); at = end + 1) {
    end = run.err.find('\n', at);
    if (end == std::string::npos) end = run.err.size();
    lines.push_back(run.err.substr(at, end - at));
  }
  ASSERT_EQ(lines.size(), 5u) << run.err;
  const char* expect[] = {":2: supervisor.max_crashes = 0 is out of range",
                          ":4: unknown key 'log.levle'",
                          ":6: host.cores = \"four\" must be an integer",
                          ":8: store.durability = \"never\"", ":10: postgres.settings.work_mem"};
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_THAT(lines[i], StartsWith("skydb: " + file + expect[i])) << run.err;
  }
}

TEST(CliConfigTest, UnreadableAndMissingFilesExitTwo) {
  TempDir tmp;  // a directory is unreadable as a file, even for root
  CliRun unreadable = RunSkydb({"config", "check", "--config", tmp.path()});
  EXPECT_EQ(unreadable.exit_code, 2);
  EXPECT_EQ(unreadable.err,
            "skydb: " + tmp.path() + ": cannot read the config file: Is a directory\n");
  CliRun missing = RunSkydb({"config", "show", "--config", tmp.path() + "/absent.toml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("absent.toml: cannot read the config file: No such file"));
}

TEST(CliConfigTest, EnvironmentOverrideIsVisibleInShow) {
  TempDir tmp;
  std::string file = tmp.Write("skydb.toml", "[log]\nlevel = \"warn\"\n[host]\ncores = 2\n");
  CliRun run = RunSkydb({"config", "show", "--config", file}, {{"SKYDB_LOG_LEVEL", "debug"}});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("level = \"debug\"  # env SKYDB_LOG_LEVEL\n"));
  EXPECT_THAT(run.out, HasSubstr("cores = 2  # file " + file + ":4\n"));
  EXPECT_THAT(run.out, HasSubstr("format = \"auto\"  # default\n"));
}

TEST(CliConfigTest, SetOverridesEnvironmentAndFile) {
  TempDir tmp;
  std::string file = tmp.Write("skydb.toml", "[host]\ncores = 2\n");
  CliRun run = RunSkydb({"--set", "host.cores=3", "config", "show", "--config", file, "--set",
                         "postgres.settings.work_mem=64MB"},
                        {{"SKYDB_HOST_CORES", "4"}});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("cores = 3  # flag --set host.cores\n"));
  EXPECT_THAT(run.out, HasSubstr("[postgres.settings]\nwork_mem = \"64MB\"  # flag --set "
                                 "postgres.settings.work_mem\n"));
}

TEST(CliConfigTest, BadEnvironmentAndFlagsExitTwo) {
  CliRun env = RunSkydb({"config", "check"}, {{"SKYDB_HOST_CORES", "abc"}});
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_EQ(env.err,
            "skydb: SKYDB_HOST_CORES=abc: host.cores must be an integer; accepted: "
            "0..4096 (0 = detect)\n");
  CliRun typo = RunSkydb({"config", "check"}, {{"SKYDB_LOG_LEVLE", "debug"}});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.err, HasSubstr("did you mean SKYDB_LOG_LEVEL?"));
  CliRun unknown = RunSkydb({"--set", "store.durabilty=async", "config", "check"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, StartsWith("skydb: --set store.durabilty=async: unknown key "
                                      "'store.durabilty'"));
  CliRun no_equals = RunSkydb({"config", "check", "--set", "log.level"});
  EXPECT_EQ(no_equals.exit_code, 2);
  EXPECT_THAT(no_equals.err, HasSubstr("expected key=value"));
}

TEST(CliConfigTest, KeysListsEveryKey) {
  CliRun run = RunSkydb({"config", "keys"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  for (const char* name :
       {"data_dir", "log.level", "host.ram", "postgres.settings", "supervisor.max_crashes"}) {
    EXPECT_THAT(run.out, HasSubstr(std::string(name) + "  (")) << name;
  }
  EXPECT_THAT(run.out, HasSubstr("SKY_POSTGRES_BIN"));
}

// --config and --set are global options, read before or after any command (and its own
// subcommand), as docs/configuration.md says.
TEST(CliGlobalOptionsTest, ConfigAndSetWorkAfterEveryCommand) {
  const std::vector<std::string> host = {"--set", "host.ram=1975MiB", "--set", "host.cores=2"};
  std::vector<std::string> before = host;
  before.insert(before.end(), {"tune", "--format", "conf"});
  std::vector<std::string> after = {"tune", "--format", "conf"};
  after.insert(after.end(), host.begin(), host.end());
  CliRun first = RunSkydb(before);
  CliRun last = RunSkydb(after);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(last.out, first.out);

  // Each command that loads the configuration reads a --config given after it: the missing
  // file is what stops it, not an unexpected argument.
  TempDir tmp;
  std::string absent = tmp.path() + "/absent.toml";
  const std::vector<std::vector<std::string>> commands = {
      {"tune"}, {"doctor"}, {"status"}, {"psql"}, {"serve"}, {"dev"}, {"config", "check"}};
  for (std::vector<std::string> args : commands) {
    SCOPED_TRACE(args.front());
    args.insert(args.end(), {"--config", absent});
    CliRun run = RunSkydb(args);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, HasSubstr("absent.toml: cannot read the config file")) << run.err;
  }
}

TEST(CliGlobalOptionsTest, VersionFlagIsTheVersionCommand) {
  CliRun command = RunSkydb({"version"});
  CliRun flag = RunSkydb({"--version"});
  EXPECT_EQ(command.exit_code, 0) << command.err;
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_THAT(command.out, StartsWith("skydb "));
  EXPECT_EQ(flag.out, command.out);
}

// A mistyped option is named with the likeliest meant one, before or after the command; it
// used to be "The following arguments were not expected" or "A subcommand is required".
TEST(CliGlobalOptionsTest, MistypedOptionIsNamed) {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{"--confg", "/etc/skydb/x.toml", "status"},
            "skydb: unknown option '--confg' (did you mean '--config'?); skydb status --help"},
           {{"--sett", "log.level=info"}, "skydb: unknown option '--sett' (did you mean '--set'?)"},
           {{"--confg=/x"}, "skydb: unknown option '--confg' (did you mean '--config'?)"},
           {{"status", "--data-dirr", "/x"},
            "skydb: unknown option '--data-dirr' (did you mean '--data-dir'?)"},
           {{"tune", "--frobnicate"}, "skydb: unknown option '--frobnicate'; skydb tune --help"}}) {
    CliRun run = RunSkydb(c.args);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_THAT(run.err, StartsWith(c.expect)) << run.err;
    EXPECT_EQ(run.out, "");
  }
}

TEST(CliGlobalOptionsTest, UnknownCommandIsNamed) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"frob"}, {"--set", "log.level=warn", "frob", "--x"}}) {
    CliRun run = RunSkydb(args);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_THAT(run.err, StartsWith("skydb: unknown command 'frob'")) << run.err;
    EXPECT_THAT(run.err, HasSubstr("serve")) << run.err;  // the commands there are
  }
  CliRun nested = RunSkydb({"config", "frob"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_THAT(nested.err, StartsWith("skydb: unknown command 'frob' for 'config'; commands: "
                                     "check, show, keys"))
      << nested.err;
  CliRun none = RunSkydb({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("A subcommand is required")) << none.err;
}

}  // namespace
}  // namespace skydb::testing
