#include "skydb/status_file.h"

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

// A data dir is any bytes the OS accepts; JSON strings are UTF-8. Rendering used to throw
// (nlohmann type_error 316) and abort the daemon; the path must also read back exactly, since
// `skydb psql` connects to the socket_dir it names.
TEST(StatusFileTest, PathsThatAreNotUtf8RenderAndReadBackExactly) {
  StatusRecord r;
  r.state = "ready";
  r.data_dir = "/srv/d\xff\xfex";
  r.socket_dir = r.data_dir + "/run";
  r.bin_dir = "/opt/pg\xc3";        // a truncated two-byte sequence
  r.superuser = "sky\xe2\x82\xac";  // valid UTF-8 stays a string
  std::string text = RenderStatusJson(r);
  auto back = ParseStatusJson(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->data_dir, r.data_dir);
  EXPECT_EQ(back->socket_dir, r.socket_dir);
  EXPECT_EQ(back->bin_dir, r.bin_dir);
  EXPECT_EQ(back->superuser, r.superuser);
  EXPECT_NE(text.find("\"superuser\": \"sky\xe2\x82\xac\""), std::string::npos) << text;
}

TEST(StatusFileTest, CorruptFilesAreErrorsNotExceptions) {
  EXPECT_FALSE(ParseStatusJson("").ok());
  EXPECT_FALSE(ParseStatusJson("[1,2]").ok());
  EXPECT_FALSE(ParseStatusJson("{\"restarts\": \"many\"}").ok());
  EXPECT_FALSE(ParseStatusJson("{\"data_dir\": [47, 256]}").ok());
  EXPECT_FALSE(ParseStatusJson("{\"data_dir\": [\"a\"]}").ok());
  EXPECT_FALSE(ParseStatusJson("{\"data_dir\": 3}").ok());
}

}  // namespace
}  // namespace skydb::supervisor
