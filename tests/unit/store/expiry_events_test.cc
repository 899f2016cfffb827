// The store's side of the "expired" keyspace event: each key whose deadline passes is told to
// the ExpiryListener once — from memory with exclusive coherence (a read that finds it expired,
// or the sweep), from the database's one announcer with shared coherence (a store that wants
// it) — and nothing is collected while the listener does not want it. The same for hashes whose
// fields pass their own deadlines ("hexpired"): from the database's announcer whatever the
// coherence, from memory in a memory-only store.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "harnesses.h"

namespace skydb::testing {
namespace {

using std::chrono::milliseconds;

class CollectingListener final : public ExpiryListener {
 public:
  bool WantsExpired() const override { return wanted.load(); }
  void Expired(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu);
    heard.insert(heard.end(), keys.begin(), keys.end());
  }
  std::vector<std::string> Heard(size_t at_least) {
    for (int i = 0; i < 400; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (heard.size() >= at_least) break;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    std::lock_guard<std::mutex> lock(mu);
    auto sorted = heard;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

  bool WantsExpiredFields() const override { return wanted_fields.load(); }
  void FieldsExpired(const std::vector<ExpiredFields>& hashes) override {
    std::lock_guard<std::mutex> lock(mu);
    heard_fields.insert(heard_fields.end(), hashes.begin(), hashes.end());
  }
  std::vector<ExpiredFields> HeardFields(size_t at_least) {
    for (int i = 0; i < 400; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (heard_fields.size() >= at_least) break;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    std::lock_guard<std::mutex> lock(mu);
    return heard_fields;
  }

  std::atomic<bool> wanted{true};
  std::atomic<bool> wanted_fields{true};
  std::mutex mu;
  std::vector<std::string> heard;
  std::vector<ExpiredFields> heard_fields;
};

Result<StoreReply> Apply(SessionStore& store, CollectionOp op) {
  Pending<StoreReply> done;
  store.Collection(std::move(op), done.cb());
  return done.get();
}
CollectionOp HSet(const std::string& key, std::vector<std::string> fields) {
  CollectionOp op;
  op.kind = CollectionOp::Kind::kHSet;
  op.keys = {key};
  op.values.assign(fields.size(), "v");
  op.fields = std::move(fields);
  return op;
}
CollectionOp HPExpireAt(const std::string& key, UnixMillis when, std::string field) {
  CollectionOp op;
  op.kind = CollectionOp::Kind::kHExpire;
  op.keys = {key};
  op.fields = {std::move(field)};
  op.expiry = Expiry::At(when);
  return op;
}

// Two stores with shared coherence on one fake database, each with its listener; both are
// announcing (from their own now) once built, b only if `b_wants`.
struct SharedPair {
  explicit SharedPair(bool b_wants = true) {
    heard_b->wanted = b_wants;
    a.store().SetExpiryListener(heard_a);
    b.store().SetExpiryListener(heard_b);
    std::this_thread::sleep_for(milliseconds(100));
  }
  ~SharedPair() {
    a.store().SetExpiryListener(nullptr);
    b.store().SetExpiryListener(nullptr);
  }
  void Advance(milliseconds by) {
    a.clock().Advance(by);
    b.clock().Advance(by);
  }
  // What either heard, once `n` arrived in all (bounded) and a few more ticks passed.
  template <typename Heard>
  auto Both(size_t n, Heard heard) {
    for (int i = 0; i < 400 && heard(*heard_a).size() + heard(*heard_b).size() < n; ++i) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    std::this_thread::sleep_for(milliseconds(100));  // more ticks: nothing twice
    auto all = heard(*heard_a);
    auto more = heard(*heard_b);
    all.insert(all.end(), more.begin(), more.end());
    return all;
  }
  FakeTieredHarness a{FakeOptions(Durability::kSync, true)};
  FakeTieredHarness b{FakeOptions(Durability::kSync, true), a.shared_state()};
  std::shared_ptr<CollectingListener> heard_a = std::make_shared<CollectingListener>();
  std::shared_ptr<CollectingListener> heard_b = std::make_shared<CollectingListener>();
};

TEST(ExpiryEvents, ExclusiveStoreTellsEachExpiredKeyOnceReadOrSwept) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  auto listener = std::make_shared<CollectingListener>();
  h.store().SetExpiryListener(listener);
  ASSERT_TRUE(h.Set("read", "1", Expiry::At(h.NowMs() + 100)).ok());
  ASSERT_TRUE(h.Set("swept", "1", Expiry::At(h.NowMs() + 100)).ok());
  ASSERT_TRUE(h.Set("lives", "1", Expiry::At(h.NowMs() + 60000)).ok());
  h.clock().Advance(milliseconds(200));
  EXPECT_FALSE(h.Get("read")->has_value());
  EXPECT_EQ(listener->Heard(2), (std::vector<std::string>{"read", "swept"}));
  std::this_thread::sleep_for(milliseconds(100));  // several sweeps more
  EXPECT_EQ(listener->Heard(3).size(), 2u);
  h.store().SetExpiryListener(nullptr);
}

TEST(ExpiryEvents, NothingIsCollectedWhileUnwanted) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  auto listener = std::make_shared<CollectingListener>();
  listener->wanted = false;
  h.store().SetExpiryListener(listener);
  ASSERT_TRUE(h.Set("k", "1", Expiry::At(h.NowMs() + 100)).ok());
  h.clock().Advance(milliseconds(200));
  EXPECT_FALSE(h.Get("k")->has_value());
  std::this_thread::sleep_for(milliseconds(100));
  listener->wanted = true;
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(listener->Heard(0).empty());
  h.store().SetExpiryListener(nullptr);
}

TEST(ExpiryEvents, SharedStoresAnnounceEachExpiryOnceBetweenThem) {
  SharedPair p;
  ASSERT_TRUE(p.a.Set("s1", "1", Expiry::At(p.a.NowMs() + 100)).ok());
  ASSERT_TRUE(p.b.Set("s2", "1", Expiry::At(p.b.NowMs() + 100)).ok());
  ASSERT_TRUE(p.a.Set("lives", "1", Expiry::None()).ok());
  p.Advance(milliseconds(200));
  auto all = p.Both(2, [](CollectingListener& l) { return l.Heard(0); });
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"s1", "s2"}));
}

