// libpq's messages as pgconn returns them: one line each, with no server (a socket directory
// where nothing listens; libpq's own text spans two lines there).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "pgconn/pgconn.h"

namespace skydb::pg {
namespace {

TEST(OneLineTest, AFailedConnectIsOneLineWithLibpqsHint) {
  std::string nowhere = "/tmp/skydb-nothing-listens-" + std::to_string(::getpid());
  auto conn = Connection::Open("host=" + nowhere + " dbname=postgres connect_timeout=2");
  ASSERT_FALSE(conn.ok());
  const std::string& message = conn.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find('\t'), std::string::npos) << message;
  // libpq 15: "...failed: No such file or directory\n\tIs the server running locally...?"
  EXPECT_NE(message.find("No such file or directory; Is the server running locally"),
            std::string::npos)
      << message;
}

TEST(OneLineTest, AConnectionStringLibpqCannotParseIsOneLine) {
  auto described = DescribeConnInfo("host='unterminated");
  ASSERT_FALSE(described.ok());
  EXPECT_EQ(described.error().message.find('\n'), std::string::npos) << described.error().message;
}

}  // namespace
}  // namespace skydb::pg
