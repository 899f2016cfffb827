// Transactions (SessionStore::Transact) and WATCH: a transaction is applied whole and committed
// as one unit before any of its results is delivered; no other operation sees part of it; a
// failure acknowledges nothing; a WATCHed key changed, deleted or expired since applies nothing,
// also when another store on the same table changed it (shared coherence).
#include <thread>

#include "harnesses.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;

// What a transaction's ops delivered, in the order they were delivered.
struct Delivered {
  std::mutex mu;
  std::vector<std::string> log;
  void Add(std::string what) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(std::move(what));
  }
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(mu);
    return log;
  }
};

tx::Set SetOp(std::string key, std::string value, std::shared_ptr<Delivered> d) {
  return {
      SetRequest{key, std::move(value), Expiry::None()}, [d, key](Result<SetReply> r) {
        d->Add("set " + key +
               (r.ok() ? (r->applied ? " ok" : " not applied") : " error: " + r.error().message));
      }};
}

tx::Read GetOp(std::string key, std::shared_ptr<Delivered> d) {
  return {ReadKind::kGet, key, std::nullopt, [d, key](Result<std::optional<std::string>> r) {
            d->Add("get " + key + " " + (r.ok() && *r ? **r : "nil"));
          }};
}

tx::Delete DelOp(std::vector<std::string> keys, std::shared_ptr<Delivered> d) {
  return {std::move(keys),
          [d](Result<int64_t> r) { d->Add("del " + std::to_string(r.ok() ? *r : -1)); }};
}

Result<bool> Transact(StoreHarness& h, std::vector<TxOp> ops,
                      std::shared_ptr<WatchList> watch = nullptr) {
  return Await<bool>([&](StoreCallback<bool> cb) {
    h.store().Transact(std::move(ops), std::move(watch), std::move(cb));
  });
}

std::shared_ptr<WatchList> Watch(StoreHarness& h, std::vector<std::string> keys) {
  auto list = std::make_shared<WatchList>();
  auto watched = Await<bool>(
      [&](StoreCallback<bool> cb) { h.store().Watch(std::move(keys), list, std::move(cb)); });
  EXPECT_TRUE(watched.ok());
  return list;
}

TEST(TransactionTest, AppliesInOrderAsOneCommitAndDeliversOnlyAfterIt) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));  // two writers
  ASSERT_TRUE(h.Set("gone", "v", Expiry::None()).ok());
  size_t batches_before = 0;
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    batches_before = h.state().batch_sizes.size();
  }
  HoldCommits(h.state(), true);
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  for (int i = 0; i < 8; ++i) ops.emplace_back(SetOp("k" + std::to_string(i), "v1", d));
  ops.emplace_back(GetOp("k0", d));
  ops.emplace_back(SetOp("k0", "v2", d));
  ops.emplace_back(DelOp({"gone", "never"}, d));
  Pending<bool> done;
  h.store().Transact(std::move(ops), nullptr, done.cb());
  Pending<std::optional<std::string>> reader;
  h.store().Get("k3", reader.cb());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(done.answered()) << "a transaction was acknowledged before its commit";
  EXPECT_TRUE(d->Log().empty()) << "a result was delivered before the commit";
  EXPECT_FALSE(reader.answered()) << "another client saw the uncommitted transaction";
  HoldCommits(h.state(), false);
  ASSERT_TRUE(*done.get());
  EXPECT_EQ(**reader.get(), "v1");
  std::vector<std::string> expected;
  for (int i = 0; i < 8; ++i) expected.push_back("set k" + std::to_string(i) + " ok");
  expected.insert(expected.end(), {"get k0 v1", "set k0 ok", "del 1"});
  EXPECT_EQ(d->Log(), expected);
  std::lock_guard<std::mutex> lock(h.state().mu);
  ASSERT_EQ(h.state().batch_sizes.size(), batches_before + 1) << "not one commit";
  EXPECT_EQ(h.state().batch_sizes.back(), 9u);  // k0..k7 (k0 folded) and the delete
  EXPECT_EQ(h.state().rows.at("k0").value, "v2");
  EXPECT_EQ(h.state().rows.count("gone"), 0u);
}