// Only a store that wants the event announces, and one that stops wanting it hands over to one
// that does (as a daemon turning `x` off with CONFIG SET lets go of the announcer lock).
TEST(ExpiryEvents, SharedStoresHandOverAnnouncingWhenTheAnnouncerStopsWanting) {
  SharedPair p(/*b_wants=*/false);  // a announces from its own now
  ASSERT_TRUE(p.a.Set("first", "1", Expiry::At(p.a.NowMs() + 100)).ok());
  p.Advance(milliseconds(200));
  EXPECT_EQ(p.heard_a->Heard(1), (std::vector<std::string>{"first"}));
  p.heard_a->wanted = false;
  p.heard_b->wanted = true;
  std::this_thread::sleep_for(milliseconds(100));  // a lets go, b announces from its own now
  ASSERT_TRUE(p.b.Set("second", "1", Expiry::At(p.b.NowMs() + 100)).ok());
  p.Advance(milliseconds(200));
  EXPECT_EQ(p.heard_b->Heard(1), (std::vector<std::string>{"second"})) << "no hand-over";
  EXPECT_EQ(p.heard_a->Heard(1), (std::vector<std::string>{"first"}));
}

// Exclusive coherence: the fields leave memory when found, but the database's rows are what is
// announced, so an evicted or reloaded hash is announced all the same, and a field is never
// announced twice. The last field's expiry empties the hash ("del").
TEST(ExpiryEvents, HashesWithExpiredFieldsAreToldOnceFromTheDatabase) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  auto listener = std::make_shared<CollectingListener>();
  h.store().SetExpiryListener(listener);
  std::this_thread::sleep_for(milliseconds(100));  // announcing from its own now
  ASSERT_TRUE(Apply(h.store(), HSet("h", {"a", "b"})).ok());
  ASSERT_TRUE(Apply(h.store(), HSet("other", {"a"})).ok());
  ASSERT_TRUE(Apply(h.store(), HPExpireAt("h", h.NowMs() + 100, "a")).ok());
  h.clock().Advance(milliseconds(200));
  EXPECT_EQ(listener->HeardFields(1), (std::vector<ExpiredFields>{{"h", false}}));
  ASSERT_TRUE(Apply(h.store(), HPExpireAt("h", h.NowMs() + 100, "b")).ok());
  h.clock().Advance(milliseconds(200));
  std::this_thread::sleep_for(milliseconds(100));  // several ticks: nothing twice
  EXPECT_EQ(listener->HeardFields(2), (std::vector<ExpiredFields>{{"h", false}, {"h", true}}));
  h.store().SetExpiryListener(nullptr);
}

