// Every supported PostgreSQL major, end to end (docs/bundles.md, "Supported majors"): Debian's
// 15 and relocatable builds of 14, 16, 17 and 18 (tests/integration/pg_fixtures.h) are each
// staged into a bundle, verified, extracted and served from, and the behaviours that depend on
// the server's major are exercised on each: initdb and the rendered settings, the migrations,
// the session store's SQL (SET/GET through a restart), the app's role and database, WAL
// archiving through `skydb archive-wal`, a killed postmaster restarted, a clean stop and a
// restart that reuses the cluster, and `skydb run` handing the app its database. The rest of
// the integration suites run on Debian's 15 only: they exercise skydb's own code paths, which
// do not change with the server's major, and several need Debian's client tools.
//
// Also: a relocatable bundle is deterministic, the six-binary layout of Sky's bundles stages
// with its dump tools, a skydb with a relocatable bundle embedded serves from it, and a major
// outside the supported range is refused naming the range. Root; the cluster runs as
// SKYDB_TEST_USER.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "base/strings.h"
#include "bundle/deps.h"
#include "cli_support.h"
#include "pg_fixtures.h"
#include "skydb/bundle.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

namespace fs = std::filesystem;

// Every shared object the process maps comes from `inside` or is glibc's: the bundle's
// binaries run on its own libraries, found through their RUNPATH, not on the host's.
void ExpectMapsOnlyFrom(pid_t pid, const std::string& inside) {
  std::string maps = ReadAll("/proc/" + std::to_string(pid) + "/maps");
  ASSERT_FALSE(maps.empty()) << "cannot read the maps of " << pid;
  int objects = 0;
  for (const auto& line : Split(maps, '\n')) {
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find(".so") == std::string::npos && path.find("/bin/") == std::string::npos) continue;
    ++objects;
    std::string name = path.substr(path.rfind('/') + 1);
    bool ok = StartsWith(path, inside + "/") || bundle::IsBaseCLibrary(name) ||
              StartsWith(path, "/usr/lib/locale/");
    EXPECT_TRUE(ok) << "pid " << pid << " maps " << path << ", outside " << inside;
  }
  EXPECT_GT(objects, 2);
}

class PgMajorTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the cluster runs as " << TestUser() << ")";
    major_ = std::to_string(GetParam());
    dir_ = root_.Dir("d");
    // The build staged Debian's 15 and the relocatable 18; the others are staged here.
    if (GetParam() == 15) {
      bundle_ = SKYDB_TEST_BUNDLE;
    } else if (GetParam() == 18) {
      bundle_ = SKYDB_PG18_BUNDLE;
    } else {
      bundle_ = root_.Dir("pg" + major_ + ".skydb-bundle");
      ASSERT_EQ(StageBundle(TreeFor(GetParam()), bundle_), "");
    }
  }

  std::vector<std::string> Sets() const {
    return {"postgres.bundle=" + bundle_, "postgres.sources=bundle", "postgres.version=" + major_};
  }

  std::unique_ptr<DaemonProcess> ServeReady(std::vector<std::string> more = {}) {
    auto sets = Sets();
    sets.insert(sets.end(), more.begin(), more.end());
    auto d = StartEmbedded(dir_, sets);
    EXPECT_TRUE(WaitDaemonReady(*d, dir_, seconds(120))) << d->Log();
    EXPECT_TRUE(WaitForPong(StoreSocket(dir_), seconds(30)));
    return d;
  }

  void ExpectSkydbRunServesTheApp();

  // A repository the cluster user owns, for WAL archiving.
  std::string MakeRepository() {
    std::string repo = root_.Dir("repo");
    EXPECT_EQ(::mkdir(repo.c_str(), 0700), 0);
    auto user = LookupUser(TestUser());
    EXPECT_TRUE(user.ok());
    if (user.ok()) EXPECT_EQ(::chown(repo.c_str(), user->uid, user->gid), 0);
    return repo;
  }

  TestRoot root_;
  std::string major_, dir_, bundle_;
};