// store.write_timeout times a script's writes from the hand-over of its unit to the committer,
// not from the script's start: a script that runs longer than the timeout (here 2 s on the
// injected clock against 1 s) still commits what it wrote.
TEST(TransactionTest, AScriptLongerThanTheWriteTimeoutStillCommits) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.write_timeout = std::chrono::seconds(1);
  FakeTieredHarness h(options);
  auto d = std::make_shared<Delivered>();
  tx::Script script{{"long"},
                    [&h, d](ScriptScope& scope) {
                      std::vector<TxOp> one;
                      one.emplace_back(SetOp("long", "written", d));
                      EXPECT_TRUE(scope.Apply(std::move(one)).ok());
                      h.clock().Advance(std::chrono::seconds(2));
                    },
                    [d](Result<bool> r) {
                      d->Add(r.ok() ? "script done" : "script error " + r.error().message);
                    }};
  std::vector<TxOp> ops;
  ops.emplace_back(std::move(script));
  HoldCommits(h.state(), true);  // the deadline watcher looks while the commit waits
  Pending<bool> done;
  h.store().Transact(std::move(ops), nullptr, done.cb());
  std::this_thread::sleep_for(milliseconds(200));
  HoldCommits(h.state(), false);
  ASSERT_TRUE(done.get().ok());
  EXPECT_EQ(d->Log().back(), "script done");
  std::lock_guard<std::mutex> lock(h.state().mu);
  EXPECT_EQ(h.state().rows.at("long").value, "written");
}

// A script (tx::Script): its ops apply at once under its declared keys' locks, each result in
// hand before the next op; an op on an undeclared key is refused whole; every write it made is
// one commit, and its own result is delivered only after that commit.
TEST(TransactionTest, AScriptAppliesAtOnceUnderItsKeysAndCommitsAsOneUnit) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  size_t batches_before = 0;
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    batches_before = h.state().batch_sizes.size();
  }
  HoldCommits(h.state(), true);
  auto d = std::make_shared<Delivered>();
  std::vector<std::string> seen;
  std::string refusal;
  tx::Script script{{"s1", "s2", "s3"},
                    [&, d](ScriptScope& scope) {
                      seen.clear();
                      std::vector<TxOp> one;
                      one.emplace_back(SetOp("s1", "a", d));
                      EXPECT_TRUE(scope.Apply(std::move(one)).ok());
                      one.clear();
                      one.emplace_back(GetOp("s1", d));  // reads its own write at once
                      EXPECT_TRUE(scope.Apply(std::move(one)).ok());
                      seen = d->Log();
                      one.clear();
                      one.emplace_back(SetOp("s2", "b", d));
                      one.emplace_back(SetOp("undeclared", "c", d));
                      Status refused = scope.Apply(std::move(one));
                      refusal = refused.ok() ? "" : refused.error().message;
                      one.clear();
                      one.emplace_back(SetOp("s3", "c", d));
                      EXPECT_TRUE(scope.Apply(std::move(one)).ok());
                    },
                    [d](Result<bool> r) { d->Add(r.ok() ? "script done" : "script error"); }};
  std::vector<TxOp> ops;
  ops.emplace_back(std::move(script));
  Pending<bool> done;
  h.store().Transact(std::move(ops), nullptr, done.cb());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(done.answered()) << "a script was acknowledged before its commit";
  HoldCommits(h.state(), false);
  ASSERT_TRUE(*done.get());
  // Read once acknowledged: the script ran before its commit, on whichever thread.
  EXPECT_EQ(seen, (std::vector<std::string>{"set s1 ok", "get s1 a"}));
  EXPECT_EQ(refusal.rfind("Script attempted to access a key not declared in KEYS", 0), 0u)
      << refusal;
  EXPECT_EQ(d->Log().back(), "script done");
  std::lock_guard<std::mutex> lock(h.state().mu);
  ASSERT_EQ(h.state().batch_sizes.size(), batches_before + 1) << "not one commit";
  EXPECT_EQ(h.state().batch_sizes.back(), 2u);  // s1 and s3
  EXPECT_EQ(h.state().rows.count("s2"), 0u) << "a refused MSET-like pair applied half";
  EXPECT_EQ(h.state().rows.count("undeclared"), 0u);
  EXPECT_EQ(h.state().rows.at("s3").value, "c");
}

TEST(TransactionTest, AFailedCommitAcknowledgesNothing) {
  TieredOptions options = FakeOptions(Durability::kSync);
  options.write_timeout = milliseconds(100);
  FakeTieredHarness h(options);
  {
    std::lock_guard<std::mutex> lock(h.state().mu);
    h.state().fail_commits = true;
  }
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  ops.emplace_back(SetOp("a", "1", d));
  ops.emplace_back(SetOp("b", "2", d));
  Pending<bool> done;
  h.store().Transact(std::move(ops), nullptr, done.cb());
  while (!done.answered(milliseconds(10))) h.clock().Advance(milliseconds(50));
  EXPECT_FALSE(done.get().ok());
  EXPECT_TRUE(d->Log().empty()) << "a result of an unacknowledged transaction was delivered";
  std::lock_guard<std::mutex> lock(h.state().mu);
  h.state().fail_commits = false;
}

