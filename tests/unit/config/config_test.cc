// The configuration table, loader and renderers, through the public API in skydb/config.h.
#include "skydb/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace skydb {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

// A config file in a fresh temporary directory, removed afterwards.
class TempConfig {
 public:
  TempConfig() {
    std::string templ = (std::filesystem::temp_directory_path() / "skydb-config-XXXXXX").string();
    dir_ = ::mkdtemp(templ.data());
  }
  ~TempConfig() { std::filesystem::remove_all(dir_); }
  TempConfig(const TempConfig&) = delete;
  TempConfig& operator=(const TempConfig&) = delete;

  std::string Write(const std::string& contents, const std::string& name = "skydb.toml") const {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

Result<LoadedConfig> LoadText(const TempConfig& tmp, const std::string& toml) {
  ConfigInputs inputs;
  inputs.file = tmp.Write(toml);
  return LoadConfigWithOrigins(inputs);
}

std::string ErrorOf(const Result<LoadedConfig>& result) {
  return result.ok() ? "(loaded fine)" : result.error().message;
}

std::string ReadRepoFile(const std::string& relative) {
  std::ifstream in(std::string(SKYDB_SOURCE_DIR) + "/" + relative);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---- The table -----------------------------------------------------------------------------

TEST(ConfigTableTest, HoldsExactlyTheConfigFields) {
  std::vector<std::string> names;
  for (const ConfigKey& key : ConfigKeys()) names.push_back(key.name);
  EXPECT_EQ(names, (std::vector<std::string>{"data_dir",
                                             "run_as_user",
                                             "log.level",
                                             "log.format",
                                             "host.ram",
                                             "host.cores",
                                             "postgres.bin_dir",
                                             "postgres.version",
                                             "postgres.sources",
                                             "postgres.bundle",
                                             "postgres.tcp_bind",
                                             "postgres.settings",
                                             "supervisor.start_timeout",
                                             "supervisor.stop_timeout",
                                             "supervisor.backoff_initial",
                                             "supervisor.backoff_max",
                                             "supervisor.stable_after",
                                             "supervisor.crash_window",
                                             "supervisor.max_crashes",
                                             "store.kind",
                                             "store.durability",
                                             "store.flush_interval",
                                             "store.async_max_lag",
                                             "store.write_timeout",
                                             "store.default_ttl",
                                             "store.idle_evict",
                                             "store.ttl_persist_slack",
                                             "store.max_memory",
                                             "store.max_value_bytes",
                                             "store.queue_max_writes",
                                             "store.batch_max_rows",
                                             "store.allow_memory_fallback",
                                             "store.database_url",
                                             "store.coherence",
                                             "store.pooler",
                                             "store.pubsub_database_url",
                                             "store.pubsub_peer_timeout",
                                             "resp.socket",
                                             "resp.socket_group",
                                             "resp.tcp_port",
                                             "resp.bind",
                                             "resp.allow_remote",
                                             "resp.requirepass",
                                             "resp.aclfile",
                                             "resp.max_clients",
                                             "resp.idle_timeout",
                                             "resp.notify_keyspace_events",
                                             "resp.threads",
                                             "resp.max_output_buffer",
                                             "resp.max_reply_memory",
                                             "resp.allow_flush",
                                             "resp.tls",
                                             "http.bind",
                                             "http.port",
                                             "http.allow_remote",
                                             "http.listen",
                                             "http.socket_mode",
                                             "http.socket_group",
                                             "http.tls",
                                             "tls.cert_file",
                                             "tls.key_file",
                                             "tls.ca_file",
                                             "tls.client_certs",
                                             "app.database",
                                             "app.role",
                                             "app.user",
                                             "app.group",
                                             "app.password_file",
                                             "app.max_connections",
                                             "app.restart",
                                             "app.stop_timeout",
                                             "app.extensions",
                                             "backup.repository",
                                             "backup.schedule",
                                             "backup.retain_count",
                                             "backup.retain_age",
                                             "backup.archive_timeout",
                                             "backup.compression"}));
}

// app.extensions: names as CREATE EXTENSION takes them; an empty list is the default.
TEST(ConfigTableTest, AppExtensionsAreExtensionNames) {
  EXPECT_TRUE(Config{}.app.extensions.empty());
  const ConfigKey* key = FindConfigKey("app.extensions");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->default_text, "[]");
  auto ok =
      LoadConfig(ConfigInputs{"", false, {}, {{"app.extensions", "pgcrypto,uuid-ossp,vector"}}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->app.extensions, (std::vector<std::string>{"pgcrypto", "uuid-ossp", "vector"}));
  auto bad = LoadConfig(ConfigInputs{"", false, {}, {{"app.extensions", "pgcrypto,Drop Table"}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("has 'Drop Table', which is not an extension name"),
            std::string::npos)
      << bad.error().message;
}

// PostgreSQL's archive and restore commands carry backup.repository inside quotes.
TEST(ConfigTableTest, BackupRepositoryIsAnAbsolutePathWithoutQuotes) {
  for (const auto& [value, why] : std::vector<std::pair<std::string, std::string>>{
           {"backups", "must be an absolute path"},
           {"/srv/it's", "must not hold quotes, % or backslashes"},
           {"/srv/100%", "must not hold quotes, % or backslashes"}}) {
    ConfigInputs inputs;
    inputs.flags = {{"backup.repository", value}};
    EXPECT_THAT(ErrorOf(LoadConfigWithOrigins(inputs)), HasSubstr(why)) << value;
  }
  ConfigInputs fine;
  fine.flags = {{"backup.repository", "/srv/backup/shop"}};
  auto loaded = LoadConfigWithOrigins(fine);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.backup.repository, "/srv/backup/shop");
}

TEST(ConfigTableTest, EveryRowIsComplete) {
  std::set<std::string> envs;
  for (const ConfigKey& key : ConfigKeys()) {
    SCOPED_TRACE(key.name);
    EXPECT_FALSE(key.default_text.empty());
    EXPECT_FALSE(key.accepted.empty());
    EXPECT_FALSE(key.description.empty());
    EXPECT_TRUE(envs.insert(key.env).second) << "duplicate env " << key.env;
    ASSERT_TRUE(key.get && key.set);
    EXPECT_EQ(FindConfigKey(key.name), &key);
  }
  EXPECT_EQ(FindConfigKey("store.durabilty"), nullptr);
}

TEST(ConfigTableTest, EnvironmentNames) {
  EXPECT_EQ(FindConfigKey("data_dir")->env, "SKYDB_DATA_DIR");
  EXPECT_EQ(FindConfigKey("log.level")->env, "SKYDB_LOG_LEVEL");
  EXPECT_EQ(FindConfigKey("host.ram")->env, "SKYDB_HOST_RAM");
  EXPECT_EQ(FindConfigKey("supervisor.max_crashes")->env, "SKYDB_SUPERVISOR_MAX_CRASHES");
  EXPECT_EQ(FindConfigKey("postgres.bin_dir")->env, "SKY_POSTGRES_BIN");
}

TEST(ConfigTableTest, DefaultsComeFromTheStruct) {
  EXPECT_EQ(FindConfigKey("log.format")->default_text, "\"auto\"");
  EXPECT_EQ(FindConfigKey("host.ram")->default_text, "0");
  EXPECT_EQ(FindConfigKey("supervisor.crash_window")->default_text, "\"5min\"");
  EXPECT_EQ(FindConfigKey("postgres.sources")->default_text,
            "[\"bin_dir\", \"bundle\", \"pg_config\", \"distro\", \"path\"]");
  EXPECT_EQ(FindConfigKey("host.cores")->accepted, "0..4096 (0 = detect)");
}

TEST(ConfigTableTest, HelpNamesEveryKeyAndVariable) {
  std::string help = RenderConfigHelp();
  for (const ConfigKey& key : ConfigKeys()) {
    EXPECT_THAT(help, HasSubstr(key.name + "  (")) << key.name;
    EXPECT_THAT(help, HasSubstr(key.env)) << key.name;
  }
  EXPECT_THAT(help, HasSubstr("reloadable on SIGHUP"));
  EXPECT_THAT(help, HasSubstr("--data-dir, --set data_dir=VALUE"));
  // A restart key whose name does not say why names the reason.
  EXPECT_THAT(help, HasSubstr("restart:  archive_mode, which it turns on, changes only when "
                              "PostgreSQL restarts"));
}

// ---- conf/skydb.toml -----------------------------------------------------------------------

TEST(ConfigFileTest, ShippedFileParsesToExactlyTheDefaults) {
  ConfigInputs inputs;
  inputs.file = std::string(SKYDB_SOURCE_DIR) + "/conf/skydb.toml";
  auto loaded = LoadConfig(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(*loaded == Config{});
  EXPECT_TRUE(DiffConfig(Config{}, *loaded).changed.empty());
}

TEST(ConfigFileTest, ShippedFileSetsEveryKey) {
  ConfigInputs inputs;
  inputs.file = std::string(SKYDB_SOURCE_DIR) + "/conf/skydb.toml";
  auto loaded = LoadConfigWithOrigins(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  std::string text = ReadRepoFile("conf/skydb.toml");
  for (const ConfigKey& key : ConfigKeys()) {
    SCOPED_TRACE(key.name);
    if (key.type == ConfigType::kStringMap) {
      EXPECT_THAT(text, HasSubstr("[" + key.name + "]"));
      continue;
    }
    EXPECT_EQ(loaded->OriginOf(key.name).source, ConfigSource::kFile);
    EXPECT_THAT(text, HasSubstr(key.env)) << "the file should name the variable";
  }
}

TEST(ConfigFileTest, DocsNameEveryKey) {
  std::string docs = ReadRepoFile("docs/configuration.md");
  for (const ConfigKey& key : ConfigKeys()) {
    EXPECT_THAT(docs, HasSubstr("`" + key.name + "`")) << key.name;
    EXPECT_THAT(docs, HasSubstr(key.env)) << key.name;
  }
}

// The "applies" column and the file's "· reload"/"· restart" tag say what the table decides.
TEST(ConfigFileTest, DocsAndFileSayWhichKeysReload) {
  std::string docs = ReadRepoFile("docs/configuration.md");
  std::string text = ReadRepoFile("conf/skydb.toml");
  for (const ConfigKey& key : ConfigKeys()) {
    SCOPED_TRACE(key.name);
    std::string applies = key.reloadable ? "reload" : "restart";
    auto row = docs.find("\n| `" + key.name + "` |");
    ASSERT_NE(row, std::string::npos);
    std::string line = docs.substr(row + 1, docs.find('\n', row + 1) - row - 1);
    EXPECT_THAT(line, HasSubstr("| " + applies + " | `" + key.env));
    if (key.type == ConfigType::kStringMap) continue;
    auto tag = text.find("# env " + key.env);
    ASSERT_NE(tag, std::string::npos);
    std::string comment = text.substr(tag, text.find('\n', tag) - tag);
    EXPECT_TRUE(comment.ends_with("· " + applies)) << comment;
  }
}

TEST(ConfigDiffTest, BackupPolicyReloadsAndTheRepositoryNamesWhyItNeedsARestart) {
  Config before;
  Config after = before;
  after.backup.schedule = std::chrono::minutes(1);
  after.backup.retain_count = 3;
  after.backup.retain_age = std::chrono::hours(2);
  after.backup.archive_timeout = std::chrono::seconds(30);
  ConfigChange change = DiffConfig(before, after);
  EXPECT_EQ(change.changed.size(), 4u);
  EXPECT_TRUE(change.need_restart.empty());
  after.backup.repository = "/srv/backup";
  change = DiffConfig(before, after);
  EXPECT_EQ(change.need_restart, std::vector<std::string>{"backup.repository"});
  EXPECT_THAT(FindConfigKey("backup.repository")->restart_why, HasSubstr("archive_mode"));
}

// ---- Loading and precedence ----------------------------------------------------------------

TEST(ConfigLoadTest, NoInputsGiveTheDefaults) {
  auto loaded = LoadConfigWithOrigins({});
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(loaded->config == Config{});
  EXPECT_TRUE(loaded->origins.empty());
  EXPECT_EQ(loaded->file, "");
}

TEST(ConfigLoadTest, MissingImplicitFileMeansDefaults) {
  ConfigInputs inputs;
  inputs.file = "/nonexistent/skydb.toml";
  inputs.file_must_exist = false;
  auto loaded = LoadConfigWithOrigins(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->file, "");
}

TEST(ConfigLoadTest, EveryTypeFromAFile) {
  TempConfig tmp;
  auto loaded = LoadText(tmp, R"(
data_dir = "/srv/sky"
run_as_user = "skydb"
[log]
level = "debug"
format = "json"
[host]
ram = "1975MiB"
cores = 2
[postgres]
bin_dir = "/opt/pg/bin"
version = "15.18"
sources = ["distro", "bin_dir"]
bundle = "/opt/pg.bundle"
[postgres.settings]
work_mem = "64MB"
max_wal_senders = 0
jit = false
random_page_cost = 1.1
pg_stat_statements.max = 1000
[supervisor]
start_timeout = "2min"
stop_timeout = "10s"
backoff_initial = "250ms"
backoff_max = "1h"
stable_after = "90s"
crash_window = "1d"
max_crashes = 7
)");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Config& c = loaded->config;
  EXPECT_EQ(c.data_dir, "/srv/sky");
  EXPECT_EQ(c.run_as_user, "skydb");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.log_format, "json");
  EXPECT_EQ(c.host.ram_bytes, 1975ULL << 20);
  EXPECT_EQ(c.host.cores, 2);
  EXPECT_EQ(c.postgres.bin_dir, "/opt/pg/bin");
  EXPECT_EQ(c.postgres.version, "15.18");
  EXPECT_EQ(c.postgres.sources, (std::vector<std::string>{"distro", "bin_dir"}));
  EXPECT_EQ(c.postgres.bundle, "/opt/pg.bundle");
  EXPECT_EQ(c.postgres.settings,
            (std::map<std::string, std::string>{{"jit", "off"},
                                                {"max_wal_senders", "0"},
                                                {"pg_stat_statements.max", "1000"},
                                                {"random_page_cost", "1.1"},
                                                {"work_mem", "64MB"}}));
  EXPECT_EQ(c.supervisor.start_timeout, milliseconds(120000));
  EXPECT_EQ(c.supervisor.stop_timeout, milliseconds(10000));
  EXPECT_EQ(c.supervisor.backoff_initial, milliseconds(250));
  EXPECT_EQ(c.supervisor.backoff_max, milliseconds(3600000));
  EXPECT_EQ(c.supervisor.stable_after, milliseconds(90000));
  EXPECT_EQ(c.supervisor.crash_window, milliseconds(86400000));
  EXPECT_EQ(c.supervisor.max_crashes, 7);
  EXPECT_EQ(loaded->OriginOf("host.cores").detail, tmp.dir() + "/skydb.toml:9");
  EXPECT_EQ(loaded->OriginOf("postgres.settings.jit").source, ConfigSource::kFile);
}

TEST(ConfigLoadTest, DottedKeysAtTopLevelWorkToo) {
  TempConfig tmp;
  auto loaded = LoadText(tmp, "log.level = \"warn\"\nhost.ram = 1073741824\n");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.log_level, "warn");
  EXPECT_EQ(loaded->config.host.ram_bytes, 1ULL << 30);
}

struct PrecedenceCase {
  bool file, env, flag;
  std::string want;
  ConfigSource source;
};

TEST(ConfigLoadTest, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  const PrecedenceCase cases[] = {
      {false, false, false, "info", ConfigSource::kDefault},
      {true, false, false, "warn", ConfigSource::kFile},
      {true, true, false, "error", ConfigSource::kEnvironment},
      {false, true, false, "error", ConfigSource::kEnvironment},
      {true, true, true, "debug", ConfigSource::kFlag},
      {true, false, true, "debug", ConfigSource::kFlag},
  };
  TempConfig tmp;
  for (const PrecedenceCase& c : cases) {
    SCOPED_TRACE(c.want);
    ConfigInputs inputs;
    if (c.file) inputs.file = tmp.Write("[log]\nlevel = \"warn\"\n");
    if (c.env) inputs.environment["SKYDB_LOG_LEVEL"] = "error";
    if (c.flag) inputs.flags.emplace_back("log.level", "debug");
    auto loaded = LoadConfigWithOrigins(inputs);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->config.log_level, c.want);
    EXPECT_EQ(loaded->OriginOf("log.level").source, c.source);
  }
}

TEST(ConfigLoadTest, EnvironmentSetsEveryKind) {
  ConfigInputs inputs;
  inputs.environment = {
      {"SKY_POSTGRES_BIN", "/opt/pg/bin"},
      {"SKY_DB_MAX_OPEN_CONNS", "48"},
      {"SKYDB_HOST_RAM", "2GiB"},
      {"SKYDB_HOST_CORES", "4"},
      {"SKYDB_POSTGRES_SOURCES", "distro, path"},
      {"SKYDB_POSTGRES_SETTINGS_WORK_MEM", "32MB"},
      {"SKYDB_SUPERVISOR_STOP_TIMEOUT", "5s"},
      // Not configuration: the file path, test harness variables, other programs, empties.
      {"SKYDB_CONFIG", "/etc/other.toml"},
      {"SKYDB_TEST_SCRATCH", "x"},
      {"SKY_LIVE_ADDR", "x"},
      {"SKYDB_LOG_LEVEL", ""},
      {"PATH", "/usr/bin"},
  };
  auto loaded = LoadConfigWithOrigins(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Config& c = loaded->config;
  EXPECT_EQ(c.postgres.bin_dir, "/opt/pg/bin");
  EXPECT_EQ(c.app.max_connections, 48);
  EXPECT_EQ(c.host.ram_bytes, 2ULL << 30);
  EXPECT_EQ(c.host.cores, 4);
  EXPECT_EQ(c.postgres.sources, (std::vector<std::string>{"distro", "path"}));
  EXPECT_EQ(c.postgres.settings.at("work_mem"), "32MB");
  EXPECT_EQ(c.supervisor.stop_timeout, milliseconds(5000));
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(loaded->OriginOf("postgres.bin_dir").detail, "SKY_POSTGRES_BIN");
  EXPECT_EQ(loaded->OriginOf("postgres.settings.work_mem").detail,
            "SKYDB_POSTGRES_SETTINGS_WORK_MEM");
}

TEST(ConfigLoadTest, SettingsMergeEntryByEntry) {
  TempConfig tmp;
  ConfigInputs inputs;
  inputs.file = tmp.Write("[postgres.settings]\nwork_mem = \"8MB\"\njit = \"off\"\n");
  inputs.environment["SKYDB_POSTGRES_SETTINGS_WORK_MEM"] = "16MB";
  inputs.flags = {{"postgres.settings.log_min_duration_statement", "250ms"}};
  auto loaded = LoadConfigWithOrigins(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.postgres.settings,
            (std::map<std::string, std::string>{
                {"jit", "off"}, {"log_min_duration_statement", "250ms"}, {"work_mem", "16MB"}}));
  EXPECT_EQ(loaded->OriginOf("postgres.settings.jit").source, ConfigSource::kFile);
  EXPECT_EQ(loaded->OriginOf("postgres.settings.work_mem").source, ConfigSource::kEnvironment);
  EXPECT_EQ(loaded->OriginOf("postgres.settings.log_min_duration_statement").source,
            ConfigSource::kFlag);
}

TEST(ConfigLoadTest, LaterFlagsWin) {
  ConfigInputs inputs;
  inputs.flags = {{"data_dir", "/a"}, {"host.cores", "2"}, {"data_dir", "/b"}};
  auto loaded = LoadConfigWithOrigins(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.data_dir, "/b");
  EXPECT_EQ(loaded->OriginOf("data_dir").detail, "--set data_dir");
  EXPECT_EQ(loaded->OriginOf("host.cores").source, ConfigSource::kFlag);
}

// ---- Errors: one message naming where, the key and what is accepted ------------------------

struct FileErrorCase {
  std::string name;
  std::string toml;
  std::string where;                 // ":LINE" expected right after the path
  std::vector<std::string> expects;  // substrings of the message
};

TEST(ConfigErrorTest, FileErrorsNameFileLineKeyAndWhatIsAccepted) {
  const FileErrorCase cases[] = {
      {"unknown key",
       "[log]\nlevel = \"info\"\nlevle = \"debug\"\n",
       ":3: ",
       {"unknown key 'log.levle'", "did you mean 'log.level'?",
        "known keys in [log]: level, format"}},
      {"unknown section",
       "\n[cache]\nsize = \"1GiB\"\n",
       ":3: ",
       {"unknown key 'cache.size'", "known top-level keys and sections: data_dir"}},
      {"unknown key in a known section",
       "\n[store]\ndurabilty = \"sync\"\n",
       ":3: ",
       {"unknown key 'store.durabilty'", "did you mean 'store.durability'?"}},
      {"unknown top-level key",
       "data-dir = \"/x\"\n",
       ":1: ",
       {"unknown key 'data-dir'", "did you mean 'data_dir'?"}},
      {"wrong type",
       "[host]\ncores = \"four\"\n",
       ":2: ",
       {"host.cores = \"four\" must be an integer; accepted: 0..4096 (0 = detect)"}},
      {"out of range",
       "[host]\n\ncores = -1\n",
       ":3: ",
       {"host.cores = -1 is out of range; accepted: 0..4096 (0 = detect)"}},
      {"above range",
       "[supervisor]\nmax_crashes = 1001\n",
       ":2: ",
       {"supervisor.max_crashes = 1001 is out of range; accepted: 1..1000"}},
      {"size garbage",
       "[host]\nram = \"lots\"\n",
       ":2: ",
       {"host.ram = \"lots\" must be a size: 'lots' does not start with a number",
        "accepted: 0 or 16MiB..64TiB (0 = detect)"}},
      {"size too small", "[host]\nram = 2048\n", ":2: ", {"host.ram = 2048 is out of range"}},
      {"negative size", "[host]\nram = -5\n", ":2: ", {"host.ram = -5 must not be negative"}},
      {"duration without unit",
       "[supervisor]\nstop_timeout = \"30\"\n",
       ":2: ",
       {"supervisor.stop_timeout = \"30\" must be a duration: '30' has no unit"}},
      {"duration as integer",
       "[supervisor]\nstop_timeout = 30\n",
       ":2: ",
       {"supervisor.stop_timeout = 30 must be a duration string such as \"30s\""}},
      {"duration out of range",
       "[supervisor]\nstop_timeout = \"2h\"\n",
       ":2: ",
       {"is out of range; accepted: 1s..1h"}},
      {"enum",
       "[log]\nformat = \"xml\"\n",
       ":2: ",
       {"log.format = \"xml\" is not an accepted value; accepted: auto|text|json"}},
      {"list item",
       "[postgres]\nsources = [\"distro\", \"apt\"]\n",
       ":2: ",
       {"postgres.sources = [...] has an unknown item 'apt'; accepted: a non-empty list"}},
      {"list duplicate",
       "[postgres]\nsources = [\"path\", \"path\"]\n",
       ":2: ",
       {"lists 'path' twice"}},
      {"list empty", "[postgres]\nsources = []\n", ":2: ", {"must not be empty"}},
      {"list of numbers", "[postgres]\nsources = [1]\n", ":2: ", {"must be an array of strings"}},
      {"version pin",
       "[postgres]\nversion = \"15.x\"\n",
       ":2: ",
       {"postgres.version = \"15.x\" is not a version pin", "\"15.18\""}},
      {"version as number",
       "[postgres]\nversion = 15\n",
       ":2: ",
       {"postgres.version = 15 must be a string"}},
      {"empty data dir", "data_dir = \"\"\n", ":1: ", {"data_dir = \"\" must not be empty"}},
      {"setting name",
       "[postgres.settings]\n\"Work-Mem\" = \"1MB\"\n",
       ":2: ",
       {"postgres.settings.Work-Mem = \"1MB\" has an invalid setting name 'Work-Mem'",
        "accepted: a table of postgresql.conf names"}},
      {"setting value",
       "[postgres.settings]\nwork_mem = [1]\n",
       ":2: ",
       {"postgres.settings.work_mem = [...] must be a string, integer, float or boolean"}},
      {"section as a value",
       "log = \"debug\"\n",
       ":1: ",
       {"log = \"debug\" must be a table ([log]); accepted: the keys level, format"}},
      {"settings as a value",
       "[postgres]\nsettings = \"x\"\n",
       ":2: ",
       {"postgres.settings = \"x\" must be a table"}},
      {"key as a table", "[log.level]\nx = 1\n", ":1: ", {"log.level = {...} must be a string"}},
      {"malformed", "[log]\nlevel = \"info\n", ":2:", {"malformed TOML"}},
      {"duplicate key", "[log]\nlevel = \"info\"\nlevel = \"warn\"\n", ":3:", {"malformed TOML"}},
  };
  TempConfig tmp;
  for (const FileErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto loaded = LoadText(tmp, c.toml);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
    const std::string& message = loaded.error().message;
    EXPECT_EQ(message.rfind(tmp.dir() + "/skydb.toml" + c.where, 0), 0u) << message;
    for (const std::string& expect : c.expects) EXPECT_THAT(message, HasSubstr(expect));
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(ConfigErrorTest, CrossKeyRuleNamesBothKeys) {
  TempConfig tmp;
  auto loaded = LoadText(tmp, "[supervisor]\nbackoff_initial = \"10s\"\nbackoff_max = \"1s\"\n");
  EXPECT_EQ(ErrorOf(loaded), tmp.dir() + "/skydb.toml:3: supervisor.backoff_max = \"1s\" (file " +
                                 tmp.dir() +
                                 "/skydb.toml:3) is below supervisor.backoff_initial = "
                                 "\"10s\" (file " +
                                 tmp.dir() +
                                 "/skydb.toml:2); accepted: "
                                 "supervisor.backoff_max >= supervisor.backoff_initial");
}

TEST(ConfigErrorTest, MissingFileThatMustExist) {
  ConfigInputs inputs;
  inputs.file = "/nonexistent/skydb.toml";
  auto loaded = LoadConfig(inputs);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(loaded.error().message,
            "/nonexistent/skydb.toml: cannot read the config file: No such file or directory");
}

TEST(ConfigErrorTest, UnreadableFileIsAnErrorEvenWhenOptional) {
  TempConfig tmp;  // a directory cannot be read as a file, even by root
  ConfigInputs inputs;
  inputs.file = tmp.dir();
  inputs.file_must_exist = false;
  auto loaded = LoadConfig(inputs);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(loaded.error().message, tmp.dir() + ": cannot read the config file: Is a directory");
}

struct TextErrorCase {
  std::string name;
  std::string key_or_var;
  std::string value;
  std::string message;  // exact
};

TEST(ConfigErrorTest, EnvironmentErrors) {
  const TextErrorCase cases[] = {
      {"not an integer", "SKYDB_HOST_CORES", "abc",
       "SKYDB_HOST_CORES=abc: host.cores must be an integer; accepted: 0..4096 (0 = detect)"},
      {"out of range", "SKYDB_HOST_CORES", "5000",
       "SKYDB_HOST_CORES=5000: host.cores is out of range; accepted: 0..4096 (0 = detect)"},
      {"bad size", "SKYDB_HOST_RAM", "2XB",
       "SKYDB_HOST_RAM=2XB: host.ram must be a size: '2XB' has an unknown unit 'xb' (use B, "
       "kB/KiB, MB/MiB, GB/GiB or TB/TiB); accepted: 0 or 16MiB..64TiB (0 = detect); bytes, or a "
       "unit B, kB/KiB, MB/MiB, GB/GiB, TB/TiB (all 1024-based)"},
      {"enum", "SKYDB_LOG_LEVEL", "verbose",
       "SKYDB_LOG_LEVEL=verbose: log.level is not an accepted value; accepted: "
       "trace|debug|info|warn|error"},
      {"setting name", "SKYDB_POSTGRES_SETTINGS_WORK-MEM", "1MB",
       "SKYDB_POSTGRES_SETTINGS_WORK-MEM=1MB: postgres.settings.work-mem has an invalid setting "
       "name 'work-mem'; accepted: a table of postgresql.conf names ([a-z_][a-z0-9_.]*) to "
       "strings, integers, floats or booleans"},
  };
  for (const TextErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    ConfigInputs inputs;
    inputs.environment[c.key_or_var] = c.value;
    auto loaded = LoadConfigWithOrigins(inputs);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(loaded.error().message, c.message);
  }
}

TEST(ConfigErrorTest, UnknownSkydbVariableIsAnError) {
  ConfigInputs inputs;
  inputs.environment["SKYDB_LOG_LEVLE"] = "debug";
  auto loaded = LoadConfigWithOrigins(inputs);
  EXPECT_THAT(ErrorOf(loaded),
              HasSubstr("environment variable SKYDB_LOG_LEVLE is not a skydb setting (did you "
                        "mean SKYDB_LOG_LEVEL?"));
  EXPECT_THAT(ErrorOf(loaded), HasSubstr("accepted: SKYDB_DATA_DIR, SKYDB_RUN_AS_USER"));
  inputs.environment = {{"SKYDB_POSTGRES_BIN_DIR", "/x"}};
  EXPECT_THAT(ErrorOf(LoadConfigWithOrigins(inputs)), HasSubstr("SKY_POSTGRES_BIN"));
}

TEST(ConfigErrorTest, FlagErrors) {
  const TextErrorCase cases[] = {
      {"not an integer", "host.cores", "abc",
       "--set host.cores=abc: host.cores must be an integer; accepted: 0..4096 (0 = detect)"},
      {"empty data dir", "data_dir", "",
       "--set data_dir=: data_dir must not be empty; accepted: a non-empty directory path"},
      {"bad duration", "supervisor.crash_window", "5 fortnights",
       "--set supervisor.crash_window=5 fortnights: supervisor.crash_window must be a duration: "
       "'5 fortnights' has an unknown unit 'fortnights' (use ms, s, min, h or d); accepted: "
       "1s..1d; units ms, s, min, h, d"},
      {"whole table", "postgres.settings", "x",
       "--set postgres.settings=x: postgres.settings is a table; set one entry as "
       "postgres.settings.NAME; accepted: a table of postgresql.conf names ([a-z_][a-z0-9_.]*) "
       "to strings, integers, floats or booleans"},
      {"empty list", "postgres.sources", " ",
       "--set postgres.sources= : postgres.sources must not be empty; accepted: a non-empty list "
       "of bin_dir, bundle, pg_config, distro, path, each at most once (comma-separated in "
       "environment and flags)"},
  };
  for (const TextErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    ConfigInputs inputs;
    inputs.flags.emplace_back(c.key_or_var, c.value);
    auto loaded = LoadConfigWithOrigins(inputs);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(loaded.error().message, c.message);
  }
}

TEST(ConfigErrorTest, UnknownFlagKey) {
  ConfigInputs inputs;
  inputs.flags = {{"store.durabilty", "async"}};
  auto loaded = LoadConfigWithOrigins(inputs);
  EXPECT_THAT(ErrorOf(loaded), HasSubstr("--set store.durabilty=async: unknown key "
                                         "'store.durabilty'"));
  EXPECT_THAT(ErrorOf(loaded), HasSubstr("postgres.settings.<name>"));
  inputs.flags = {{"log.levl", "debug"}};
  EXPECT_THAT(ErrorOf(LoadConfigWithOrigins(inputs)), HasSubstr("did you mean 'log.level'?"));
}

TEST(ConfigErrorTest, FileErrorsComeFirst) {
  TempConfig tmp;
  ConfigInputs inputs;
  inputs.file = tmp.Write("[host]\ncores = 99999\n");
  inputs.environment["SKYDB_HOST_CORES"] = "2";  // a valid override does not excuse the file
  EXPECT_THAT(ErrorOf(LoadConfigWithOrigins(inputs)), HasSubstr("skydb.toml:2: host.cores"));
}

// ---- Sizes and durations -------------------------------------------------------------------

TEST(UnitsTest, ParseSize) {
  const std::pair<std::string, uint64_t> good[] = {
      {"0", 0},
      {"1048576", 1048576},
      {"512B", 512},
      {"1k", 1024},
      {"1kB", 1024},
      {"1KB", 1024},
      {"2KiB", 2048},
      {"1975MiB", 1975ULL << 20},
      {"1975MB", 1975ULL << 20},
      {"2 GiB", 2ULL << 30},
      {" 2gb ", 2ULL << 30},
      {"1TiB", 1ULL << 40},
      {"3TB", 3ULL << 40},
      {"18446744073709551615", 18446744073709551615ULL},
  };
  for (const auto& [text, bytes] : good) {
    auto parsed = ParseSize(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
    EXPECT_EQ(*parsed, bytes) << text;
  }
  const std::pair<std::string, std::string> bad[] = {
      {"", "empty"},
      {"-1", "'-1' is negative"},
      {"-1GiB", "negative"},
      {"1.5GiB", "not a whole number"},
      {"GiB", "does not start with a number"},
      {"12XB", "unknown unit 'xb'"},
      {"12 MiB extra", "unknown unit"},
      {"16777216TiB", "too large"},
      {"18446744073709551616", "too large"},
  };
  for (const auto& [text, why] : bad) {
    auto parsed = ParseSize(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_THAT(parsed.error().message, HasSubstr(why)) << text;
  }
}

TEST(UnitsTest, ParseDuration) {
  const std::pair<std::string, int64_t> good[] = {
      {"10ms", 10},       {"0s", 0},       {"5s", 5000},       {"30m", 1800000},
      {"30min", 1800000}, {"1h", 3600000}, {"2 d", 172800000}, {" 5S ", 5000},
  };
  for (const auto& [text, ms] : good) {
    auto parsed = ParseDuration(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error().message;
    EXPECT_EQ(parsed->count(), ms) << text;
  }
  const std::pair<std::string, std::string> bad[] = {
      {"30", "has no unit"},
      {"", "empty"},
      {"-5s", "negative"},
      {"1.5h", "not a whole"},
      {"5 weeks", "unknown unit 'weeks'"},
      {"s", "does not start with a number"},
      {"9999999999999999d", "too large"},
  };
  for (const auto& [text, why] : bad) {
    auto parsed = ParseDuration(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_THAT(parsed.error().message, HasSubstr(why)) << text;
  }
}

// A bare 0 needs no unit: every duration key whose row says "0 = ..." takes it from a file
// (as an integer or a string), the environment and a flag; the other duration keys refuse it
// as out of range, and any other bare number still has no unit.
TEST(UnitsTest, BareZeroIsADurationWhereZeroIsAllowed) {
  TempConfig tmp;
  int zero_keys = 0;
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.type != ConfigType::kDuration) continue;
    SCOPED_TRACE(key.name);
    ConfigInputs flag;
    flag.flags.emplace_back(key.name, "0");
    ConfigInputs env;
    env.environment[key.env] = "0";
    std::vector<Result<LoadedConfig>> loads;
    loads.push_back(LoadConfigWithOrigins(flag));
    loads.push_back(LoadConfigWithOrigins(env));
    loads.push_back(LoadText(tmp, key.name + " = 0\n"));
    loads.push_back(LoadText(tmp, key.name + " = \"0\"\n"));
    for (const auto& loaded : loads) {
      if (key.zero_allowed) {
        ASSERT_TRUE(loaded.ok()) << loaded.error().message;
        EXPECT_EQ(std::get<milliseconds>(key.get(loaded->config)), milliseconds(0));
      } else {
        EXPECT_THAT(ErrorOf(loaded), HasSubstr("is out of range")) << ErrorOf(loaded);
      }
    }
    EXPECT_THAT(ErrorOf(LoadText(tmp, key.name + " = 30\n")),
                HasSubstr("must be a duration string such as \"30s\""));
    zero_keys += key.zero_allowed ? 1 : 0;
  }
  // store.default_ttl, store.idle_evict, resp.idle_timeout, backup.schedule, backup.retain_age
  EXPECT_EQ(zero_keys, 5);
  EXPECT_THAT(ParseDuration("30").error().message, HasSubstr("has no unit"));
  EXPECT_EQ(ParseDuration(" 0 ")->count(), 0);
}

TEST(UnitsTest, FormatPicksTheLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(FormatSize(0), "0B");
  EXPECT_EQ(FormatSize(512), "512B");
  EXPECT_EQ(FormatSize(1975ULL << 20), "1975MiB");
  EXPECT_EQ(FormatSize(2ULL << 30), "2GiB");
  EXPECT_EQ(FormatSize((1ULL << 30) + 1), "1073741825B");
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
  EXPECT_EQ(FormatDuration(milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDuration(milliseconds(60000)), "1min");
  EXPECT_EQ(FormatDuration(milliseconds(90000)), "90s");
  EXPECT_EQ(FormatDuration(milliseconds(86400000)), "1d");
  for (uint64_t bytes : {1ULL, 1536ULL, 1975ULL << 20, 5ULL << 40}) {
    EXPECT_EQ(*ParseSize(FormatSize(bytes)), bytes);
  }
  for (int64_t ms : {1, 1500, 60000, 7200000}) {
    EXPECT_EQ(ParseDuration(FormatDuration(milliseconds(ms)))->count(), ms);
  }
}

// ---- Reload --------------------------------------------------------------------------------

TEST(DiffConfigTest, SeparatesReloadableFromRestart) {
  Config before;
  before.postgres.settings = {{"work_mem", "4MB"}, {"jit", "off"}};
  struct Case {
    std::string name;
    std::function<void(Config&)> change;
    std::vector<std::string> changed;
    std::vector<std::string> need_restart;
  };
  const Case cases[] = {
      {"nothing", [](Config&) {}, {}, {}},
      {"log level", [](Config& c) { c.log_level = "debug"; }, {"log.level"}, {}},
      {"log format", [](Config& c) { c.log_format = "json"; }, {"log.format"}, {"log.format"}},
      {"data dir", [](Config& c) { c.data_dir = "/x"; }, {"data_dir"}, {"data_dir"}},
      {"backoff",
       [](Config& c) { c.supervisor.backoff_max = milliseconds(1000); },
       {"supervisor.backoff_max"},
       {}},
      {"crashes", [](Config& c) { c.supervisor.max_crashes = 9; }, {"supervisor.max_crashes"}, {}},
      {"start timeout",
       [](Config& c) { c.supervisor.start_timeout = milliseconds(1000); },
       {"supervisor.start_timeout"},
       {"supervisor.start_timeout"}},
      {"sources",
       [](Config& c) { c.postgres.sources = {"path"}; },
       {"postgres.sources"},
       {"postgres.sources"}},
      {"settings",
       [](Config& c) {
         c.postgres.settings["work_mem"] = "8MB";
         c.postgres.settings.erase("jit");
         c.postgres.settings["geqo"] = "off";
       },
       {"postgres.settings.geqo", "postgres.settings.jit", "postgres.settings.work_mem"},
       {}},
      {"mixed",
       [](Config& c) {
         c.log_level = "warn";
         c.host.cores = 8;
       },
       {"log.level", "host.cores"},
       {"host.cores"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Config after = before;
    c.change(after);
    ConfigChange change = DiffConfig(before, after);
    EXPECT_EQ(change.changed, c.changed);
    EXPECT_EQ(change.need_restart, c.need_restart);
  }
}

// ---- config show ---------------------------------------------------------------------------

TEST(RenderConfigTomlTest, NamesOriginsAndLoadsBackToTheSameConfig) {
  TempConfig tmp;
  ConfigInputs inputs;
  inputs.file = tmp.Write(
      "[host]\nram = \"2GiB\"\n[postgres.settings]\n\"pg_stat_statements.max\""
      " = 500\n");
  inputs.environment["SKYDB_LOG_LEVEL"] = "debug";
  inputs.flags = {{"data_dir", "/srv/a \"quoted\" dir"}, {"postgres.settings.jit", "off"}};
  auto loaded = LoadConfigWithOrigins(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  std::string shown = RenderConfigToml(*loaded);
  EXPECT_THAT(shown,
              HasSubstr("data_dir = \"/srv/a \\\"quoted\\\" dir\"  # flag --set data_dir\n"));
  EXPECT_THAT(shown, HasSubstr("[log]\nlevel = \"debug\"  # env SKYDB_LOG_LEVEL\n"));
  EXPECT_THAT(shown, HasSubstr("format = \"auto\"  # default\n"));
  EXPECT_THAT(shown, HasSubstr("ram = \"2GiB\"  # file " + inputs.file + ":2\n"));
  EXPECT_THAT(shown, HasSubstr("jit = \"off\"  # flag --set postgres.settings.jit\n"));
  EXPECT_THAT(shown, HasSubstr("\"pg_stat_statements.max\" = \"500\"  # file"));

  ConfigInputs again;
  again.file = tmp.Write(shown, "shown.toml");
  auto reloaded = LoadConfig(again);
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message << "\n" << shown;
  EXPECT_TRUE(*reloaded == loaded->config) << shown;
}

TEST(RenderConfigTomlTest, DefaultsRenderAsValidToml) {
  LoadedConfig defaults;
  std::string shown = RenderConfigToml(defaults);
  EXPECT_THAT(shown, HasSubstr("# file: none read\n"));
  EXPECT_THAT(shown, HasSubstr("[postgres.settings]\n# (none)\n"));
  TempConfig tmp;
  ConfigInputs inputs;
  inputs.file = tmp.Write(shown);
  auto loaded = LoadConfig(inputs);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(*loaded == Config{});
}

}  // namespace
}  // namespace skydb

namespace skydb {
namespace {

TEST(ConfigRenderTest, SecretsAreNeverShown) {
  ConfigInputs inputs;
  inputs.flags = {{"resp.requirepass", "hunter2-secret"}};
  auto loaded = LoadConfigWithOrigins(inputs);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->config.resp.requirepass, "hunter2-secret");
  std::string shown = RenderConfigToml(*loaded);
  EXPECT_EQ(shown.find("hunter2-secret"), std::string::npos);
  EXPECT_NE(shown.find("requirepass = \"<redacted>\""), std::string::npos);
}

}  // namespace
}  // namespace skydb

namespace skydb {
namespace {

// Found by config_file_fuzz: an empty entry name reached the loader as the whole table's value
// and threw std::bad_variant_access (the process aborted).
TEST(ConfigFileTest, EmptySettingNameIsAnErrorNotACrash) {
  TempConfig tmp;
  ConfigInputs inputs;
  inputs.file = tmp.Write("[postgres.settings]\nwork_mem = \"8MB\"\n\"\" = 500\n");
  auto loaded = LoadConfig(inputs);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.error().message,
              HasSubstr(inputs.file + ":3: postgres.settings has an entry with an empty name"));
}

// A password that is the wrong value is still a password: every error path redacts it.
TEST(ConfigErrorTest, SecretsAreRedactedInErrors) {
  TempConfig tmp;
  ConfigInputs from_file;
  from_file.file = tmp.Write("[resp]\nrequirepass = 98765432123\n");
  auto file_error = LoadConfig(from_file);
  ASSERT_FALSE(file_error.ok());
  EXPECT_THAT(file_error.error().message, HasSubstr("resp.requirepass = <redacted> must be"));
  EXPECT_EQ(file_error.error().message.find("98765432123"), std::string::npos);

  ConfigInputs typo;
  typo.flags = {{"resp.requirepas", "hunter2-secret"}};
  auto typo_error = LoadConfig(typo);
  ASSERT_FALSE(typo_error.ok());
  EXPECT_THAT(typo_error.error().message, HasSubstr("did you mean 'resp.requirepass'?"));
  EXPECT_THAT(typo_error.error().message, HasSubstr("--set resp.requirepas=<redacted>"));
  EXPECT_EQ(typo_error.error().message.find("hunter2-secret"), std::string::npos);

  ConfigInputs not_secret;  // the control: other values are shown, so redaction is deliberate
  not_secret.flags = {{"log.levle", "verbose-value"}};
  auto shown_error = LoadConfig(not_secret);
  ASSERT_FALSE(shown_error.ok());
  EXPECT_THAT(shown_error.error().message, HasSubstr("verbose-value"));
}

}  // namespace
}  // namespace skydb
