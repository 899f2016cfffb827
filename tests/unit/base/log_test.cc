// JOURNAL_STREAM detection and the three log formats, written to a real file as stderr.
#include "skydb/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/strings.h"

namespace skydb {
namespace {

TEST(JournalStreamMatchesTest, OnlyTheExactDeviceAndInode) {
  EXPECT_TRUE(JournalStreamMatches("8:12345", 8, 12345));
  EXPECT_FALSE(JournalStreamMatches("8:12345", 8, 12346));
  EXPECT_FALSE(JournalStreamMatches("9:12345", 8, 12345));
  EXPECT_FALSE(JournalStreamMatches("", 8, 12345));
  EXPECT_FALSE(JournalStreamMatches("8", 8, 12345));
  EXPECT_FALSE(JournalStreamMatches("8:", 8, 0));
  EXPECT_FALSE(JournalStreamMatches("8:12345x", 8, 12345));
  EXPECT_FALSE(JournalStreamMatches("-8:12345", 8, 12345));
}

// Points stderr at a temporary file for one test, logs, and returns what was written.
class LogFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/skydb-log-test-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    path_ = path;
    saved_stderr_ = ::dup(STDERR_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
    struct stat st {};
    ::fstat(STDERR_FILENO, &st);
    stream_ = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  void TearDown() override {
    spdlog::default_logger()->flush();
    ::dup2(saved_stderr_, STDERR_FILENO);
    ::close(saved_stderr_);
    ::unsetenv("JOURNAL_STREAM");
    ::unlink(path_.c_str());
  }
  std::string LogOneLine(const std::string& format,
                         const std::string& message = "disk almost full") {
    Status s = InitLogging("info", format);
    EXPECT_TRUE(s.ok());
    spdlog::warn("{}", message);
    return Written();
  }
  // What the default logger wrote so far.
  std::string Written() {
    spdlog::default_logger()->flush();
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::string path_;
  std::string stream_;
  int saved_stderr_ = -1;
};

TEST_F(LogFormatTest, AutoUsesJournalFormatWhenStderrIsTheJournalStream) {
  ::setenv("JOURNAL_STREAM", stream_.c_str(), 1);
  EXPECT_EQ(LogOneLine("auto"), "<4>disk almost full\n");
}

TEST_F(LogFormatTest, AutoUsesTextWhenJournalStreamNamesAnotherFile) {
  ::setenv("JOURNAL_STREAM", "1:2", 1);
  std::string line = LogOneLine("auto");
  EXPECT_NE(line.find("warning disk almost full"), std::string::npos) << line;
  EXPECT_EQ(line.rfind("20", 0), 0u) << "starts with a timestamp: " << line;
}

TEST_F(LogFormatTest, AutoUsesTextWithoutJournalStream) {
  std::string line = LogOneLine("auto");
  EXPECT_EQ(line.find('<'), std::string::npos) << line;
  EXPECT_NE(line.find("warning disk almost full"), std::string::npos) << line;
}

TEST_F(LogFormatTest, JsonIsOneObjectPerLine) {
  ::setenv("JOURNAL_STREAM", stream_.c_str(), 1);  // an explicit format wins
  std::string line = LogOneLine("json");
  EXPECT_EQ(line.rfind("{\"ts\":\"", 0), 0u) << line;
  EXPECT_NE(
      line.find("\"level\":\"warning\",\"component\":\"skydb\",\"msg\":\"disk almost full\"}\n"),
      std::string::npos)
      << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
}

// A message that names its component ("store: ...") is that component's in JSON, without the
// prefix; forwarded PostgreSQL lines carry the postmaster's or backend's pid; a failed AUTH
// carries the client's address. A record logged after them has none of their fields.
TEST_F(LogFormatTest, JsonCarriesComponentPidAndPeer) {
  ASSERT_TRUE(InitLogging("info", "json").ok());
  spdlog::info("store: opened");
  Log(spdlog::level::info, {.component = "postgres", .pid = 812, .peer = ""},
      "postgres: [812] LOG:  database system is ready to accept connections");
  Log(spdlog::level::warn, {.component = "resp", .pid = 0, .peer = "127.0.0.1:50312"},
      "resp: client id=7 addr=127.0.0.1:50312: AUTH failed (wrong password)");
  spdlog::error("cannot write the status file: \"x\"");
  std::vector<std::string> lines = Split(Written(), '\n');
  ASSERT_EQ(lines.size(), 5u) << Join(lines, "\n");
  auto tail = [](const std::string& line) { return line.substr(line.find("\"component\"")); };
  EXPECT_EQ(tail(lines[0]), R"("component":"store","msg":"opened"})");
  EXPECT_EQ(tail(lines[1]),
            R"("component":"postgres","pid":812,"msg":"LOG:  database system is ready to )"
            R"(accept connections"})");
  EXPECT_EQ(tail(lines[2]), R"j("component":"resp","peer":"127.0.0.1:50312","msg":"client id=7 )j"
                            R"j(addr=127.0.0.1:50312: AUTH failed (wrong password)"})j");
  EXPECT_EQ(tail(lines[3]), R"("component":"skydb","msg":"cannot write the status file: \"x\""})");
  EXPECT_EQ(lines[4], "");
}

