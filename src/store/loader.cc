#include "store/loader.h"

#include <unordered_map>

namespace skydb::store {
namespace {

constexpr size_t kMaxReadBatch = 256;
thread_local int current_reader = -1;  // the reader this thread is, or -1

UnixMillis WallMs(Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.WallNow().time_since_epoch())
      .count();
}

}  // namespace

Loader::Loader(int readers, DurableBackend& durable, Clock& clock)
    : readers_(std::max(1, readers)), durable_(durable), clock_(clock) {}

Loader::~Loader() { Stop(); }

void Loader::Start() {
  for (int i = 0; i < readers_; ++i) threads_.emplace_back([this, i] { ReaderLoop(i); });
}

void Loader::Stop() {
  std::deque<Request> left;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    left.swap(queue_);
  }
  cv_.NotifyAll();
  for (auto& t : threads_) t.join();
  threads_.clear();
  for (auto& r : left) Refuse(r);
}

void Loader::Refuse(Request& request) {
  if (request.task) return request.task(-1);
  request.done(Error::Unavailable("the store is shutting down; retry on the next daemon"));
}

void Loader::Read(std::vector<std::string> keys, RowsDone done) {
  Request request{std::move(keys), std::move(done), nullptr};
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(request));
      cv_.NotifyOne();
      return;
    }
  }
  Refuse(request);
}

void Loader::Run(Task task) {
  Request request{{}, nullptr, std::move(task)};
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(request));
      cv_.NotifyOne();
      return;
    }
  }
  Refuse(request);
}

Result<std::vector<Row>> Loader::ReadAgain(const std::vector<std::string>& keys) {
  if (current_reader < 0) return Error::Internal("Loader::ReadAgain outside a reader");
  auto rows = durable_.ReadMany(current_reader, keys, WallMs(clock_));
  if (!rows.ok()) return Error::Unavailable("cannot read from PostgreSQL: " + rows.error().message);
  return std::move(rows).value();
}

size_t Loader::waiting() const {
  MutexLock lock(mu_);
  return queue_.size();
}

void Loader::ReaderLoop(int index) {
  current_reader = index;
  while (true) {
    std::vector<Request> batch;
    {
      MutexLock lock(mu_);
      while (queue_.empty() && !stopping_) cv_.Wait(mu_);
      if (queue_.empty()) return;
      if (queue_.front().task) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      } else {
        size_t keys = 0;
        while (!queue_.empty() && !queue_.front().task &&
               (batch.empty() || keys + queue_.front().keys.size() <= kMaxReadBatch)) {
          keys += queue_.front().keys.size();
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
    }
    if (batch.front().task) {
      batch.front().task(index);
    } else {
      ReadBatch(index, batch);
    }
  }
}

void Loader::ReadBatch(int index, std::vector<Request>& batch) {
  std::vector<std::string> keys;
  std::unordered_map<std::string, size_t> slot_of;
  for (const auto& r : batch) {
    for (const auto& key : r.keys) {
      if (slot_of.emplace(key, keys.size()).second) keys.push_back(key);
    }
  }
  auto rows = durable_.ReadMany(index, keys, WallMs(clock_));
  for (auto& r : batch) {
    if (!rows.ok()) {
      r.done(Error::Unavailable("cannot read from PostgreSQL: " + rows.error().message));
      continue;
    }
    std::vector<Row> mine;
    mine.reserve(r.keys.size());
    for (const auto& key : r.keys) mine.push_back((*rows)[slot_of[key]]);
    r.done(std::move(mine));
  }
}

}  // namespace skydb::store