TEST(TransactionTest, AFullQueueRefusesTheWholeTransaction) {
  TieredOptions options = FakeOptions(Durability::kAsync);
  options.queue_max_writes = 10;
  FakeTieredHarness h(options);
  HoldCommits(h.state(), true);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(h.Set("filler" + std::to_string(i), "v").ok());
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  for (int i = 0; i < 3; ++i) ops.emplace_back(SetOp("t" + std::to_string(i), "v", d));
  EXPECT_FALSE(Transact(h, std::move(ops)).ok());
  EXPECT_TRUE(d->Log().empty());
  EXPECT_EQ(*h.Exists({"t0", "t1", "t2"}), 0) << "part of a refused transaction was applied";
  HoldCommits(h.state(), false);
}

TEST(TransactionTest, AnOversizedValueRefusesTheWholeTransaction) {
  MemoryHarness h;
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  ops.emplace_back(SetOp("small", "v", d));
  ops.emplace_back(SetOp("big", std::string(2 << 20, 'x'), d));
  auto refused = Transact(h, std::move(ops));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message.rfind("the transaction applied nothing: value is", 0), 0u)
      << refused.error().message;
  EXPECT_TRUE(d->Log().empty());
  EXPECT_FALSE(h.Get("small")->has_value());
}

TEST(TransactionTest, ReadsAreBoundedAndABiggerOneAppliesNothing) {
  MemoryHarness h;
  ASSERT_TRUE(h.Set("v", std::string(1 << 20, 'x')).ok());
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  ops.emplace_back(SetOp("w", "v", d));
  for (int i = 0; i < 65; ++i) ops.emplace_back(GetOp("v", d));  // 65 MiB
  auto refused = Transact(h, std::move(ops));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("more than 64 MiB"), std::string::npos);
  EXPECT_TRUE(d->Log().empty());
  EXPECT_FALSE(h.Get("w")->has_value());
}

TEST(WatchTest, AKeyChangedSinceItWasWatchedAppliesNothing) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(h.Set("k", "before", Expiry::None()).ok());
  auto watch = Watch(h, {"k", "missing"});
  ASSERT_TRUE(h.Set("k", "other client", Expiry::None()).ok());
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  ops.emplace_back(SetOp("k", "mine", d));
  ops.emplace_back(SetOp("side", "effect", d));
  EXPECT_FALSE(*Transact(h, std::move(ops), watch));
  EXPECT_TRUE(d->Log().empty());
  EXPECT_EQ(**h.Get("k"), "other client");
  EXPECT_FALSE(h.Get("side")->has_value());
}

TEST(WatchTest, EachKindOfChangeAborts) {
  MemoryHarness h;
  const std::pair<const char*, std::function<void()>> changes[] = {
      {"set", [&] { ASSERT_TRUE(h.Set("k", "x", Expiry::None()).ok()); }},
      {"del", [&] { ASSERT_EQ(*h.Del({"k"}), 1); }},
      {"expire", [&] { ASSERT_TRUE(*h.Expire("k", Expiry::At(h.NowMs() + 500000))); }},
      {"getdel", [&] { ASSERT_TRUE(h.GetDel("k")->has_value()); }},
      {"expired", [&] { h.clock().Advance(milliseconds(61000)); }},
      {"created", [&] { ASSERT_TRUE(h.Set("missing", "x").ok()); }},
  };
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(h.Set("k", "v", Expiry::At(h.NowMs() + 60000)).ok());
    ASSERT_EQ(*h.Del({"missing"}) >= 0, true);
    auto watch = Watch(h, {"k", "missing"});
    change();
    auto d = std::make_shared<Delivered>();
    std::vector<TxOp> ops;
    ops.emplace_back(SetOp("w", "v", d));
    EXPECT_FALSE(*Transact(h, std::move(ops), watch));
    h.store().Unwatch(*watch);
    EXPECT_FALSE(h.Get("w")->has_value());
  }
}

