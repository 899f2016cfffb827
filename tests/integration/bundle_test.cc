// Bundles from Debian's PostgreSQL 15, end to end: staging is deterministic, `bundle verify`
// catches a file that differs from its manifest, the extracted binaries load only bundled
// libraries and glibc, a flipped byte is refused with nothing left behind, concurrent
// extractions happen once, and a skydb with the bundle embedded serves with the system's
// PostgreSQL hidden in a mount namespace.
//
// The bundle under test is staged once at build time (tests/integration/CMakeLists.txt) and
// embedded into skydb_embedded; this binary stages once more, to compare.
#include "skydb/bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/strings.h"
#include "bundle/archive.h"
#include "bundle/deps.h"
#include "bundle/elf.h"
#include "cli_support.h"
#include "skydb/env.h"
#include "supervisor_support.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

CommandOutput RunCommand(std::vector<std::string> argv, seconds timeout = seconds(120)) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.env["SKYDB_CONFIG"] = "";
  spec.timeout = timeout;
  auto ran = NewRealProcessRunner()->Run(spec);
  if (!ran.ok()) return {-1, 0, "", ran.error().message};
  return *ran;
}

std::string ReadAll(const std::string& path) {
  auto data = NewRealFileSystem()->ReadFile(path);
  return data.ok() ? *data : "";
}

class BundleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto fs = NewRealFileSystem();
    auto archive = BundleArchive::FromFile(*fs, SKYDB_TEST_BUNDLE);
    ASSERT_TRUE(archive.ok()) << "the build stages " << SKYDB_TEST_BUNDLE;
    archive_ = new BundleArchive(*archive);
    auto manifest = ReadBundleManifest(*archive_);
    ASSERT_TRUE(manifest.ok()) << manifest.error().message;
    manifest_ = new BundleManifest(*manifest);
  }
  static void TearDownTestSuite() {
    delete archive_;
    delete manifest_;
  }

  static BundleArchive* archive_;
  static BundleManifest* manifest_;
  TestRoot root_;
};
BundleArchive* BundleTest::archive_ = nullptr;
BundleManifest* BundleTest::manifest_ = nullptr;

TEST_F(BundleTest, ManifestDescribesDebiansPostgres15) {
  auto version = RunCommand({SKYDB_TEST_PG_DIR "/bin/postgres", "--version"});
  EXPECT_EQ(manifest_->pg_version_line, std::string(Trim(version.out)));
  EXPECT_EQ(manifest_->source, SKYDB_TEST_PG_DIR);
  EXPECT_EQ(manifest_->bin_dir, "lib/postgresql/15/bin");
  EXPECT_FALSE(manifest_->glibc_baseline.empty());
  std::vector<std::string> paths;
  for (const auto& f : manifest_->files) paths.push_back(f.path);
  for (const char* want :
       {"lib/postgresql/15/bin/postgres", "lib/postgresql/15/bin/initdb",
        "lib/postgresql/15/bin/pg_ctl", "lib/postgresql/15/bin/pg_controldata",
        "lib/postgresql/15/bin/pg_isready", "lib/postgresql/15/bin/pg_upgrade",
        "lib/postgresql/15/bin/psql", "lib/postgresql/15/lib/plpgsql.so",
        "lib/postgresql/15/lib/dict_snowball.so", "share/postgresql/15/postgres.bki",
        "share/postgresql/15/timezonesets/Default", "share/postgresql/15/extension/plpgsql.control",
        "skydb-libs/libpq.so.5"}) {
    EXPECT_THAT(paths, ::testing::Contains(want));
  }
  for (const auto& p : paths) {
    EXPECT_FALSE(bundle::IsBaseCLibrary(p.substr(p.rfind('/') + 1))) << p;
  }
  std::printf("bundle: %zu files, %.1f MiB uncompressed, %.1f MiB archive\n",
              manifest_->files.size(), manifest_->total_size / 1048576.0,
              archive_->bytes().size() / 1048576.0);
}

