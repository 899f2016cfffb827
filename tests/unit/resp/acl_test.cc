// ACL users: Redis 7's rules as skydb applies them, the categories of every command skydb has,
// and the check that walls one app's keys and channels off from another's.
#include "resp/acl.h"

#include <gtest/gtest.h>

#include "resp/command_table.h"

namespace skydb::resp::acl {
namespace {

User Made(const std::vector<std::string>& rules) {
  auto user = ApplyRules(NewUser("app1"), rules);
  EXPECT_TRUE(user.ok()) << (user.ok() ? "" : user.error().message);
  return user.ok() ? *user : NewUser("app1");
}

TEST(Acl, ANewUserIsOffAndMayDoNothing) {
  User u = NewUser("app1");
  EXPECT_FALSE(Opens(u, ""));
  EXPECT_EQ(Check(u, "get", {"k"}, {}, {}), Denied::kCommand);
  EXPECT_EQ(Describe(u), "user app1 off resetchannels -@all");
}

// An app's store user, as `skydb app add` would make it: its prefix, its topics, every command
// but the dangerous ones.
TEST(Acl, AnAppsUserReachesItsPrefixAndTopicsOnly) {
  User u = Made({"on", ">secret", "~app1:*", "&sky:live:topic:app1:*", "+@all", "-@dangerous"});
  EXPECT_TRUE(Opens(u, "secret"));
  EXPECT_FALSE(Opens(u, "other"));
  EXPECT_EQ(Check(u, "get", {"app1:sess"}, {}, {}), Denied::kNone);
  EXPECT_EQ(Check(u, "set", {}, {"app1:sess"}, {}), Denied::kNone);
  EXPECT_EQ(Check(u, "get", {"app2:sess"}, {}, {}), Denied::kKey);
  EXPECT_EQ(Check(u, "rename", {"app1:a"}, {"app2:b"}, {}), Denied::kKey);
  EXPECT_EQ(Check(u, "keys", {}, {}, {}), Denied::kCommand);  // @dangerous
  EXPECT_EQ(Check(u, "config", {}, {}, {}), Denied::kCommand);
  EXPECT_EQ(Check(u, "publish", {}, {}, {"sky:live:topic:app1:t"}), Denied::kNone);
  EXPECT_EQ(Check(u, "publish", {}, {}, {"sky:live:topic:app2:t"}), Denied::kChannel);
  // A pattern subscription must be one of the user's patterns, word for word (as in Redis).
  EXPECT_EQ(Check(u, "psubscribe", {}, {}, {"sky:live:topic:app1:*"}, true), Denied::kNone);
  EXPECT_EQ(Check(u, "psubscribe", {}, {}, {"sky:live:*"}, true), Denied::kChannel);
  EXPECT_EQ(Describe(u), "user app1 on #" + PasswordHash("secret") +
                             " ~app1:* resetchannels &sky:live:topic:app1:* +@all -@dangerous");
}

TEST(Acl, ReadAndWritePatternsAreSeparate) {
  User u = Made({"on", "nopass", "%R~shared:*", "%W~app1:*", "+@all"});
  EXPECT_TRUE(Opens(u, "anything"));
  EXPECT_EQ(Check(u, "get", {"shared:x"}, {}, {}), Denied::kNone);
  EXPECT_EQ(Check(u, "set", {}, {"shared:x"}, {}), Denied::kKey);
  EXPECT_EQ(Check(u, "set", {}, {"app1:x"}, {}), Denied::kNone);
  EXPECT_EQ(Check(u, "get", {"app1:x"}, {}, {}), Denied::kKey);
  EXPECT_EQ(Describe(u), "user app1 on nopass %R~shared:* %W~app1:* resetchannels +@all");
}

TEST(Acl, CommandRulesAndCategoriesApplyInOrder) {
  User u = Made({"on", "allkeys", "+@read", "-get", "+set"});
  EXPECT_EQ(Check(u, "hget", {"h"}, {}, {}), Denied::kNone);
  EXPECT_EQ(Check(u, "get", {"k"}, {}, {}), Denied::kCommand);
  EXPECT_EQ(Check(u, "set", {}, {"k"}, {}), Denied::kNone);
  EXPECT_EQ(Check(u, "del", {}, {"k"}, {}), Denied::kCommand);
  EXPECT_EQ(Describe(u), "user app1 on ~* resetchannels -@all +@read -get +set");
  u = Made({"on", "allcommands", "nocommands"});
  EXPECT_TRUE(u.commands.empty());
  u = Made({"on", ">a", ">b", "<a", "reset"});
  EXPECT_EQ(Describe(u), "user app1 off resetchannels -@all");
}

// A bad rule anywhere applies none of them, with Redis's words.
TEST(Acl, BadRulesAreRefusedWhole) {
  auto bad = [](std::vector<std::string> rules) {
    auto u = ApplyRules(NewUser("u"), rules);
    return u.ok() ? std::string("applied") : u.error().message;
  };
  EXPECT_EQ(bad({"on", "+nosuch"}),
            "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL");
  EXPECT_EQ(bad({"-@nosuch"}),
            "Error in ACL SETUSER modifier '-@nosuch': Unknown command or category name in ACL");
  EXPECT_EQ(bad({"#abc"}),
            "Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 "
            "characters and contain only lowercase hexadecimal characters");
  EXPECT_EQ(bad({"<never"}),
            "Error in ACL SETUSER modifier '<never': The password you are trying to remove from "
            "the user does not exist");
  EXPECT_EQ(bad({"%X~k"}), "Error in ACL SETUSER modifier '%X~k': Syntax error");
  EXPECT_EQ(bad({"sideways"}), "Error in ACL SETUSER modifier 'sideways': Syntax error");
}

TEST(Acl, PasswordsAreKeptAsSha256) {
  EXPECT_EQ(PasswordHash("foobar"),
            "c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2");
  User u = Made({"on", "#c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2"});
  EXPECT_TRUE(Opens(u, "foobar"));
  u = Made({"on", ">foobar", "!c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2"});
  EXPECT_FALSE(Opens(u, "foobar"));
}

// Every command skydb has belongs to Redis's categories, so +@category rules reach it.
TEST(Acl, EveryCommandHasItsCategories) {
  for (const CommandSpec& spec : AllCommands()) {
    EXPECT_FALSE(CategoriesOf(spec.name).empty()) << spec.name;
  }
  EXPECT_EQ(CommandsIn("pubsub"),
            (std::vector<std::string_view>{"psubscribe", "publish", "pubsub", "punsubscribe",
                                           "subscribe", "unsubscribe"}));
  EXPECT_EQ(CommandsIn("sortedset"), std::vector<std::string_view>{});
  EXPECT_FALSE(CommandsIn("nosuch").has_value());
  EXPECT_EQ(CategoryNames().size(), 21u);
}

}  // namespace
}  // namespace skydb::resp::acl