TEST(WatchTest, UnchangedKeysAndReadsLetItApply) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(h.Set("k", "v", Expiry::None()).ok());
  auto watch = Watch(h, {"k", "missing"});
  ASSERT_EQ(**h.Get("k"), "v");  // reads are not changes
  ASSERT_EQ(*h.Exists({"missing"}), 0);
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  ops.emplace_back(SetOp("k", "mine", d));
  EXPECT_TRUE(*Transact(h, std::move(ops), watch));
  h.store().Unwatch(*watch);
  EXPECT_EQ(**h.Get("k"), "mine");
  // A list unwatched and watched again starts from the keys' state then.
  auto again = Watch(h, {"k"});
  ASSERT_TRUE(h.Set("k", "x", Expiry::None()).ok());
  h.store().Unwatch(*again);
  std::vector<TxOp> more;
  more.emplace_back(SetOp("k", "after unwatch", d));
  EXPECT_TRUE(*Transact(h, std::move(more), again)) << "an unwatched list still aborted";
}

TEST(WatchTest, SharedCoherenceSeesAnotherStoresCommittedWrite) {
  TieredOptions options = FakeOptions(Durability::kSync, /*shared=*/true);
  FakeTieredHarness a(options);
  FakeTieredHarness b(options, a.shared_state());
  ASSERT_TRUE(a.Set("k", "v", Expiry::None()).ok());
  auto watch = Watch(a, {"k", "missing"});
  ASSERT_TRUE(b.Set("k", "from b", Expiry::None()).ok());
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  ops.emplace_back(SetOp("k", "from a", d));
  EXPECT_FALSE(*Transact(a, std::move(ops), watch)) << "another daemon's write went unseen";
  a.store().Unwatch(*watch);
  EXPECT_EQ(**b.Get("k"), "from b");

  auto created = Watch(a, {"missing"});
  ASSERT_TRUE(b.Set("missing", "now here", Expiry::None()).ok());
  std::vector<TxOp> create;
  create.emplace_back(SetOp("missing", "from a", d));
  EXPECT_FALSE(*Transact(a, std::move(create), created));
  a.store().Unwatch(*created);

  auto untouched = Watch(a, {"k"});
  std::vector<TxOp> apply;
  apply.emplace_back(SetOp("k", "from a", d));
  apply.emplace_back(GetOp("k", d));
  EXPECT_TRUE(*Transact(a, std::move(apply), untouched));
  a.store().Unwatch(*untouched);
  EXPECT_EQ(**b.Get("k"), "from a");
}

// The window the row re-read at EXEC leaves: another daemon's write that commits after that
// read and before EXEC's own COMMIT. The COMMIT checks the watched rows again under lock.
TEST(WatchTest, SharedCoherenceRefusesAWriteThatLandsBeforeTheCommit) {
  TieredOptions options = FakeOptions(Durability::kSync, /*shared=*/true);
  FakeTieredHarness a(options);
  ASSERT_TRUE(a.Set("k", "v", Expiry::None()).ok());
  for (const char* watched : {"k", "missing"}) {
    auto watch = Watch(a, {watched});
    {
      std::lock_guard<std::mutex> lock(a.state().mu);
      a.state().before_guard = [watched](std::map<std::string, DurableValue>& rows) {
        rows[watched].value = "from b";
        rows[watched].version = 0;
      };
    }
    auto d = std::make_shared<Delivered>();
    std::vector<TxOp> ops;
    ops.emplace_back(SetOp(watched, "from a", d));
    ops.emplace_back(SetOp("also", "from a", d));
    EXPECT_FALSE(*Transact(a, std::move(ops), watch)) << watched;
    a.store().Unwatch(*watch);
    EXPECT_TRUE(d->Log().empty()) << "a refused transaction delivered results";
    {
      std::lock_guard<std::mutex> lock(a.state().mu);
      a.state().before_guard = nullptr;
      EXPECT_EQ(a.state().refused_commits, watched == std::string("k") ? 1 : 2);
      EXPECT_EQ(a.state().rows.count("also"), 0u) << "a refused transaction applied part of it";
    }
    EXPECT_EQ(**a.Get(watched), "from b") << "memory kept the refused write";
    EXPECT_FALSE(a.Get("also")->has_value());
  }
}