TEST_P(PgMajorTest, BundleServesStoreAppArchiveAndRunThroughACrashAndARestart) {
  auto verified = RunCommand({SKYDB_BINARY, "bundle", "verify", bundle_});
  ASSERT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_THAT(verified.out, HasSubstr("ok, every file matches its manifest: PostgreSQL " + major_));

  std::string repo = MakeRepository();
  auto d = ServeReady({"backup.repository=" + repo, "backup.schedule=0"});
  EXPECT_TRUE(d->WaitLogContains("skydb ready: PostgreSQL " + major_ + ".", seconds(10)))
      << d->Log();
  auto status = ReadStatus(dir_);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(StartsWith(status->bin_dir, dir_ + "/runtime/" + major_ + ".")) << status->bin_dir;
  EXPECT_EQ(std::string(Trim(ReadAll(dir_ + "/pgdata/PG_VERSION"))), major_);
  ExpectMapsOnlyFrom(status->postgres_pid, dir_ + "/runtime");

  // The store's SQL on this major.
  std::string socket = StoreSocket(dir_);
  EXPECT_EQ(RedisCli(socket, {"SET", "session:1", "value-" + major_}), "OK");
  EXPECT_EQ(RedisCli(socket, {"GET", "session:1"}), "value-" + major_);
  // The app's role and database.
  std::string run = dir_ + "/run";
  EXPECT_EQ(PsqlAs(run, "app", "app",
                   "CREATE TABLE notes(id int); INSERT INTO notes VALUES (1), (2); "
                   "SELECT current_user || ' ' || current_setting('server_version_num')::int / "
                   "10000"),
            "app " + major_);
  EXPECT_THAT(PsqlAs(run, "app", "postgres", "SELECT 1"), HasSubstr("ERROR"));
  // archive_command (skydb archive-wal) with this major's WAL.
  EXPECT_TRUE(SwitchWalAndWaitArchived(run, repo)) << d->Log();

  // A killed postmaster is restarted.
  ASSERT_GT(status->postgres_pid, 0);
  ASSERT_EQ(::kill(status->postgres_pid, SIGKILL), 0);
  EXPECT_TRUE(WaitReady(dir_, seconds(60), 1, d->pid())) << d->Log();
  EXPECT_EQ(RedisCli(socket, {"GET", "session:1"}), "value-" + major_);
  EXPECT_EQ(d->StopCleanly(seconds(30)), "");

  // The next start reuses the cluster, and a clean stop left nothing to recover.
  auto again = ServeReady({"backup.repository=" + repo, "backup.schedule=0"});
  EXPECT_FALSE(again->LogContains("database system was interrupted")) << again->Log();
  EXPECT_EQ(RedisCli(socket, {"GET", "session:1"}), "value-" + major_);
  EXPECT_EQ(PsqlAs(run, "app", "app", "SELECT count(*) FROM notes"), "2");
  EXPECT_FALSE(again->LogContains("initializing a new PostgreSQL cluster")) << again->Log();
  EXPECT_EQ(again->StopCleanly(seconds(30)), "");
  ExpectSkydbRunServesTheApp();
}

// `skydb run` on the same cluster: the app gets its database and the store.
void PgMajorTest::ExpectSkydbRunServesTheApp() {
  std::string script = std::string(kDebian15) +
                       "/bin/psql -X -Atc \"SELECT 'server ' || "
                       "current_setting('server_version_num')::int / 10000 || ' as ' || "
                       "current_user\" \"$DATABASE_URL\" && /usr/bin/redis-cli -s "
                       "\"$SKY_LIVE_STORE_PATH\" SET from-app yes";
  std::vector<std::string> args;
  for (const auto& set : Sets()) args.insert(args.end(), {"--set", set});
  for (const char* a : {"run", "--data-dir"}) args.push_back(a);
  args.push_back(dir_);
  args = AsServiceUser(args);
  args.insert(args.end(), {"--", "/bin/sh", "-c", script});
  DaemonProcess d(args);
  auto exit = d.WaitExit(seconds(120));
  ASSERT_TRUE(exit.has_value()) << d.Log();
  EXPECT_EQ(exit->exit_code, 0) << d.Log();
  EXPECT_THAT(d.Log(), HasSubstr("server " + major_ + " as app"));
  EXPECT_THAT(d.Log(), HasSubstr("OK\n")) << "the app's SET through SKY_LIVE_STORE_PATH";
  EXPECT_EQ(RedisCli(StoreSocket(dir_), {"PING"}).find("PONG"), std::string::npos)
      << "skydb run stopped with its app";
}

