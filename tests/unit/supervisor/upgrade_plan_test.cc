// The pure parts of `skydb upgrade`: the method and tools a pair of bin dirs allows, every
// refusal, the downtime estimate, pg_control's state, the globals to restore, row counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "skydb/upgrade.h"

namespace skydb {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

UpgradeBinaries Bin(const std::string& dir, int major) {
  return {dir, {major, 1, std::to_string(major) + ".1"}};
}

// A host whose bin dirs hold exactly `programs` ("dir/name").
struct Host {
  std::set<std::string> programs;
  void Add(const std::string& dir, std::initializer_list<const char*> names) {
    for (const char* n : names) programs.insert(dir + "/" + n);
  }
  std::function<bool(const std::string&)> Executable() const {
    return [this](const std::string& p) { return programs.count(p) != 0; };
  }
};

constexpr const char* kDebian15 = "/usr/lib/postgresql/15/bin";
constexpr const char* kNpm18 = "/srv/pg18/bin";

Host DebianAndRelocatable() {
  Host host;
  host.Add(kDebian15, {"postgres", "initdb", "pg_ctl", "pg_controldata", "pg_resetwal",
                       "pg_upgrade", "pg_dump", "pg_dumpall", "pg_restore", "psql", "vacuumdb"});
  host.Add(kNpm18, {"postgres", "initdb", "pg_ctl"});
  return host;
}

TEST(UpgradePlanTest, RelocatableTargetWithoutPgUpgradeDumpsWithTheOldTools) {
  Host host = DebianAndRelocatable();
  auto plan = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kAuto,
                          UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->method, UpgradeMethod::kDump);
  EXPECT_THAT(plan->why, HasSubstr("/srv/pg18/bin lacks pg_upgrade, pg_controldata"));
  EXPECT_EQ(plan->pg_dump, std::string(kDebian15) + "/pg_dump");
  EXPECT_EQ(plan->pg_restore, std::string(kDebian15) + "/pg_restore");
  EXPECT_EQ(plan->pg_dumpall, std::string(kDebian15) + "/pg_dumpall");
}

TEST(UpgradePlanTest, TheNewerMajorsDumpToolsWinWhenItHasThem) {
  Host host = DebianAndRelocatable();
  host.Add(kNpm18, {"pg_dump", "pg_dumpall", "pg_restore"});  // Sky's six-binary bundle
  auto plan = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kAuto,
                          UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->method, UpgradeMethod::kDump);
  EXPECT_EQ(plan->pg_dump, std::string(kNpm18) + "/pg_dump");
  EXPECT_EQ(plan->pg_restore, std::string(kNpm18) + "/pg_restore");
  EXPECT_EQ(plan->pg_dumpall, std::string(kNpm18) + "/pg_dumpall");
}

TEST(UpgradePlanTest, PgDumpAndPgRestoreComeFromOneDirectory) {
  // pg_restore 15 cannot read an archive pg_dump 18 wrote.
  Host host = DebianAndRelocatable();
  host.Add(kNpm18, {"pg_dump"});
  auto plan = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kAuto,
                          UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->pg_dump, std::string(kDebian15) + "/pg_dump");
  EXPECT_EQ(plan->pg_restore, std::string(kDebian15) + "/pg_restore");
}

TEST(UpgradePlanTest, PgUpgradeWhenBothSidesHaveWhatItRuns) {
  Host host = DebianAndRelocatable();
  host.Add(kNpm18, {"pg_upgrade", "pg_controldata", "pg_resetwal", "pg_dump", "pg_dumpall",
                    "pg_restore", "psql", "vacuumdb"});
  auto plan = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kAuto,
                          UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->method, UpgradeMethod::kPgUpgrade);
  auto dump = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kDump,
                          UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_TRUE(dump.ok());
  EXPECT_EQ(dump->method, UpgradeMethod::kDump);
  EXPECT_EQ(dump->why, "--method dump was given");
}