TEST_F(BundleTest, StagingTwiceGivesAByteIdenticalArchive) {
  // The first staging (at build time) had no terminal; this one runs under script(1) to get
  // one, so it also shows the progress line.
  std::string again = root_.Dir("again.skydb-bundle");
  std::string command =
      std::string(SKYDB_BINARY) + " bundle stage --from " SKYDB_TEST_PG_DIR " --out " + again;
  auto start = std::chrono::steady_clock::now();
  auto staged = RunCommand({"/usr/bin/script", "-qec", command, "/dev/null"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(staged.exit_code, 0) << staged.out << staged.err;
  std::printf("bundle stage took %.1f s\n", took);
  EXPECT_THAT(staged.out, HasSubstr("staged " + again + ": PostgreSQL " + manifest_->pg_version));
  EXPECT_THAT(staged.out, HasSubstr("\rarchive  " + std::to_string(manifest_->files.size() + 1) +
                                    "/" + std::to_string(manifest_->files.size() + 1)));
  EXPECT_TRUE(ReadAll(again) == archive_->bytes()) << "restaged archive differs";
}

TEST_F(BundleTest, VerifyAcceptsTheBundleAndRejectsAFileThatDiffersFromTheManifest) {
  auto good = RunCommand({SKYDB_BINARY, "bundle", "verify", SKYDB_TEST_BUNDLE});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_THAT(good.out, HasSubstr("ok, every file matches its manifest"));

  // The same manifest over one changed file (same size, one byte different).
  const std::string victim = "share/postgresql/15/postgresql.conf.sample";
  std::vector<bundle::ArchiveEntry> entries;
  Status read =
      bundle::ReadArchive(archive_->bytes(), "bundle", 0, [&](const bundle::ArchiveMember& m) {
        std::string data(m.data);
        if (m.name == victim) data[10] = static_cast<char>(data[10] ^ 0x20);
        entries.push_back({m.name, "", data, m.mode});
        return Ok();
      });
  ASSERT_TRUE(read.ok()) << read.error().message;
  std::string tampered = root_.Dir("tampered.skydb-bundle");
  ASSERT_TRUE(bundle::WriteArchive(tampered, entries, 1, *NewRealFileSystem(), nullptr).ok());
  auto bad = RunCommand({SKYDB_BINARY, "bundle", "verify", tampered});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "skydb bundle verify: " + tampered + ": SHA-256 of " + victim +
                         " does not match the manifest\n");
}

TEST_F(BundleTest, UserErrorsSayWhatIsWrongAndWhatToDo) {
  auto stage = RunCommand({SKYDB_BINARY, "bundle", "stage", "--from", root_.path(), "--out",
                           root_.Dir("x.skydb-bundle")});
  EXPECT_EQ(stage.exit_code, 1);
  EXPECT_EQ(stage.err, "skydb bundle stage: " + root_.path() +
                           "/bin/postgres not found: --from must be a PostgreSQL installation "
                           "directory such as /usr/lib/postgresql/15, or a relocatable tree with "
                           "bin/, lib/ and share/\n");
  auto verify = RunCommand({SKYDB_BINARY, "bundle", "verify", root_.Dir("missing")});
  EXPECT_EQ(verify.exit_code, 1);
  EXPECT_THAT(verify.err, HasSubstr("skydb bundle verify: bundle file: "));
  EXPECT_THAT(verify.err, HasSubstr(root_.Dir("missing")));
  auto extract = RunCommand({SKYDB_BINARY, "bundle", "extract", "--data-dir", root_.Dir("d")});
  EXPECT_EQ(extract.exit_code, 1);
  EXPECT_EQ(extract.err,
            "skydb bundle extract: no bundle: this skydb has none embedded and "
            "postgres.bundle is not set\n");
  auto list = RunCommand({SKYDB_BINARY, "bundle", "list", "--data-dir", root_.Dir("d")});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out,
            "embedded: none (built without -DSKYDB_EMBED_BUNDLE)\n"
            "configured (postgres.bundle): none\n"
            "extracted under " +
                root_.Dir("d") + "/runtime: none\n");
}