// libpq's errors and a file's errors come over several lines; each record stays one line, so
// no line of the journal loses its priority and a text log stays one record a line.
TEST_F(LogFormatTest, AMessageOfSeveralLinesIsOneLineInEveryFormat) {
  const std::string message =
      "postgres: connection to server on socket \"/x/.s.PGSQL.5432\" failed: No such file or "
      "directory\n\tIs the server running locally and accepting connections on that socket?\n";
  const std::string folded =
      "postgres: connection to server on socket \"/x/.s.PGSQL.5432\" failed: No such file or "
      "directory; Is the server running locally and accepting connections on that socket?";
  std::string journal = LogOneLine("journal", message);
  EXPECT_EQ(journal, "<4>" + folded + "\n");
  std::string text = LogOneLine("text", message).substr(journal.size());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
  EXPECT_NE(text.find("warning " + folded + "\n"), std::string::npos) << text;
  std::string json = LogOneLine("json", message).substr(journal.size() + text.size());
  EXPECT_EQ(json.find('\n'), json.size() - 1) << json;
  EXPECT_NE(json.find(R"(No such file or directory\u000a\u0009Is the server)"), std::string::npos)
      << json;
}

TEST(SplitLogMessageTest, OnlyAKnownComponentsPrefixAndTheGivenPidAreTakenOff) {
  struct Row {
    std::string_view message;
    LogFields fields;
    std::string_view component;
    std::string_view body;
  } rows[] = {
      {"resp: stopped", {}, "resp", "stopped"},
      {"reload: nothing changed", {}, "skydb", "reload: nothing changed"},
      {"resp:stopped", {}, "skydb", "resp:stopped"},
      {"responses: 3", {}, "skydb", "responses: 3"},
      {"postgres: [812] LOG:  x", {}, "postgres", "[812] LOG:  x"},
      {"postgres: [812] LOG:  x", {.component = "", .pid = 812, .peer = ""}, "postgres", "LOG:  x"},
      {"postgres: [813] LOG:  x",
       {.component = "", .pid = 812, .peer = ""},
       "postgres",
       "[813] LOG:  x"},
      {"opened", {.component = "store", .pid = 0, .peer = ""}, "store", "opened"},
      {"", {}, "skydb", ""},
  };
  for (const Row& row : rows) {
    LogBody body = SplitLogMessage(row.message, row.fields);
    EXPECT_EQ(body.component, row.component) << row.message;
    EXPECT_EQ(body.message, row.body) << row.message;
  }
}

// Messages name paths under a data dir a user chose; a JSON line must stay UTF-8 whatever the
// bytes, so they are written as U+FFFD (valid sequences pass through).
TEST_F(LogFormatTest, JsonLineStaysUtf8WhenTheMessageIsNot) {
  std::string line = LogOneLine("json", "cannot open /srv/d\xff\xc3x caf\xc3\xa9");
  EXPECT_TRUE(IsValidUtf8(line)) << line;
  EXPECT_NE(line.find("\"msg\":\"cannot open /srv/d\\ufffd\\ufffdx caf\xc3\xa9\"}"),
            std::string::npos)
      << line;
}

TEST(InitLoggingTest, UnknownFormatOrLevelIsRefusedWithTheChoices) {
  Status format = InitLogging("info", "xml");
  ASSERT_FALSE(format.ok());
  EXPECT_NE(format.error().message.find("auto, text, json"), std::string::npos);
  Status level = InitLogging("loud", "text");
  ASSERT_FALSE(level.ok());
  EXPECT_NE(level.error().message.find("trace, debug"), std::string::npos);
}

}  // namespace
}  // namespace skydb
