// [app] resolved against the OS (daemon/app_access.h): the refusals that protect skydb's own
// role and PostgreSQL's databases, and the password file's rules.
#include "daemon/app_access.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fakes.h"

namespace skydb::daemon {
namespace {

using ::testing::HasSubstr;

TEST(AppAccessTest, TheAppIsTheServiceUserUnlessConfigured) {
  testing::FakeFileSystem fs;
  auto access = ResolveAppAccess(fs, Config{}, "skydb");
  ASSERT_TRUE(access.ok()) << access.error().message;
  EXPECT_FALSE(access->user.has_value());
  EXPECT_FALSE(access->group.has_value()) << "nothing is shared without an app user or group";
  EXPECT_EQ(access->password, "");
  Config same;
  same.app.user = "skydb";
  EXPECT_FALSE(ResolveAppAccess(fs, same, "skydb")->user.has_value());
}

TEST(AppAccessTest, SkydbsRoleAndPostgresDatabasesAreRefused) {
  testing::FakeFileSystem fs;
  Config role;
  role.app.role = "skydb";
  auto refused = ResolveAppAccess(fs, role, "skydb");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("is the cluster's superuser role"));
  for (const char* own : {"postgres", "template0", "template1"}) {
    Config db;
    db.app.database = own;
    auto r = ResolveAppAccess(fs, db, "skydb");
    ASSERT_FALSE(r.ok()) << own;
    EXPECT_THAT(r.error().message, HasSubstr("one of PostgreSQL's own databases"));
  }
}

TEST(AppAccessTest, RootAndUnknownUsersAndGroupsAreRefused) {
  testing::FakeFileSystem fs;
  Config root;
  root.app.user = "root";
  EXPECT_THAT(ResolveAppAccess(fs, root, "skydb").error().message,
              HasSubstr("the app must run as an unprivileged user"));
  Config unknown;
  unknown.app.user = "no-such-user-q";
  EXPECT_THAT(ResolveAppAccess(fs, unknown, "skydb").error().message,
              HasSubstr("useradd --system no-such-user-q"));
  Config group;
  group.app.group = "no-such-group-q";
  EXPECT_THAT(ResolveAppGroup(group, "skydb").error().message, HasSubstr("groupadd"));
  Config named;
  named.app.group = "root";
  ASSERT_TRUE(ResolveAppGroup(named, "skydb").ok());
  EXPECT_EQ(ResolveAppGroup(named, "skydb")->value().gid, 0u);
}

TEST(AppAccessTest, PasswordIsTheFilesFirstLineAndMayNotBeEmpty) {
  testing::FakeFileSystem fs;
  fs.AddFile("/etc/app/pw", "s3cret\r\nignored\n", 0640);
  fs.AddFile("/etc/app/empty", "\nx\n", 0640);
  Config c;
  c.app.password_file = "/etc/app/pw";
  EXPECT_EQ(ResolveAppAccess(fs, c, "skydb")->password, "s3cret");
  c.app.password_file = "/etc/app/empty";
  EXPECT_THAT(ResolveAppAccess(fs, c, "skydb").error().message,
              HasSubstr("has no password on its first line"));
  c.app.password_file = "/etc/app/missing";
  EXPECT_THAT(ResolveAppAccess(fs, c, "skydb").error().message,
              HasSubstr("cannot read app.password_file /etc/app/missing"));
}

}  // namespace
}  // namespace skydb::daemon