// A hash not in memory (the store restarted: only the database holds its fields) is told all
// the same, from its rows.
TEST(ExpiryEvents, AHashNotInMemoryIsToldFromItsRows) {
  FakeTieredHarness h(FakeOptions(Durability::kSync));
  ASSERT_TRUE(Apply(h.store(), HSet("cold", {"a", "b"})).ok());
  ASSERT_TRUE(Apply(h.store(), HPExpireAt("cold", h.NowMs() + 300, "a")).ok());
  h.Restart();
  auto listener = std::make_shared<CollectingListener>();
  h.store().SetExpiryListener(listener);
  std::this_thread::sleep_for(milliseconds(100));  // announcing from its own now
  h.clock().Advance(milliseconds(400));
  EXPECT_EQ(listener->HeardFields(1), (std::vector<ExpiredFields>{{"cold", false}}));
  h.store().SetExpiryListener(nullptr);
}

TEST(ExpiryEvents, SharedStoresTellEachHashWithExpiredFieldsOnceBetweenThem) {
  SharedPair p;
  ASSERT_TRUE(Apply(p.a.store(), HSet("h", {"a", "b"})).ok());
  ASSERT_TRUE(Apply(p.b.store(), HPExpireAt("h", p.b.NowMs() + 100, "a")).ok());
  p.Advance(milliseconds(200));
  EXPECT_EQ(p.Both(1, [](CollectingListener& l) { return l.HeardFields(0); }),
            (std::vector<ExpiredFields>{{"h", false}}));
}

// A memory-only store has no database to ask: its sweep, or a read that finds the field
// expired first, tells the hash once.
TEST(ExpiryEvents, AMemoryStoreTellsExpiredFieldsFromMemory) {
  FakeClock clock;
  MemoryTierOptions memory;
  memory.sweep_interval = milliseconds(20);
  auto store = NewMemoryStore(memory, clock);
  auto listener = std::make_shared<CollectingListener>();
  store->SetExpiryListener(listener);
  UnixMillis now =
      std::chrono::duration_cast<milliseconds>(clock.WallNow().time_since_epoch()).count();
  ASSERT_TRUE(Apply(*store, HSet("swept", {"a", "b"})).ok());
  ASSERT_TRUE(Apply(*store, HSet("read", {"a"})).ok());
  ASSERT_TRUE(Apply(*store, HPExpireAt("swept", now + 100, "a")).ok());
  ASSERT_TRUE(Apply(*store, HPExpireAt("read", now + 100, "a")).ok());
  clock.Advance(milliseconds(200));
  CollectionOp get;
  get.kind = CollectionOp::Kind::kHGet;
  get.keys = {"read"};
  get.fields = {"a"};
  EXPECT_EQ(Apply(*store, get)->type, StoreReply::Type::kNull);
  auto heard = listener->HeardFields(2);
  std::this_thread::sleep_for(milliseconds(100));
  heard = listener->HeardFields(3);
  std::sort(heard.begin(), heard.end(),
            [](const ExpiredFields& x, const ExpiredFields& y) { return x.key < y.key; });
  EXPECT_EQ(heard, (std::vector<ExpiredFields>{{"read", true}, {"swept", false}}));
  store->SetExpiryListener(nullptr);
}

}  // namespace
}  // namespace skydb::testing