INSTANTIATE_TEST_SUITE_P(Majors, PgMajorTest, ::testing::Values(14, 15, 16, 17, 18),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "pg" + std::to_string(info.param);
                         });

class RelocatableBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the cluster runs as " << TestUser() << ")";
  }
  void TearDown() override {
    if (!trees_.empty()) fs::remove_all(trees_);
  }
  // A directory for a PostgreSQL tree that `bundle stage`, run as root, executes from: root
  // runs only programs whose every directory is root's and writable by no one else, which no
  // directory under /tmp is (docs/security.md). Under the fixtures' cache, removed at the end.
  std::string TreeDir(const std::string& name) {
    if (trees_.empty()) {
      fs::create_directories("/var/cache/skydb");
      std::string tmpl = "/var/cache/skydb/test-trees-XXXXXX";
      if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp under /var/cache/skydb";
      trees_ = tmpl;
    }
    return trees_ + "/" + name;
  }
  TestRoot root_;
  std::string trees_;
};

TEST_F(RelocatableBundleTest, StagingATreeWithoutPgConfigIsDeterministic) {
  // The build staged the same tree the same way (tests/integration/CMakeLists.txt).
  std::string tree = RelocatableTree(18);
  std::string a = root_.Dir("a.skydb-bundle"), b = SKYDB_PG18_BUNDLE;
  ASSERT_EQ(StageBundle(tree, a), "");
  EXPECT_TRUE(ReadAll(a) == ReadAll(b)) << "two stagings of one tree differ";
  auto fs = NewRealFileSystem();
  auto archive = BundleArchive::FromFile(*fs, a);
  ASSERT_TRUE(archive.ok());
  auto manifest = VerifyBundle(*archive);
  ASSERT_TRUE(manifest.ok()) << manifest.error().message;
  auto version = RunCommand({tree + "/bin/postgres", "--version"});
  EXPECT_EQ(manifest->pg_version_line, std::string(Trim(version.out)));
  EXPECT_EQ(manifest->bin_dir, "bin");
  EXPECT_EQ(manifest->source, tree);
  std::vector<std::string> paths;
  for (const auto& f : manifest->files) paths.push_back(f.path);
  for (const char* want : {"bin/postgres", "bin/initdb", "bin/pg_ctl", "lib/postgresql/plpgsql.so",
                           "share/postgresql/postgres.bki", "share/postgresql/timezone/UTC",
                           "skydb-libs/libicuuc.so.60", "skydb-libs/libssl.so.1.1"}) {
    EXPECT_THAT(paths, ::testing::Contains(want));
  }
}

TEST_F(RelocatableBundleTest, MissingServerBinaryOfATreeIsNamed) {
  std::string tree = RelocatableTree(18);
  std::string partial = TreeDir("partial");
  fs::create_directories(partial + "/bin");
  fs::copy(tree + "/lib", partial + "/lib", fs::copy_options::recursive);
  fs::copy(tree + "/share", partial + "/share", fs::copy_options::recursive);
  fs::copy_file(tree + "/bin/postgres", partial + "/bin/postgres");
  fs::copy_file(tree + "/bin/pg_ctl", partial + "/bin/pg_ctl");
  std::string out = StageBundle(partial, root_.Dir("x.skydb-bundle"));
  EXPECT_THAT(out,
              HasSubstr(partial + "/bin lacks initdb; a relocatable tree needs at least postgres, "
                                  "initdb and pg_ctl"));
}