TEST(UpgradePlanTest, RefusalsNameTheFix) {
  Host host = DebianAndRelocatable();
  auto same = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kDebian15, 15), UpgradeMethod::kAuto,
                          UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_FALSE(same.ok());
  EXPECT_THAT(same.error().message, HasSubstr("nothing to upgrade; give --to-bin-dir"));
  auto older = PlanUpgrade(18, Bin(kNpm18, 18), Bin(kDebian15, 15), UpgradeMethod::kAuto,
                           UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_FALSE(older.ok());
  EXPECT_THAT(older.error().message, HasSubstr("cannot move a cluster to an older major"));
  auto pg19 = PlanUpgrade(15, Bin(kDebian15, 15), Bin("/srv/pg19/bin", 19), UpgradeMethod::kAuto,
                          UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_FALSE(pg19.ok());
  EXPECT_THAT(pg19.error().message, HasSubstr("skydb supports 14 to 18"));
  auto forced = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kPgUpgrade,
                            UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_FALSE(forced.ok());
  EXPECT_THAT(forced.error().message, HasSubstr("--method pg_upgrade cannot run: /srv/pg18/bin "
                                                "lacks pg_upgrade"));
  auto link = PlanUpgrade(15, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kAuto,
                          UpgradeTransfer::kLink, host.Executable());
  ASSERT_FALSE(link.ok());
  EXPECT_THAT(link.error().message, HasSubstr("--link needs pg_upgrade"));
  Host bare;
  bare.Add("/srv/pg14/bin", {"postgres", "initdb", "pg_ctl"});
  bare.Add(kNpm18, {"postgres", "initdb", "pg_ctl"});
  auto no_tools = PlanUpgrade(14, Bin("/srv/pg14/bin", 14), Bin(kNpm18, 18), UpgradeMethod::kAuto,
                              UpgradeTransfer::kCloneOrCopy, bare.Executable());
  ASSERT_FALSE(no_tools.ok());
  EXPECT_THAT(no_tools.error().message, HasSubstr("install postgresql-client-14"));
  auto wrong_old = PlanUpgrade(14, Bin(kDebian15, 15), Bin(kNpm18, 18), UpgradeMethod::kAuto,
                               UpgradeTransfer::kCloneOrCopy, host.Executable());
  ASSERT_FALSE(wrong_old.ok());
  EXPECT_THAT(wrong_old.error().message, HasSubstr("give --from-bin-dir"));
}

TEST(UpgradePlanTest, DowntimeGrowsWithTheDataUnlessFilesAreShared) {
  UpgradePlan dump;
  dump.method = UpgradeMethod::kDump;
  UpgradePlan copy;
  copy.method = UpgradeMethod::kPgUpgrade;
  uint64_t gib = uint64_t{1} << 30;
  EXPECT_GT(EstimateDowntime(dump, gib, false), EstimateDowntime(copy, gib, false));
  EXPECT_GT(EstimateDowntime(dump, 2 * gib, false), EstimateDowntime(dump, gib, false));
  EXPECT_EQ(EstimateDowntime(copy, gib, true), EstimateDowntime(copy, 0, false));
  UpgradePlan link = copy;
  link.transfer = UpgradeTransfer::kLink;
  EXPECT_EQ(EstimateDowntime(link, 10 * gib, false), EstimateDowntime(link, 0, false));
}

std::string Control(uint64_t id, uint32_t version, int32_t state) {
  std::string bytes(8192, '\0');
  std::memcpy(bytes.data(), &id, 8);
  std::memcpy(bytes.data() + 8, &version, 4);
  std::memcpy(bytes.data() + 16, &state, 4);
  return bytes;
}

TEST(UpgradePlanTest, ControlFileStateAndIdentifier) {
  auto shut = ParseControlFile(Control(7345678901234567890ULL, 1300, 1));
  ASSERT_TRUE(shut.ok());
  EXPECT_EQ(shut->system_identifier, 7345678901234567890ULL);
  EXPECT_TRUE(shut->CleanlyShutDown());
  EXPECT_FALSE(ParseControlFile(Control(1, 1800, 6))->CleanlyShutDown());  // in production
  EXPECT_FALSE(ParseControlFile(Control(1, 1700, 4))->CleanlyShutDown());  // crash recovery
  EXPECT_TRUE(ParseControlFile(Control(1, 1700, 2))->CleanlyShutDown());   // standby, shut down
  EXPECT_FALSE(ParseControlFile(Control(1, 942, 1)).ok());
  EXPECT_FALSE(ParseControlFile("short").ok());
}

TEST(UpgradePlanTest, GlobalsLeaveOutTheBootstrapRoleCommentsAndMetaCommands) {
  std::string globals =
      "--\n-- PostgreSQL database cluster dump\n--\n\n\\restrict AbC\n\n"
      "SET default_transaction_read_only = off;\n\n"
      "CREATE ROLE app;\nALTER ROLE app WITH NOSUPERUSER LOGIN PASSWORD NULL;\n"
      "CREATE ROLE skydbtest;\nALTER ROLE skydbtest WITH SUPERUSER LOGIN;\n"
      "COMMENT ON ROLE app IS 'the app''s\nrole;';\n\\unrestrict AbC\n";
  EXPECT_THAT(GlobalsStatements(globals, "skydbtest"),
              ElementsAre("SET default_transaction_read_only = off;", "CREATE ROLE app;",
                          "ALTER ROLE app WITH NOSUPERUSER LOGIN PASSWORD NULL;",
                          "ALTER ROLE skydbtest WITH SUPERUSER LOGIN;",
                          "COMMENT ON ROLE app IS 'the app''s\nrole;';"));
  EXPECT_THAT(GlobalsStatements("CREATE ROLE \"Odd\";\nCREATE ROLE x;\n", "Odd"),
              ElementsAre("CREATE ROLE x;"));
}

TEST(UpgradePlanTest, CountDifferencesNamesEveryTable) {
  RowCounts before = {
      {"app.public.items", 10}, {"postgres.skydb.sky_sessions", 5}, {"app.public.gone", 1}};
  RowCounts after = {
      {"app.public.items", 9}, {"postgres.skydb.sky_sessions", 5}, {"app.public.new", 2}};
  EXPECT_THAT(CountDifferences(before, after),
              ElementsAre("app.public.gone: 1 rows before, missing after",
                          "app.public.items: 10 rows before, 9 after",
                          "app.public.new: not there before, 2 rows after"));
  EXPECT_TRUE(CountDifferences(before, before).empty());
}

}  // namespace
}  // namespace skydb
