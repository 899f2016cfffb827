// The registry rows that reach pg_hba.conf (supervisor/access_sync.h): ready apps only, the
// configured app first; and the names an app may take (schema/app_registry.h).
#include "supervisor/access_sync.h"

#include <gtest/gtest.h>

namespace skydb::supervisor {
namespace {

using schema::AppAuth;
using schema::AppRow;
using schema::AppState;

AppRow Row(const std::string& name, AppState state, bool configured = false,
           AppAuth auth = AppAuth::kScram) {
  AppRow row;
  row.name = row.role = row.database = name;
  row.state = state;
  row.configured = configured;
  row.auth = auth;
  return row;
}

TEST(AccessSyncTest, OnlyReadyAppsMayLogInAndTheConfiguredOneComesFirst) {
  auto apps = AccessAppsFrom({Row("alpha", AppState::kReady), Row("beta", AppState::kKept),
                              Row("gamma", AppState::kCreating),
                              Row("app", AppState::kReady, true, AppAuth::kPeer),
                              Row("zeta", AppState::kReady)});
  ASSERT_EQ(apps.size(), 3u);
  EXPECT_EQ(apps[0].role, "app");
  EXPECT_FALSE(apps[0].scram);
  EXPECT_EQ(apps[1].role, "alpha");
  EXPECT_TRUE(apps[1].scram);
  EXPECT_EQ(apps[2].role, "zeta");
}

TEST(AccessSyncTest, AppNamesAreSafeInPgHbaAndInIdentifiers) {
  for (const char* good : {"alpha", "shop_2", "a", "_x"}) {
    EXPECT_EQ(schema::AppNameProblem(good), "") << good;
  }
  struct Case {
    std::string name;
    std::string problem;
  };
  for (const Case& c : std::vector<Case>{{"", "must be 1 to 63 characters"},
                                         {std::string(64, 'a'), "must be 1 to 63 characters"},
                                         {"Shop", "may hold only a-z, 0-9 and _"},
                                         {"a-b", "may hold only a-z, 0-9 and _"},
                                         {"a,b", "may hold only a-z, 0-9 and _"},
                                         {"1app", "must not start with a digit"},
                                         {"pg_app", "must not start with pg_"},
                                         {"all", "reserves"},
                                         {"replication", "reserves"},
                                         {"postgres", "reserves"},
                                         {"template1", "reserves"}}) {
    EXPECT_NE(schema::AppNameProblem(c.name).find(c.problem), std::string::npos)
        << c.name << ": " << schema::AppNameProblem(c.name);
  }
}

}  // namespace
}  // namespace skydb::supervisor