// Sky's bundles: postgres, initdb, pg_ctl, pg_dump, pg_dumpall, pg_restore in bin/ with
// $ORIGIN/../lib RUNPATHs, no pg_config. Built here from the relocatable 15 and Debian's 15
// dump tools (with the library they need that the tree lacks).
TEST_F(RelocatableBundleTest, SixBinaryLayoutStagesWithItsDumpToolsAndServes) {
  std::string tree = TreeDir("six");
  fs::copy(RelocatableTree(15), tree,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  for (const char* tool : {"pg_dump", "pg_dumpall", "pg_restore"}) {
    fs::copy_file(std::string(kDebian15) + "/bin/" + tool, tree + "/bin/" + tool);
    auto patched =
        RunCommand({"/usr/bin/patchelf", "--set-rpath", "$ORIGIN/../lib", tree + "/bin/" + tool});
    ASSERT_EQ(patched.exit_code, 0) << patched.err;
  }
  fs::copy_file(fs::canonical("/usr/lib/x86_64-linux-gnu/libcrypto.so.3"),
                tree + "/lib/libcrypto.so.3");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tree + "/bin")) names.push_back(e.path().filename());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("postgres", "initdb", "pg_ctl", "pg_dump",
                                                     "pg_dumpall", "pg_restore"));
  std::string bundle = root_.Dir("six.skydb-bundle");
  ASSERT_EQ(StageBundle(tree, bundle), "");
  auto verified = RunCommand({SKYDB_BINARY, "bundle", "verify", bundle});
  ASSERT_EQ(verified.exit_code, 0) << verified.err;

  std::string dir = root_.Dir("d");
  auto d = StartEmbedded(dir, {"postgres.bundle=" + bundle, "postgres.sources=bundle"});
  ASSERT_TRUE(WaitDaemonReady(*d, dir, seconds(120))) << d->Log();
  ASSERT_TRUE(WaitForPong(StoreSocket(dir), seconds(30)));
  EXPECT_TRUE(d->WaitLogContains("skydb ready: PostgreSQL 15.18", seconds(10))) << d->Log();
  EXPECT_EQ(RedisCli(StoreSocket(dir), {"SET", "k", "v"}), "OK");
  // The dump tools run from the extraction, on its libraries, as the cluster's user (root runs
  // nothing from a directory that user owns).
  auto status = ReadStatus(dir);
  ASSERT_TRUE(status.has_value());
  for (const char* tool : {"pg_dump", "pg_dumpall", "pg_restore"}) {
    std::string path = status->bin_dir + "/" + tool;
    auto ran = RunCommand({"/usr/sbin/runuser", "-u", TestUser(), "--", path, "--version"});
    EXPECT_EQ(ran.exit_code, 0) << tool << ": " << ran.err;
    EXPECT_THAT(ran.out, HasSubstr("(PostgreSQL) 15.")) << tool;
    auto ldd = RunCommand({"/usr/sbin/runuser", "-u", TestUser(), "--", "/usr/bin/ldd", path});
    EXPECT_THAT(ldd.out, HasSubstr(dir + "/runtime/")) << ldd.out;
    EXPECT_THAT(ldd.out, ::testing::Not(HasSubstr("not found"))) << ldd.out;
  }
  EXPECT_EQ(d->StopCleanly(seconds(30)), "");
}

TEST_F(RelocatableBundleTest, EmbeddedRelocatableBundleServes) {
  std::string dir = root_.Dir("d");
  auto listed = RunCommand({SKYDB_EMBEDDED_PG18_BINARY, "bundle", "list", "--data-dir", dir});
  EXPECT_THAT(listed.out, HasSubstr("embedded: PostgreSQL 18."));
  DaemonProcess d(SKYDB_EMBEDDED_PG18_BINARY, {"--set", "postgres.sources=bundle", "serve",
                                               "--embed", "--data-dir", dir, "--user", TestUser()});
  ASSERT_TRUE(WaitDaemonReady(d, dir, seconds(120))) << d.Log();
  ASSERT_TRUE(WaitForPong(StoreSocket(dir), seconds(30)));
  EXPECT_TRUE(d.WaitLogContains("from bundle: embedded (PostgreSQL 18.", seconds(10))) << d.Log();
  EXPECT_EQ(RedisCli(StoreSocket(dir), {"SET", "k", "v"}), "OK");
  EXPECT_EQ(d.StopCleanly(seconds(30)), "");
}

