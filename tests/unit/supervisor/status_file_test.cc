#include "supervisor/status_file.h"

#include <gtest/gtest.h>

namespace skydb::supervisor {
namespace {

TEST(StatusFileTest, RoundTrips) {
  StatusRecord r;
  r.state = "ready";
  r.daemon_pid = 12;
  r.started_at = 1700000000;
  r.postgres_pid = 34;
  r.restarts = 2;
  r.last_exit = "killed by signal 9 (Killed)";
  r.socket_dir = "/srv/sky/run";
  r.port = 5432;
  r.superuser = "sky";
  auto back = ParseStatusJson(RenderStatusJson(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->state, "ready");
  EXPECT_EQ(back->daemon_pid, 12);
  EXPECT_EQ(back->postgres_pid, 34);
  EXPECT_EQ(back->restarts, 2);
  EXPECT_EQ(back->last_exit, r.last_exit);
  EXPECT_EQ(back->socket_dir, r.socket_dir);
  EXPECT_EQ(back->superuser, "sky");
}

TEST(StatusFileTest, CorruptFilesAreErrorsNotExceptions) {
  EXPECT_FALSE(ParseStatusJson("").ok());
  EXPECT_FALSE(ParseStatusJson("[1,2]").ok());
  EXPECT_FALSE(ParseStatusJson("{\"restarts\": \"many\"}").ok());
}

}  // namespace
}  // namespace skydb::supervisor
