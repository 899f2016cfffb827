#include "supervisor/data_dir.h"

#include <gtest/gtest.h>

#include "supervisor_fakes.h"

namespace skydb::supervisor {
namespace {

FileInfo Dir(uint32_t mode) {
  FileInfo info;
  info.type = FileType::kDirectory;
  info.mode = mode;
  return info;
}

TEST(DataDirTest, LayoutUnderRoot) {
  auto l = DataDirLayout::For("/srv/sky/");
  EXPECT_EQ(l.root, "/srv/sky");
  EXPECT_EQ(l.pgdata, "/srv/sky/pgdata");
  EXPECT_EQ(l.run, "/srv/sky/run");
  EXPECT_EQ(l.runtime, "/srv/sky/runtime");
  EXPECT_EQ(l.lock_file, "/srv/sky/skydb.lock");
  EXPECT_EQ(l.status_file, "/srv/sky/run/skydb.status.json");
  EXPECT_EQ(l.store_socket, "/srv/sky/run/skydb.sock");
  EXPECT_EQ(l.postgres_socket, "/srv/sky/run/.s.PGSQL.5432");
  EXPECT_EQ(l.app_env, "/srv/sky/run/app.env");
  EXPECT_EQ(l.app_json, "/srv/sky/run/app.json");
  EXPECT_EQ(l.archive_failure, "/srv/sky/run/archive-failure.txt");
  EXPECT_EQ(l.InRun("http.sock"), "/srv/sky/run/http.sock");
  EXPECT_EQ(l.InRun("/elsewhere/http.sock"), "/elsewhere/http.sock");
}

TEST(DataDirTest, SafeModes) {
  EXPECT_TRUE(CheckDirSafe("/d", Dir(0700)).ok());
  EXPECT_TRUE(CheckDirSafe("/d", Dir(0755)).ok());
  auto group = CheckDirSafe("/d", Dir(0770));
  ASSERT_FALSE(group.ok());
  EXPECT_EQ(group.error().code, ErrorCode::kPermission);
  EXPECT_NE(group.error().message.find("chmod 0700 /d"), std::string::npos);
  EXPECT_FALSE(CheckDirSafe("/d", Dir(0777)).ok());
  FileInfo file;
  file.type = FileType::kRegular;
  EXPECT_EQ(CheckDirSafe("/d", file).error().code, ErrorCode::kConflict);
}

TEST(DataDirTest, PrepareCreatesPrivateDirsAndChownsOnlyInsideWhenDropping) {
  testing::FakeFileSystem fs;
  testing::FakeHostOps host;
  fs.AddDir("/srv", 0755);
  ClusterUser owner{RunAs{"sky", 990, 990, ""}, true};
  auto layout = DataDirLayout::For("/srv/sky");
  ASSERT_TRUE(PrepareDirs(fs, host, layout, owner).ok());
  for (const auto& dir : {layout.root, layout.run, layout.runtime}) {
    ASSERT_TRUE(fs.IsDirectory(dir)) << dir;
    EXPECT_EQ(fs.Stat(dir)->mode, 0700u) << dir;
    EXPECT_EQ(host.chowned[dir], 990u) << dir;
  }
  EXPECT_EQ(host.chowned.count("/srv"), 0u);  // never the parent
  EXPECT_EQ(fs.Stat("/srv")->mode, 0755u);
}

TEST(DataDirTest, PrepareWithoutDropChownsNothing) {
  testing::FakeFileSystem fs;
  testing::FakeHostOps host;
  fs.AddDir("/srv", 0755);
  ASSERT_TRUE(PrepareDirs(fs, host, DataDirLayout::For("/srv/sky"),
                          ClusterUser{RunAs{"me", 1000, 1000, ""}, false})
                  .ok());
  EXPECT_TRUE(host.chowned.empty());
}

TEST(DataDirTest, PrepareRefusesAnUnsafeExistingDir) {
  testing::FakeFileSystem fs;
  testing::FakeHostOps host;
  fs.AddDir("/srv/sky", 0777);
  auto s = PrepareDirs(fs, host, DataDirLayout::For("/srv/sky"), ClusterUser{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("writable by other users"), std::string::npos);
}

// An existing DIR, run/ or runtime/ wider than 0700 (e.g. made by hand with the default umask)
// let other users read the status file; each is set to 0700. Writable ones stay refused.
TEST(DataDirTest, PrepareTightensWideModesToPrivate) {
  testing::FakeFileSystem fs;
  testing::FakeHostOps host;
  fs.AddDir("/srv/sky", 0755);
  fs.AddDir("/srv/sky/run", 0711);
  fs.AddDir("/srv/sky/runtime", 02750);
  auto layout = DataDirLayout::For("/srv/sky");
  ASSERT_TRUE(PrepareDirs(fs, host, layout, ClusterUser{}).ok());
  for (const auto& dir : {layout.root, layout.run, layout.runtime}) {
    EXPECT_EQ(fs.Stat(dir)->mode, 0700u) << dir;
  }
}

TEST(DataDirTest, SkydbEntries) {
  for (const char* own :
       {"skydb.lock", "pgdata", "run", "runtime", "lost+found", ".psql_history", ".bash_history"}) {
    EXPECT_TRUE(IsSkydbEntry(own)) << own;
  }
  // A fresh home directory (skel's .bashrc, .profile) is someone's, not skydb's.
  for (const char* other :
       {"app.db", ".skydb.lock", "pgdata.old", "PGDATA", "", ".bashrc", ".profile"}) {
    EXPECT_FALSE(IsSkydbEntry(other)) << other;
  }
}

TEST(DataDirTest, SharedRunDirIsSearchableAndReadableByTheAppsGroupOnly) {
  testing::FakeFileSystem fs;
  testing::FakeHostOps host;
  fs.AddDir("/srv", 0755);
  fs.AddDir("/srv/sky", 0700);
  auto layout = DataDirLayout::For("/srv/sky");
  RunDirAccess access{NamedGroup{"web", 1234}};
  ASSERT_TRUE(ShareRunDir(fs, host, layout, access).ok());
  EXPECT_EQ(fs.Stat("/srv/sky")->mode, 0710u);
  EXPECT_EQ(fs.Stat("/srv/sky/run")->mode, 0750u);
  EXPECT_EQ(host.chgrped["/srv/sky"], 1234u);
  EXPECT_EQ(host.chgrped["/srv/sky/run"], 1234u);
  // Without the group, both go back to 0700.
  ASSERT_TRUE(ShareRunDir(fs, host, layout, RunDirAccess{}).ok());
  EXPECT_EQ(fs.Stat("/srv/sky")->mode, 0700u);
  EXPECT_EQ(fs.Stat("/srv/sky/run")->mode, 0700u);
}

TEST(DataDirTest, AGroupTheServiceUserIsNotInIsRefusedWithTheFix) {
  testing::FakeFileSystem fs;
  testing::FakeHostOps host;
  fs.AddDir("/srv", 0755);
  fs.AddDir("/srv/sky", 0700);
  host.chown_error = "chown: Operation not permitted";
  auto s = ShareRunDir(fs, host, DataDirLayout::For("/srv/sky"), {NamedGroup{"web", 1234}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("cannot give /srv/sky to the app's group web"),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("usermod -aG web"), std::string::npos);
}

TEST(DataDirTest, PrepareRootCreatesAMissingDirPrivate) {
  testing::FakeFileSystem fs;
  fs.AddDir("/srv", 0755);
  ASSERT_TRUE(PrepareRoot(fs, "/srv/sky").ok());
  EXPECT_EQ(fs.Stat("/srv/sky")->mode, 0700u);
}

TEST(DataDirTest, PrepareRootNamesAFewForeignEntriesAndTouchesNothing) {
  testing::FakeFileSystem fs;
  fs.AddDir("/srv/app", 0755);
  for (const char* name : {"a.db", "b.db", "c.db", "d.db", "e.db"}) {
    fs.AddFile(std::string("/srv/app/") + name, "x");
  }
  fs.AddDir("/srv/app/run", 0700);  // skydb's own names are not quoted
  auto s = PrepareRoot(fs, "/srv/app");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kConflict);
  EXPECT_NE(s.error().message.find("(it holds a.db, b.db, c.db and 2 more)"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(fs.Stat("/srv/app")->mode, 0755u);
}

// The read-only half (for `skydb doctor`): the same verdicts, nothing created or changed.
TEST(DataDirTest, CheckDataDirChangesNothing) {
  testing::FakeFileSystem fs;
  fs.AddDir("/srv", 0755);
  EXPECT_TRUE(CheckDataDir(fs, "/srv/sky").ok());
  EXPECT_FALSE(fs.Exists("/srv/sky"));
  fs.AddDir("/srv/sky", 0755);
  fs.AddDir("/srv/sky/pgdata", 0700);
  EXPECT_TRUE(CheckDataDir(fs, "/srv/sky").ok());
  EXPECT_EQ(fs.Stat("/srv/sky")->mode, 0755u);
  fs.AddFile("/srv/sky/app.db", "x");
  EXPECT_EQ(CheckDataDir(fs, "/srv/sky").error().code, ErrorCode::kConflict);
}

// Writability is the first refusal: it is the one that is a security problem.
TEST(DataDirTest, PrepareRootRefusesWritableBeforeForeign) {
  testing::FakeFileSystem fs;
  fs.AddDir("/srv/app", 0777);
  fs.AddFile("/srv/app/app.db", "x");
  auto s = PrepareRoot(fs, "/srv/app");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kPermission);
  EXPECT_EQ(fs.Stat("/srv/app")->mode, 0777u);
}

TEST(DataDirTest, ParentsMustBeSearchableByTheClusterUser) {
  testing::FakeFileSystem fs;
  fs.AddDir("/root", 0700);
  fs.AddDir("/srv", 0755);
  fs.AddDir("/home/sky", 0700);
  fs.SetOwner("/home/sky", 990, 990);
  ClusterUser sky{RunAs{"sky", 990, 990, ""}, true};
  auto refused = CheckReachable(fs, "/root/app/.skydb", sky);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("/root (mode 0700) is not searchable"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(CheckReachable(fs, "/srv/sky", sky).ok());
  EXPECT_TRUE(CheckReachable(fs, "/home/sky/data", sky).ok());
  EXPECT_TRUE(CheckReachable(fs, "/root/x", ClusterUser{RunAs{"me", 0, 0, ""}, false}).ok());
}

TEST(DataDirTest, InspectPgdata) {
  testing::FakeFileSystem fs;
  EXPECT_EQ(*InspectPgdata(fs, "/d/pgdata", 15, "15.18"), PgdataState::kAbsent);
  fs.AddDir("/d/pgdata", 0700);
  EXPECT_EQ(*InspectPgdata(fs, "/d/pgdata", 15, "15.18"), PgdataState::kEmpty);
  fs.AddFile("/d/pgdata/PG_VERSION", "15\n");
  EXPECT_EQ(*InspectPgdata(fs, "/d/pgdata", 15, "15.18"), PgdataState::kCluster);
}

TEST(DataDirTest, InspectRefusesAnotherMajorNamingBoth) {
  testing::FakeFileSystem fs;
  fs.AddFile("/d/pgdata/PG_VERSION", "14\n");
  auto r = InspectPgdata(fs, "/d/pgdata", 15, "15.18");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kVersionMismatch);
  EXPECT_NE(r.error().message.find("PostgreSQL 14"), std::string::npos);
  EXPECT_NE(r.error().message.find("PostgreSQL 15.18"), std::string::npos);
  EXPECT_NE(r.error().message.find("move it to 15 with skydb upgrade --data-dir /d "),
            std::string::npos)
      << r.error().message;
}

TEST(DataDirTest, InspectRefusesNonEmptyNonCluster) {
  testing::FakeFileSystem fs;
  fs.AddFile("/d/pgdata/notes.txt", "mine");
  auto r = InspectPgdata(fs, "/d/pgdata", 15, "15.18");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kConflict);
  EXPECT_NE(r.error().message.find("not empty"), std::string::npos);
  EXPECT_EQ(*fs.ReadFile("/d/pgdata/notes.txt"), "mine");
}

Result<RunAs> ByUid(uid_t uid) { return RunAs{uid == 0 ? "root" : "alice", uid, uid, ""}; }
Result<RunAs> ByName(const std::string& name) {
  if (name == "nobody-here") return Error::NotFound("user 'nobody-here' does not exist");
  return RunAs{name, name == "root" ? 0u : 990u, 990, ""};
}

TEST(ClusterUserTest, RootWithoutRunAsIsRefusedWithTheFix) {
  auto r = ResolveClusterUser(0, "", ByUid, ByName);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "skydb is running as root and PostgreSQL refuses to run as root: set run_as_user in "
            "the config or pass --user NAME (an unprivileged user that will own DIR/pgdata)");
}

TEST(ClusterUserTest, RootDropsToRunAs) {
  auto r = ResolveClusterUser(0, "sky", ByUid, ByName);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->drop_privileges);
  EXPECT_EQ(r->user.uid, 990u);
  EXPECT_FALSE(ResolveClusterUser(0, "root", ByUid, ByName).ok());
  EXPECT_EQ(ResolveClusterUser(0, "nobody-here", ByUid, ByName).error().code, ErrorCode::kNotFound);
}

TEST(ClusterUserTest, NonRootRunsAsItself) {
  auto r = ResolveClusterUser(1000, "", ByUid, ByName);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->drop_privileges);
  EXPECT_EQ(r->user.name, "alice");
  EXPECT_TRUE(ResolveClusterUser(1000, "alice", ByUid, ByName).ok());
  EXPECT_EQ(ResolveClusterUser(1000, "bob", ByUid, ByName).error().code, ErrorCode::kPermission);
}

}  // namespace
}  // namespace skydb::supervisor