// ldd of every extracted ELF file resolves each library inside the extraction or to glibc.
TEST_F(BundleTest, ExtractedBinariesLoadOnlyBundledLibrariesAndGlibc) {
  auto fs = NewRealFileSystem();
  auto out = NewRealBundleOutput();
  auto start = std::chrono::steady_clock::now();
  auto extraction = ExtractBundle(*archive_, root_.Dir("runtime"), *out, *fs);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(extraction.ok()) << extraction.error().message;
  std::printf("extraction took %.2f s\n", took);
  int checked = 0;
  for (const auto& f : manifest_->files) {
    std::string path = extraction->dir + "/" + f.path;
    if (!bundle::LooksLikeElf(ReadAll(path).substr(0, 4))) continue;
    auto ldd = RunCommand({"/usr/bin/ldd", path}, seconds(30));
    ASSERT_EQ(ldd.exit_code, 0) << path << ": " << ldd.err;
    for (const auto& raw : Split(ldd.out, '\n')) {
      std::string line(Trim(raw));
      EXPECT_EQ(line.find("not found"), std::string::npos) << f.path << ": " << line;
      size_t arrow = line.find(" => ");
      if (arrow == std::string::npos) continue;  // linux-vdso, the loader itself
      std::string name = line.substr(0, arrow);
      std::string target = line.substr(arrow + 4, line.find(" (") - arrow - 4);
      bool inside = target.rfind(extraction->dir + "/", 0) == 0;
      EXPECT_TRUE(inside || bundle::IsBaseCLibrary(name)) << f.path << ": " << line;
    }
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST_F(BundleTest, FlippedByteIsRefusedAtStartWithNothingPartial) {
  std::string bytes(archive_->bytes());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  std::string flipped = root_.Dir("flipped.skydb-bundle");
  ASSERT_TRUE(NewRealBundleOutput()->WriteFile(flipped, bytes, 0644).ok());
  std::string dir = root_.Dir("d");
  std::vector<std::string> argv = {SKYDB_BINARY,
                                   "--set",
                                   "postgres.bundle=" + flipped,
                                   "--set",
                                   "postgres.sources=bundle",
                                   "serve",
                                   "--embed",
                                   "--data-dir",
                                   dir};
  if (::geteuid() == 0) argv.insert(argv.end(), {"--user", TestUser()});
  auto run = RunCommand(argv);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.out + run.err, HasSubstr("cannot start: bundle " + flipped +
                                           ": refused, nothing was extracted: " + flipped +
                                           " is damaged: its SHA-256 does not match"));
  std::vector<std::string> left;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/runtime", ec)) {
    if (e.path().filename() != ".extract.lock") left.push_back(e.path().filename());
  }
  EXPECT_THAT(left, ::testing::IsEmpty());
}

TEST_F(BundleTest, TwoConcurrentExtractionsOfOneDirExtractOnce) {
  std::string dir = root_.Dir("d");
  std::vector<std::string> argv = {
      SKYDB_BINARY, "--set",   std::string("postgres.bundle=") + SKYDB_TEST_BUNDLE,
      "bundle",     "extract", "--data-dir",
      dir};
  CommandOutput a, b;
  std::thread other([&] { b = RunCommand(argv); });
  a = RunCommand(argv);
  other.join();
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  std::string both = a.out + b.out;
  std::string name = ExtractionName(*manifest_, archive_->Sha256());
  EXPECT_THAT(both, HasSubstr("extracted into " + dir + "/runtime/" + name));
  EXPECT_THAT(both, HasSubstr("reused the verified extraction " + dir + "/runtime/" + name));
}

// The pin applies to the embedded bundle: a mismatch is refused before anything is extracted.
TEST_F(BundleTest, VersionPinRejectsTheEmbeddedBundleWithoutExtractingIt) {
  std::string dir = root_.Dir("d");
  std::vector<std::string> argv = {SKYDB_EMBEDDED_BINARY,
                                   "--set",
                                   "postgres.version=16",
                                   "--set",
                                   "postgres.sources=bundle",
                                   "serve",
                                   "--embed",
                                   "--data-dir",
                                   dir};
  if (::geteuid() == 0) argv.insert(argv.end(), {"--user", TestUser()});
  auto run = RunCommand(argv);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.out + run.err,
              HasSubstr("(not extracted) (bundle): PostgreSQL " + manifest_->pg_version +
                        " does not match the pin postgres.version = \"16\""));
  EXPECT_FALSE(NewRealFileSystem()->Exists(dir + "/runtime/" +
                                           ExtractionName(*manifest_, archive_->Sha256())));
}