// A build that reports a major skydb does not support: refused before anything is written.
TEST_F(RelocatableBundleTest, UnsupportedMajorIsRefusedNamingTheSupportedRange) {
  std::string bin = root_.Dir("pg19/bin");
  fs::create_directories(bin);
  for (const char* name : {"postgres", "initdb", "pg_ctl"}) {
    std::ofstream(bin + "/" + name) << "#!/bin/sh\necho 'postgres (PostgreSQL) 19.0'\n";
    ::chmod((bin + "/" + name).c_str(), 0755);
  }
  std::string dir = root_.Dir("d");
  auto served = RunCommand(AsServiceUser({SKYDB_BINARY, "serve", "--embed", "--data-dir", dir,
                                          "--set", "postgres.bin_dir=" + bin}),
                           60);
  EXPECT_NE(served.exit_code, 0);
  EXPECT_THAT(served.out + served.err,
              HasSubstr("PostgreSQL 19.0 is not supported (skydb supports 14 to 18)"));
  EXPECT_FALSE(fs::exists(dir + "/pgdata"));
}

// app.extensions: a bundle staged from Debian's 15 carries a third-party extension package's
// files (postgresql-15-ip4r: a type with GiST index support, as pgvector's vector has), and
// skydb creates it and pgcrypto in the app's database, with the system's PostgreSQL hidden in a
// mount namespace; the app's role uses both, through an index.
TEST_F(RelocatableBundleTest, BundleCarriesAnExtensionPackageAndTheAppUsesIt) {
  ASSERT_TRUE(fs::exists("/usr/share/postgresql/15/extension/ip4r.control"))
      << "tools/install-deps.sh installs postgresql-15-ip4r";
  // Staged by the build from /usr/lib/postgresql/15, after tools/install-deps.sh.
  std::string bundle = SKYDB_TEST_BUNDLE;
  std::string dir = root_.Dir("d");
  std::string script =
      "mount --make-rprivate / && mount -t tmpfs none /usr/lib/postgresql && "
      "mount -t tmpfs none /usr/share/postgresql && exec " +
      std::string(SKYDB_BINARY) + " --set postgres.bundle=" + bundle +
      " --set postgres.sources=bundle --set 'app.extensions=pgcrypto,ip4r' serve --embed "
      "--data-dir " +
      dir + " --user " + TestUser();
  DaemonProcess d("/usr/bin/unshare", {"-m", "/bin/sh", "-c", script});
  ASSERT_TRUE(WaitDaemonReady(d, dir, seconds(120))) << d.Log();
  ASSERT_TRUE(WaitForPong(StoreSocket(dir), seconds(30)));
  EXPECT_THAT(d.Log(), HasSubstr("created the extension ip4r in the app's database app"));
  std::string run = dir + "/run";
  EXPECT_EQ(PsqlAs(run, "app", "app",
                   "CREATE TABLE nets(r ip4r); INSERT INTO nets SELECT ('10.' || (i / 256) || '.' "
                   "|| (i % 256) || '.0/24')::ip4r FROM generate_series(0, 20000) i; CREATE INDEX "
                   "ON nets USING gist(r); ANALYZE nets; SELECT count(*) FROM nets WHERE r >>= "
                   "'10.3.7.9'"),
            "1");
  EXPECT_THAT(PsqlAs(run, "app", "app",
                     "SET enable_seqscan = off; EXPLAIN SELECT * FROM nets WHERE r >>= "
                     "'10.3.7.9'"),
              HasSubstr("Index"));
  EXPECT_EQ(PsqlAs(run, "app", "app", "SELECT encode(digest('skydb', 'sha256'), 'hex')"),
            "2f125c42884f8eb5c95478a24f1ac4825e634b0648261de7ebee6f0088156d36");
  EXPECT_EQ(d.StopCleanly(seconds(30)), "");
}

// An extension the binaries lack stops the start, naming what to install.
TEST_F(RelocatableBundleTest, MissingExtensionIsRefusedNamingThePackage) {
  std::string dir = root_.Dir("d");
  auto d = StartEmbedded(
      dir, {"postgres.bin_dir=" + RelocatableTree(18) + "/bin", "app.extensions=pgcrypto,vector"});
  auto exit = d->WaitExit(seconds(120));
  ASSERT_TRUE(exit.has_value()) << d->Log();
  EXPECT_NE(exit->exit_code, 0);
  EXPECT_THAT(d->Log(), HasSubstr("app.extensions lists vector, which PostgreSQL 18.4 does not "
                                  "have: install its package (Debian: postgresql-18-pgvector"));
}

}  // namespace
}  // namespace skydb::testing
