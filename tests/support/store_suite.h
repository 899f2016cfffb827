// The behavioural suite every SessionStore backend must pass, unchanged: memory-only, tiered
// over the fake durable layer (unit tests) and tiered over real PostgreSQL (integration tests).
// A test binary instantiates it with INSTANTIATE_TEST_SUITE_P(Name, StoreBehaviour,
// ::testing::Values(factory...)).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <ostream>
#include <string>

#include "skydb/store.h"
#include "support/fakes.h"

namespace skydb::testing {

// Waits for a store callback (which may run on another thread).
template <typename T, typename Start>
Result<T> Await(Start&& start) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    return Error::Timeout("store callback did not run within 20 s");
  }
  return future.get();
}

// One backend under test, with its clock; Restart() reopens it on the same durable state
// (memory-only backends lose everything, and say so with durable() == false).
class StoreHarness {
 public:
  virtual ~StoreHarness() = default;
  virtual SessionStore& store() = 0;
  virtual FakeClock& clock() = 0;
  virtual bool durable() const = 0;
  virtual void Restart() = 0;
  // False for shared coherence, whose count is PostgreSQL's, refreshed periodically.
  virtual bool exact_count() const { return true; }

  // Blocking conveniences over the callback API.
  Result<SetReply> Set(const std::string& key, const std::string& value,
                       Expiry expiry = Expiry::Default(),
                       SetCondition condition = SetCondition::kAlways, bool return_old = false);
  Result<std::optional<std::string>> Get(const std::string& key);
  Result<std::optional<std::string>> GetEx(const std::string& key, std::optional<Expiry> change);
  Result<std::optional<std::string>> GetDel(const std::string& key);
  Result<int64_t> Del(std::vector<std::string> keys);
  Result<int64_t> Exists(std::vector<std::string> keys);
  Result<bool> Expire(const std::string& key, Expiry expiry, ExpireCondition condition = {});
  Result<IncrReply> Incr(const std::string& key, int64_t by);
  Result<IncrReply> IncrFloat(const std::string& key, long double by);
  Result<int64_t> DeleteAll();
  Result<TtlReply> Ttl(const std::string& key);
  Result<ScanReply> Scan(uint64_t cursor, const std::string& pattern, size_t count);
  // Every key a full scan returns (cursor walked to 0).
  std::vector<std::string> ScanAll(const std::string& pattern = "", size_t count = 10);
  UnixMillis NowMs() const;
  // Hashes and sets (tests/support/collection_suite.cc).
  Result<StoreReply> Collection(CollectionOp::Kind kind, std::vector<std::string> keys,
                                std::vector<std::string> fields = {},
                                std::vector<std::string> values = {});
  Result<StoreReply> Collection(CollectionOp op);
  Result<std::optional<KeyInfo>> TypeOf(const std::string& key);
  Result<bool> Rename(const std::string& from, const std::string& to, bool nx);
};

// A collection reply as text, maps' pairs and sets' members sorted, so that replies compare
// whatever order a hash or set is kept in (tests/support/collection_suite.cc).
std::string ShowReply(const Result<StoreReply>& reply);

using HarnessFactory = std::function<std::unique_ptr<StoreHarness>()>;

struct NamedFactory {
  std::string name;
  HarnessFactory make;
};

class StoreBehaviour : public ::testing::TestWithParam<NamedFactory> {
 protected:
  void SetUp() override { h_ = GetParam().make(); }
  void TearDown() override { h_.reset(); }
  StoreHarness& h() { return *h_; }
  // The session count, where the backend promises it exactly at every moment.
  void ExpectCount(int64_t expected) {
    if (h().exact_count()) {
      EXPECT_EQ(h().store().Count(), expected);
    }
  }
  void ExpectExpiring(int64_t expected) {
    if (h().exact_count()) {
      EXPECT_EQ(h().store().Stats().expiring, expected);
    }
  }

 private:
  std::unique_ptr<StoreHarness> h_;
};

// gtest shows the backend's name, not the factory's bytes.
inline void PrintTo(const NamedFactory& factory, std::ostream* os) { *os << factory.name; }

inline std::string FactoryName(const ::testing::TestParamInfo<NamedFactory>& info) {
  return info.param.name;
}

}  // namespace skydb::testing