// A real full disk: runtime/ is an 8 MiB tmpfs (in a private mount namespace) and the bundle
// unpacks to far more.
TEST_F(BundleTest, FullDiskDuringExtractionCleansUpAndSaysSo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (mount namespace)";
  std::string dir = root_.Dir("d");
  ASSERT_TRUE(NewRealBundleOutput()->MakeDirs(dir + "/runtime", 0700).ok());
  std::string script =
      "mount --make-rprivate / && mount -t tmpfs -o size=8m none " + dir + "/runtime && " +
      SKYDB_BINARY + " --set postgres.bundle=" + SKYDB_TEST_BUNDLE + " bundle extract --data-dir " +
      dir + "; echo \"exit=$?\"; echo left: $(ls -A " + dir + "/runtime)";
  auto run = RunCommand({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script});
  EXPECT_THAT(run.out, HasSubstr("exit=1\nleft: .extract.lock\n")) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("ran out of disk space while extracting; the partial extraction "
                                 "was removed; free at least " +
                                 std::to_string((manifest_->total_size >> 20) + 1) + " MiB in " +
                                 dir + "/runtime and start again"));
  EXPECT_THAT(run.err, HasSubstr("no space left on device"));
}

// The embedded binary, in a mount namespace where /usr/lib/postgresql and
// /usr/share/postgresql are empty, with the bundle the only allowed source.
TEST_F(BundleTest, EmbeddedBundleServesWithSystemPostgresHidden) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root (mount namespace; cluster runs as " << TestUser() << ")";
  std::string dir = root_.Dir("d");
  auto listed = RunCommand({SKYDB_EMBEDDED_BINARY, "bundle", "list", "--data-dir", dir});
  EXPECT_THAT(listed.out, HasSubstr("embedded: PostgreSQL " + manifest_->pg_version));
  std::string script =
      "mount --make-rprivate / && mount -t tmpfs none /usr/lib/postgresql && "
      "mount -t tmpfs none /usr/share/postgresql && "
      "if [ -e /usr/lib/postgresql/15/bin/postgres ]; then exit 97; fi && exec " +
      std::string(SKYDB_EMBEDDED_BINARY) +
      " --set postgres.sources=bundle --set supervisor.backoff_initial=100ms serve --embed "
      "--data-dir " +
      dir + " --user " + TestUser();
  auto start = std::chrono::steady_clock::now();
  DaemonProcess d("/usr/bin/unshare", {"-m", "/bin/sh", "-c", script});
  auto deadline = start + seconds(120);
  while (!WaitReady(dir, milliseconds(100), 0, d.pid()) &&
         std::chrono::steady_clock::now() < deadline) {
    if (d.WaitExit(milliseconds(1))) break;
  }
  ASSERT_TRUE(WaitReady(dir, milliseconds(10), 0, d.pid())) << d.Log();
  std::printf("embedded start (extract + initdb + ready) took %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::string name = ExtractionName(*manifest_, archive_->Sha256());
  std::string bin_dir = dir + "/runtime/" + name + "/lib/postgresql/15/bin";
  auto status = ReadStatus(dir);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->bin_dir, bin_dir);
  // The banner is logged just after the status file says ready.
  std::string banner =
      "binaries " + bin_dir + " from bundle: embedded (PostgreSQL " + manifest_->pg_version + ")";
  auto logged = std::chrono::steady_clock::now() + seconds(10);
  while (!d.LogContains(banner) && std::chrono::steady_clock::now() < logged) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_THAT(d.Log(), HasSubstr(banner));
  // The bundle's psql is under DIR/runtime, the cluster user's: root does not run it.
  EXPECT_THAT(Psql(dir, "SELECT 1"), HasSubstr("root does not run " + bin_dir + "/psql"));
  std::string version = PsqlAsTestUser(dir, "SELECT version()");
  EXPECT_EQ(version.rfind("PostgreSQL " + manifest_->pg_version + " ", 0), 0U) << version;
  // The manifest's `postgres --version` line is what the server reports about itself.
  // "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)" → "PostgreSQL 15.20 (Debian …)".
  std::string line = manifest_->pg_version_line;
  size_t tag = line.find("(PostgreSQL) ");
  ASSERT_NE(tag, std::string::npos) << line;
  EXPECT_EQ(version.rfind("PostgreSQL " + line.substr(tag + 13) + " ", 0), 0U) << version;
  for (pid_t pid : PostgresProcessesOf(dir + "/pgdata")) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    if (!ec) {
      EXPECT_EQ(exe.string().rfind(dir + "/runtime/" + name + "/", 0), 0U) << exe;
    }
  }
  ASSERT_TRUE(d.Signal(SIGTERM).ok());
  auto exit = d.WaitExit(seconds(20));
  ASSERT_TRUE(exit.has_value()) << d.Log();
  EXPECT_EQ(exit->exit_code, 0) << d.Log();
}

}  // namespace
}  // namespace skydb::testing
