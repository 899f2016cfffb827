// INFO's fields against store figures a memory store never produces (cache evictions), through
// a store that forwards every operation to a memory store and reports chosen Stats.
#include <gtest/gtest.h>

#include <future>

#include "resp/commands.h"
#include "skydb/store.h"
#include "support/fakes.h"

namespace skydb::resp {
namespace {

// A memory store whose Stats() also carries `extra`'s eviction counters.
class EvictingStore final : public SessionStore {
 public:
  EvictingStore(Clock& clock, StoreStats extra)
      : inner_(NewMemoryStore(MemoryTierOptions{}, clock)), extra_(std::move(extra)) {}

  void Get(std::string key, StoreCallback<std::optional<std::string>> done) override {
    inner_->Get(std::move(key), std::move(done));
  }
  void GetEx(std::string key, std::optional<Expiry> change,
             StoreCallback<std::optional<std::string>> done) override {
    inner_->GetEx(std::move(key), change, std::move(done));
  }
  void GetDel(std::string key, StoreCallback<std::optional<std::string>> done) override {
    inner_->GetDel(std::move(key), std::move(done));
  }
  void Set(SetRequest request, StoreCallback<SetReply> done) override {
    inner_->Set(std::move(request), std::move(done));
  }
  void Delete(std::vector<std::string> keys, StoreCallback<int64_t> done) override {
    inner_->Delete(std::move(keys), std::move(done));
  }
  void Exists(std::vector<std::string> keys, StoreCallback<int64_t> done) override {
    inner_->Exists(std::move(keys), std::move(done));
  }
  void Expire(std::string key, Expiry expiry, ExpireCondition condition,
              StoreCallback<bool> done) override {
    inner_->Expire(std::move(key), expiry, condition, std::move(done));
  }
  void Increment(IncrRequest request, StoreCallback<IncrReply> done) override {
    inner_->Increment(std::move(request), std::move(done));
  }
  void DeleteAll(StoreCallback<int64_t> done) override { inner_->DeleteAll(std::move(done)); }
  void Ttl(std::string key, StoreCallback<TtlReply> done) override {
    inner_->Ttl(std::move(key), std::move(done));
  }
  void Scan(uint64_t cursor, std::string pattern, size_t count, std::optional<ValueType> type,
            StoreCallback<ScanReply> done) override {
    inner_->Scan(cursor, std::move(pattern), count, type, std::move(done));
  }
  int64_t Count() const override { return inner_->Count(); }
  StoreStats Stats() const override {
    StoreStats stats = inner_->Stats();
    stats.evictions_idle = extra_.evictions_idle;
    stats.evictions_memory = extra_.evictions_memory;
    return stats;
  }
  Status Close(std::chrono::milliseconds timeout) override { return inner_->Close(timeout); }

 private:
  std::unique_ptr<SessionStore> inner_;
  StoreStats extra_;
};

std::string Execute(CommandExecutor& executor, std::vector<std::string> args) {
  auto promise = std::make_shared<std::promise<std::string>>();
  auto future = promise->get_future();
  ClientState client;
  executor.Execute(client, std::move(args),
                   [promise](std::string reply) { promise->set_value(std::move(reply)); });
  if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return "timeout";
  return future.get();
}

// skydb never deletes a key to make room: an evicted value stays in PostgreSQL and its key stays
// live, so Redis's evicted_keys (keys deleted by maxmemory) is 0 and the cache's own evictions
// have fields of their own.
TEST(InfoTest, CacheEvictionsAreNotEvictedKeys) {
  testing::FakeClock clock;
  StoreStats extra;
  extra.evictions_idle = 3;
  extra.evictions_memory = 4;
  EvictingStore store(clock, extra);
  ServerCounters counters;
  CommandExecutor executor(ExecutorConfig{}, store, clock, counters);
  std::string stats = Execute(executor, {"INFO", "stats"});
  EXPECT_NE(stats.find("\r\nevicted_keys:0\r\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\r\nevicted_values_idle:3\r\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\r\nevicted_values_memory:4\r\n"), std::string::npos) << stats;
}

}  // namespace
}  // namespace skydb::resp
