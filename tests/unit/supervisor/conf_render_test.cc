#include "supervisor/conf_render.h"

#include <gtest/gtest.h>

namespace skydb::supervisor {
namespace {

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(ConfRenderTest, SkydbConfHasSettingsThenOwnedLinesLast) {
  std::string conf =
      RenderSkydbConf("shared_buffers = 296MB\nmax_connections = 36\n", "/srv/sky/run", 5432, 15);
  auto settings = conf.find("shared_buffers = 296MB");
  auto socket = conf.find("unix_socket_directories = '/srv/sky/run'");
  ASSERT_NE(settings, std::string::npos);
  ASSERT_NE(socket, std::string::npos);
  EXPECT_LT(settings, socket);  // the supervisor's lines come last, so they win
  EXPECT_NE(conf.find("listen_addresses = ''"), std::string::npos);
  EXPECT_NE(conf.find("port = 5432"), std::string::npos);
  EXPECT_NE(conf.find("unix_socket_permissions = 0700"), std::string::npos);
  // log_line_prefix precedes the settings so that a pin overrides it.
  EXPECT_LT(conf.find("log_line_prefix"), settings);
}

TEST(ConfRenderTest, SettingsWithoutTrailingNewlineStayOnTheirLine) {
  std::string conf = RenderSkydbConf("work_mem = 13MB", "/r", 5432, 13);
  EXPECT_EQ(conf.find("recovery_init_sync_method"), std::string::npos);
  EXPECT_NE(conf.find("work_mem = 13MB\n"), std::string::npos);
}

TEST(ConfRenderTest, QuotesSocketDir) { EXPECT_EQ(QuoteConfValue("/srv/it's"), "'/srv/it''s'"); }

TEST(ConfRenderTest, IncludeLineAppendedOnce) {
  auto once = WithIncludeLine("max_connections = 100");
  ASSERT_TRUE(once.has_value());
  EXPECT_EQ(Count(*once, "include = 'skydb.conf'"), 1u);
  EXPECT_EQ(once->find("max_connections = 100\n"), 0u);
  EXPECT_FALSE(WithIncludeLine(*once).has_value());
  EXPECT_FALSE(WithIncludeLine("a = 1\n  include = 'skydb.conf'  \n").has_value());
}

TEST(ConfRenderTest, ConfigCheckReasonsArePostgresMessages) {
  EXPECT_EQ(
      ConfigCheckReasons("2026-12-01 10:12:20.521 UTC [14876] LOG:  invalid value for parameter "
                         "\"shared_buffers\": \"bogus\"\n"
                         "[14876] LOG:  5000000 is outside the valid range for parameter "
                         "\"max_connections\" (1 .. 262143)\n"
                         "2026-12-01 10:12:20.521 UTC [14876] FATAL:  configuration file "
                         "\"/d/pgdata/postgresql.conf\" contains errors\n"),
      "invalid value for parameter \"shared_buffers\": \"bogus\"; 5000000 is outside the "
      "valid range for parameter \"max_connections\" (1 .. 262143)");
  EXPECT_EQ(ConfigCheckReasons("[1] FATAL:  configuration file \"/x\" contains errors\n"),
            "configuration file \"/x\" contains errors");
  EXPECT_EQ(ConfigCheckReasons("postgres: could not access directory \"/d\"\n"),
            "postgres: could not access directory \"/d\"");
}

TEST(ConfRenderTest, HbaIsPeerOverUnixSocketsOnlyAndKeepsTheAppInItsDatabase) {
  std::string hba = RenderHba({"skydb", {{"app", "shop", false, {"web"}}}});
  EXPECT_NE(hba.find("local   all  skydb  peer map=skydb\n"), std::string::npos);
  EXPECT_NE(hba.find("local   shop  app  peer map=skydb\n"), std::string::npos);
  EXPECT_NE(hba.find("local   replication  skydb  peer map=skydb\n"), std::string::npos);
  EXPECT_EQ(hba.find("all  all"), std::string::npos) << "no line may admit every role";
  EXPECT_EQ(hba.find("trust"), std::string::npos);
  EXPECT_EQ(hba.find("\nhost"), std::string::npos);
}

TEST(ConfRenderTest, HbaAsksTheAppRoleForItsPasswordWhenItHasOne) {
  std::string hba = RenderHba({"skydb", {{"app", "app", true, {}}}});
  EXPECT_NE(hba.find("local   app  app  scram-sha-256\n"), std::string::npos);
  EXPECT_NE(hba.find("local   all  skydb  peer map=skydb\n"), std::string::npos);
}

// Each app's role may ask for the apps' databases (never skydb's own): CONNECT, closed to
// PUBLIC, then answers 42501 for another app's, which is what the gate expects.
TEST(ConfRenderTest, HbaListsEveryAppWithTheAppsDatabasesOnly) {
  std::string hba = RenderHba({"skydb",
                               {{"app", "app", false, {"web"}},
                                {"alpha", "alpha", true, {}},
                                {"beta", "beta", false, {"beta_os"}}}});
  EXPECT_NE(hba.find("local   app,alpha,beta  app  peer map=skydb\n"), std::string::npos) << hba;
  EXPECT_NE(hba.find("local   app,alpha,beta  alpha  scram-sha-256\n"), std::string::npos);
  EXPECT_NE(hba.find("local   app,alpha,beta  beta  peer map=skydb\n"), std::string::npos);
  EXPECT_EQ(hba.find("postgres"), std::string::npos);
}

TEST(ConfRenderTest, TcpAdmitsOnlyTlsScramForAppsWithAPassword) {
  std::string hba =
      RenderHba({"skydb", {{"app", "app", false, {"web"}}, {"alpha", "alpha", true, {}}}, true});
  EXPECT_NE(hba.find("hostssl app,alpha  alpha  all  scram-sha-256\n"), std::string::npos) << hba;
  EXPECT_EQ(hba.find("hostssl app,alpha  app"), std::string::npos) << "a peer app has no TCP";
  EXPECT_EQ(hba.find("hostssl all"), std::string::npos);
  EXPECT_EQ(hba.find("hostnossl"), std::string::npos);
  EXPECT_NE(hba.find("host    all  all  all  reject\n"), std::string::npos);
  std::string conf = RenderSkydbConf("", "/r", 5432, 15, "", TcpListen{"10.0.0.5"});
  EXPECT_NE(conf.find("listen_addresses = '10.0.0.5'\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("ssl = on\n"), std::string::npos);
  EXPECT_NE(conf.find("ssl_cert_file = 'skydb_server.crt'\n"), std::string::npos);
  EXPECT_NE(conf.find("password_encryption = 'scram-sha-256'\n"), std::string::npos);
  EXPECT_NE(RenderSkydbConf("", "/r", 5432, 15).find("listen_addresses = ''\n"), std::string::npos);
}

TEST(ConfRenderTest, AccessFilesMapPeerAppsOsUsersAndNeverRootToAnApp) {
  AccessFiles files = RenderAccessFiles(
      {"skydb",
       {{"app", "app", false, {"skydb", "web", "root"}}, {"alpha", "alpha", true, {"ignored"}}}});
  EXPECT_NE(files.ident.find("skydb  root  skydb\n"), std::string::npos) << files.ident;
  EXPECT_NE(files.ident.find("skydb  skydb  skydb\n"), std::string::npos);
  EXPECT_NE(files.ident.find("skydb  skydb  app\n"), std::string::npos);
  EXPECT_NE(files.ident.find("skydb  web  app\n"), std::string::npos);
  EXPECT_EQ(files.ident.find("root  app"), std::string::npos);
  EXPECT_EQ(files.ident.find("alpha"), std::string::npos) << "a password app is not mapped";
}

TEST(ConfRenderTest, IdentMapsEachOsUserToItsRole) {
  std::string ident = RenderIdent({{"root", "skydb"}, {"skydb", "skydb"}, {"web", "app"}});
  EXPECT_NE(ident.find("skydb  root  skydb\n"), std::string::npos);
  EXPECT_NE(ident.find("skydb  skydb  skydb\n"), std::string::npos);
  EXPECT_NE(ident.find("skydb  web  app\n"), std::string::npos);
  EXPECT_EQ(ident.find("web  skydb"), std::string::npos);
}

TEST(ConfRenderTest, SocketIsPrivateUnlessAGroupIsGiven) {
  std::string alone = RenderSkydbConf("", "/r", 5432, 15);
  EXPECT_NE(alone.find("unix_socket_permissions = 0700\n"), std::string::npos);
  EXPECT_EQ(alone.find("unix_socket_group"), std::string::npos);
  std::string shared = RenderSkydbConf("", "/r", 5432, 15, "web");
  EXPECT_NE(shared.find("unix_socket_group = 'web'\n"), std::string::npos);
  EXPECT_NE(shared.find("unix_socket_permissions = 0660\n"), std::string::npos);
}

}  // namespace
}  // namespace skydb::supervisor
