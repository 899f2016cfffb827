// skydb::Embedded's options → the configuration it runs with, and its refusal of root: pure,
// no PostgreSQL (tests/integration/embedded_test.cc runs the API against a real one).
#include "embed/embedded_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace skydb::embed {
namespace {

EmbeddedOptions Options(std::vector<std::string> settings = {}) {
  EmbeddedOptions options;
  options.data_dir = "/srv/app";
  options.settings = std::move(settings);
  return options;
}

TEST(EmbeddedConfigTest, DefaultsAreTheDaemonsWithTheHttpEndpointsOff) {
  auto config = EmbeddedConfig(Options());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->data_dir, "/srv/app");
  EXPECT_EQ(config->store.kind, StoreKind::kTiered);
  EXPECT_TRUE(config->store.database_url.empty());
  EXPECT_EQ(config->http.port, 0);  // not 9733: a `skydb serve` on the host may hold it
  EXPECT_EQ(config->log_level, "info");
  EXPECT_EQ(config->app.database, "app");
}

TEST(EmbeddedConfigTest, AnExplicitHttpPortOrListenerIsKept) {
  auto port = EmbeddedConfig(Options({"http.port=9800"}));
  ASSERT_TRUE(port.ok()) << port.error().message;
  EXPECT_EQ(port->http.port, 9800);
  auto listen = EmbeddedConfig(Options({"http.listen=http.sock"}));
  ASSERT_TRUE(listen.ok()) << listen.error().message;
  EXPECT_EQ(listen->http.listen, "http.sock");
  EXPECT_EQ(listen->http.port, 9733);
}

TEST(EmbeddedConfigTest, EveryKeyOfTheTableCanBeSet) {
  auto config = EmbeddedConfig(
      Options({"store.durability=async", "resp.tcp_port=6380", "postgres.settings.work_mem=8MB",
               "supervisor.stop_timeout=5s", "app.role=shop"}));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->store.durability, Durability::kAsync);
  EXPECT_EQ(config->resp.tcp_port, 6380);
  EXPECT_EQ(config->postgres.settings.at("work_mem"), "8MB");
  EXPECT_EQ(config->supervisor.stop_timeout, std::chrono::seconds(5));
  EXPECT_EQ(config->app.role, "shop");
}

TEST(EmbeddedConfigTest, DatabaseUrlAndLogLevelMapToTheirKeysAndSettingsWin) {
  EmbeddedOptions options = Options({"log.level=warn"});
  options.database_url = "postgresql://db.internal/shop";
  options.log_level = "debug";
  auto config = EmbeddedConfig(options);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->store.database_url, "postgresql://db.internal/shop");
  EXPECT_EQ(config->log_level, "warn");
}

TEST(EmbeddedConfigTest, TheConfigFileIsReadAndSettingsOverrideIt) {
  std::string file = ::testing::TempDir() + "/embedded_config_test.toml";
  {
    std::ofstream out(file);
    out << "[store]\ndurability = \"async\"\n[http]\nport = 9801\n[resp]\nmax_clients = 50\n";
  }
  EmbeddedOptions options = Options({"resp.max_clients=60"});
  options.config_file = file;
  auto config = EmbeddedConfig(options);
  std::remove(file.c_str());
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->store.durability, Durability::kAsync);
  EXPECT_EQ(config->http.port, 9801);  // named by the file: kept
  EXPECT_EQ(config->resp.max_clients, 60);
}

TEST(EmbeddedConfigTest, ARelativeDataDirIsMadeAbsolute) {
  EmbeddedOptions options;
  options.data_dir = "state/../app-data";
  auto config = EmbeddedConfig(options);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->data_dir, (std::filesystem::current_path() / "app-data").string());
}

TEST(EmbeddedConfigTest, RefusesWhatItCannotUseWithTheReason) {
  struct Case {
    EmbeddedOptions options;
    std::string says;
  };
  EmbeddedOptions no_dir;
  EmbeddedOptions missing_file = Options();
  missing_file.config_file = "/nonexistent/skydb.toml";
  EmbeddedOptions bad_level = Options();
  bad_level.log_level = "loud";
  const Case cases[] = {
      {no_dir, "EmbeddedOptions.data_dir is empty"},
      {Options({"store.durability"}), "\"store.durability\" is not key=value"},
      {Options({"=async"}), "\"=async\" is not key=value"},
      {Options({"store.durabilty=async"}), "store.durabilty"},
      {Options({"store.durability=eventually"}), "sync|async"},
      {missing_file, "/nonexistent/skydb.toml"},
      {bad_level, "loud"},
  };
  for (const Case& c : cases) {
    auto config = EmbeddedConfig(c.options);
    ASSERT_FALSE(config.ok()) << c.says;
    EXPECT_NE(config.error().message.find(c.says), std::string::npos) << config.error().message;
    EXPECT_NE(config.error().message.find("skydb::Embedded"), std::string::npos)
        << config.error().message;
  }
}

TEST(EmbeddedConfigTest, RootIsRefusedWithWhyAndWhatToDoInstead) {
  Status refused = RefuseRoot(0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermission);
  const std::string& message = refused.error().message;
  EXPECT_NE(message.find("PostgreSQL will not run as root"), std::string::npos) << message;
  EXPECT_NE(message.find("unprivileged user"), std::string::npos) << message;
  EXPECT_NE(message.find("skydb run"), std::string::npos) << message;
  EXPECT_TRUE(RefuseRoot(1000).ok());
}

}  // namespace
}  // namespace skydb::embed