// While the guard is undecided, a read of a key the transaction wrote waits, then answers with
// what was decided: never with a write the guard refuses.
TEST(WatchTest, SharedCoherenceReadsOfAHeldKeyWaitForTheGuard) {
  TieredOptions options = FakeOptions(Durability::kSync, /*shared=*/true);
  FakeTieredHarness a(options);
  for (bool refuse : {true, false}) {
    SCOPED_TRACE(refuse ? "refused" : "committed");
    auto watch = Watch(a, {"k"});
    HoldCommits(a.state(), true);
    auto d = std::make_shared<Delivered>();
    std::vector<TxOp> ops;
    ops.emplace_back(SetOp("k", refuse ? "refused" : "committed", d));
    Pending<bool> exec;
    a.store().Transact(std::move(ops), watch, exec.cb());
    ASSERT_TRUE(WaitFor([&] { return a.store().Stats().queue_depth > 0; }));
    Pending<std::optional<std::string>> get;
    a.store().Get("k", get.cb());
    Pending<int64_t> exists;
    a.store().Exists({"k"}, exists.cb());
    EXPECT_FALSE(get.answered(milliseconds(100))) << "a read saw an undecided write";
    EXPECT_FALSE(exists.answered());
    {
      std::lock_guard<std::mutex> lock(a.state().mu);
      a.state().before_guard = [refuse](std::map<std::string, DurableValue>& rows) {
        if (refuse) {
          rows["k"] = DurableValue();
          rows["k"].value = "from b";
        }
      };
    }
    HoldCommits(a.state(), false);
    ASSERT_TRUE(exec.get().ok());
    EXPECT_EQ(*exec.get(), !refuse);
    a.store().Unwatch(*watch);
    auto got = get.get();
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(**got, refuse ? "from b" : "committed");
    EXPECT_EQ(*exists.get(), 1);
    std::lock_guard<std::mutex> lock(a.state().mu);
    a.state().before_guard = nullptr;
  }
}

// Another daemon writing a key without pause refuses a guarded commit every time: the
// operation starts again on fresh rows until it has been refused for store.write_timeout (by
// the store's clock), however many tries that takes, then fails with nothing applied.
TEST(WatchTest, SharedCoherenceRetriesARefusedCommitForTheWriteTimeout) {
  TieredOptions options = FakeOptions(Durability::kSync, /*shared=*/true);
  options.write_timeout = milliseconds(500);
  FakeTieredHarness a(options);
  ASSERT_TRUE(a.Set("k", "1", Expiry::None()).ok());
  int other_writes = 0;
  {
    std::lock_guard<std::mutex> lock(a.state().mu);
    a.state().before_guard = [&other_writes](std::map<std::string, DurableValue>& rows) {
      rows["k"].value = std::to_string(100 + ++other_writes);
    };
  }
  Pending<IncrReply> incr;
  a.store().Increment(IncrRequest::Integer("k", 1), incr.cb());
  auto refusals = [&] {
    std::lock_guard<std::mutex> lock(a.state().mu);
    return a.state().refused_commits;
  };
  ASSERT_TRUE(WaitFor([&] { return refusals() > 100; })) << refusals();
  EXPECT_FALSE(incr.answered()) << "gave up after " << refusals() << " refusals";
  a.clock().Advance(milliseconds(600));
  auto failed = incr.get();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kConflict) << failed.error().message;
  std::lock_guard<std::mutex> lock(a.state().mu);
  a.state().before_guard = nullptr;
  EXPECT_EQ(a.state().rows["k"].value, std::to_string(100 + other_writes))
      << "a refused increment was applied";
}

// A guarded commit that outlives store.write_timeout: EXEC fails with the timeout, and what
// waits for its keys fails too (never answered from the undecided write); once PostgreSQL is
// back the guard decides and the keys answer again.
TEST(WatchTest, SharedCoherenceHeldKeysFailAtTheWriteTimeout) {
  TieredOptions options = FakeOptions(Durability::kSync, /*shared=*/true);
  options.write_timeout = milliseconds(500);
  FakeTieredHarness a(options);
  auto watch = Watch(a, {"k"});
  HoldCommits(a.state(), true);
  auto d = std::make_shared<Delivered>();
  std::vector<TxOp> ops;
  ops.emplace_back(SetOp("k", "tx", d));
  Pending<bool> exec;
  a.store().Transact(std::move(ops), watch, exec.cb());
  ASSERT_TRUE(WaitFor([&] { return a.store().Stats().queue_depth > 0; }));
  Pending<std::optional<std::string>> get;
  a.store().Get("k", get.cb());
  EXPECT_FALSE(get.answered(milliseconds(50)));
  a.clock().Advance(milliseconds(600));
  auto failed = exec.get();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kTimeout);
  auto waited = get.get();
  ASSERT_FALSE(waited.ok()) << "a held key answered while its commit was undecided";
  EXPECT_NE(waited.error().message.find("not committed yet"), std::string::npos)
      << waited.error().message;
  HoldCommits(a.state(), false);
  ASSERT_TRUE(WaitFor([&] { return a.store().Stats().queue_depth == 0; }));
  a.store().Unwatch(*watch);
  EXPECT_EQ(**a.Get("k"), "tx") << "the commit that timed out for its client still applied";
}

}  // namespace
}  // namespace skydb::testing
