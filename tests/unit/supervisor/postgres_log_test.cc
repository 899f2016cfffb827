// PostgreSQL's stderr as skydb forwards it: the level of each line, the pid it carries, the
// parts of a message that follow it, and the FATALs skydb causes itself.
#include "supervisor/postgres_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace skydb::supervisor {
namespace {

using Level = spdlog::level::level_enum;

struct Line {
  std::string text;
  bool stopping;
  Level level;
  int64_t pid;
};

// Feeds `lines` in order to one forwarder; each row says what its line must be.
void ExpectSequence(const std::vector<Line>& lines) {
  PostgresLogForwarder forwarder;
  for (const Line& line : lines) {
    PostgresLogRecord got = forwarder.Classify(line.text, line.stopping);
    EXPECT_EQ(got.level, line.level) << line.text;
    EXPECT_EQ(got.pid, line.pid) << line.text;
  }
}

TEST(PostgresLogTest, EachSeverityHasItsLevelAndThePidOfItsProcess) {
  ExpectSequence({
      {"[812] LOG:  database system is ready to accept connections", false, Level::info, 812},
      {"[813] WARNING:  there is no transaction in progress", false, Level::warn, 813},
      {"[814] ERROR:  relation \"x\" does not exist at character 15", false, Level::warn, 814},
      {"[815] FATAL:  password authentication failed for user \"app\"", false, Level::err, 815},
      {"[812] PANIC:  could not write to file \"pg_wal/xlogtemp.812\"", false, Level::err, 812},
      {"[816] DEBUG2:  checkpointer updated shared memory", false, Level::debug, 816},
      {"[817] NOTICE:  table \"t\" does not exist, skipping", false, Level::info, 817},
      {"[818] something PostgreSQL never writes", false, Level::info, 818},
  });
}

// An ERROR's STATEMENT and the lines of a statement written over several lines are the
// error's: at its level, with its pid. A DETAIL after another process's line is on its own.
TEST(PostgresLogTest, APartOfAMessageAndItsContinuationLinesHaveTheMessagesLevel) {
  ExpectSequence({
      {"[814] ERROR:  relation \"x\" does not exist at character 15", false, Level::warn, 814},
      {"[814] STATEMENT:  SELECT *", false, Level::warn, 814},
      {"\t  FROM x", false, Level::warn, 814},
      {"[815] FATAL:  could not open file \"base/1/2\": Permission denied", false, Level::err, 815},
      {"[815] HINT:  check the file's owner", false, Level::err, 815},
      {"[900] LOG:  checkpoint starting: time", false, Level::info, 900},
      {"[901] DETAIL:  a detail whose message went before", false, Level::info, 901},
  });
}

// skydb's readiness check connects while PostgreSQL starts, and after a restore while it
// replays WAL: the refusals are PostgreSQL's answer to skydb, not an error. The FATALs of a
// fast shutdown are info only while skydb stops it.
TEST(PostgresLogTest, TheFatalsSkydbCausesAreInfo) {
  ExpectSequence({
      {"[900] FATAL:  the database system is starting up", false, Level::info, 900},
      {"[901] FATAL:  the database system is not yet accepting connections", false, Level::info,
       901},
      {"[901] DETAIL:  Consistent recovery state has not been yet reached.", false, Level::info,
       901},
      {"[902] FATAL:  terminating connection due to administrator command", false, Level::err, 902},
      {"[903] FATAL:  terminating connection due to administrator command", true, Level::info, 903},
      {"[904] FATAL:  terminating autovacuum process due to administrator command", false,
       Level::err, 904},
      {"[905] FATAL:  terminating autovacuum process due to administrator command", true,
       Level::info, 905},
      {"[904] FATAL:  the database system is shutting down", true, Level::info, 904},
      {"[905] FATAL:  the database system is shutting down", false, Level::err, 905},
  });
}

// Other programs PostgreSQL runs write to the same stderr (restore_command's cp, initdb):
// no pid, leveled by what they say.
TEST(PostgresLogTest, AnotherProgramsLinesHaveNoPid) {
  ExpectSequence({
      {"cp: cannot stat '/repo/wal/00000002.history': No such file or directory", false,
       Level::info, 0},
      {"pg_ctl: FATAL: something", false, Level::err, 0},
      {"[77] LOG:  restored log file \"000000010000000000000003\" from archive", false, Level::info,
       77},
      {"[77x] LOG:  not a pid", false, Level::info, 0},
  });
}

}  // namespace
}  // namespace skydb::supervisor
