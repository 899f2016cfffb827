// Requests: the carrier's queues, each callback handed out exactly once.
#include "pgconn/pubsub_requests.h"

namespace skydb::pg::pubsub {

void Fallbacks::Run(const std::string& why) {
  for (auto& done : published) done(0);
  for (auto& done : recorded) done();
  for (auto& done : answers) done(Error::Unavailable(why));
  published.clear();
  recorded.clear();
  answers.clear();
}

bool Requests::Publish(std::string_view channel, std::string_view message,
                       PubSubCarrier::Published& done, SteadyTime now, bool* first) {
  size_t bytes = channel.size() + message.size();
  MutexLock lock(mu_);
  if (!up_ || stopped_ || queue_.size() >= limits_.max_messages ||
      (queue_bytes_ + bytes > limits_.max_bytes && !queue_.empty())) {
    return false;
  }
  *first = queue_.empty();
  queue_bytes_ += bytes;
  queue_.push_back({{std::string(channel), std::string(message)}, std::move(done), now});
  return true;
}

bool Requests::Announce(SubscriptionCount count, PubSubCarrier::Recorded recorded, SteadyTime now) {
  MutexLock lock(mu_);
  bool first = counts_.empty() && waiters_.empty();
  counts_[{count.pattern, std::move(count.name)}] = count.subscribers;
  if (recorded) waiters_.push_back({std::move(recorded), now});
  return first;
}

bool Requests::Ask(Question question, PubSubCarrier::Answer& done, SteadyTime now) {
  MutexLock lock(mu_);
  if (!up_ || stopped_) return false;
  questions_.push_back({std::move(question), std::move(done), now});
  return true;
}

bool Requests::HasWork() const {
  MutexLock lock(mu_);
  return !queue_.empty() || !counts_.empty() || !waiters_.empty() || !questions_.empty();
}

size_t Requests::queued_messages() const {
  MutexLock lock(mu_);
  return queue_.size();
}

void Requests::DropQueued(Fallbacks& out) {
  for (auto& queued : queue_) out.published.push_back(std::move(queued.done));
  queue_.clear();
  queue_bytes_ = 0;
  for (auto& asked : questions_) out.answers.push_back(std::move(asked.done));
  questions_.clear();
}

Fallbacks Requests::SetUp(bool up) {
  Fallbacks out;
  MutexLock lock(mu_);
  up_ = up && !stopped_;
  if (!up_) DropQueued(out);
  return out;
}

std::vector<Outgoing> Requests::TakeBatch() {
  std::vector<Outgoing> out;
  MutexLock lock(mu_);
  batch_.clear();
  size_t bytes = 0;
  while (!queue_.empty() && out.size() < limits_.batch_messages) {
    Queued& front = queue_.front();
    size_t size = front.message.channel.size() + front.message.message.size();
    if (!out.empty() && bytes + size > limits_.batch_bytes) break;
    bytes += size;
    queue_bytes_ -= size;
    batch_.push_back({std::move(front.done), front.since});
    out.push_back(std::move(front.message));
    queue_.pop_front();
  }
  return out;
}

std::vector<PubSubCarrier::Published> Requests::FinishBatch() {
  std::vector<PubSubCarrier::Published> out;
  MutexLock lock(mu_);
  out.reserve(batch_.size());
  for (auto& in_flight : batch_) out.push_back(std::move(in_flight.done));
  batch_.clear();
  return out;
}

std::vector<SubscriptionCount> Requests::TakeCounts() {
  std::vector<SubscriptionCount> out;
  MutexLock lock(mu_);
  for (auto& [key, subscribers] : counts_) out.push_back({key.first, key.second, subscribers});
  counts_.clear();
  for (auto& waiter : waiters_) recording_.push_back(std::move(waiter));
  waiters_.clear();
  return out;
}

std::vector<PubSubCarrier::Recorded> Requests::FinishCounts() {
  std::vector<PubSubCarrier::Recorded> out;
  MutexLock lock(mu_);
  for (auto& waiter : recording_) {
    if (waiter.recorded) out.push_back(std::move(waiter.recorded));
  }
  recording_.clear();
  return out;
}

std::vector<PubSubCarrier::Recorded> Requests::DropCounts() {
  std::vector<PubSubCarrier::Recorded> out;
  MutexLock lock(mu_);
  counts_.clear();
  for (auto& waiter : recording_) {
    if (waiter.recorded) out.push_back(std::move(waiter.recorded));
  }
  recording_.clear();
  for (auto& waiter : waiters_) out.push_back(std::move(waiter.recorded));
  waiters_.clear();
  return out;
}

std::optional<Question> Requests::TakeQuestion() {
  MutexLock lock(mu_);
  if (questions_.empty() || asking_) return std::nullopt;
  asking_ = std::move(questions_.front());
  questions_.pop_front();
  return asking_->question;
}

PubSubCarrier::Answer Requests::FinishQuestion() {
  MutexLock lock(mu_);
  PubSubCarrier::Answer done;
  if (asking_) done = std::move(asking_->done);
  asking_.reset();
  return done;
}

Fallbacks Requests::Expire(SteadyTime now, SteadyTime* next) {
  Fallbacks out;
  MutexLock lock(mu_);
  SteadyTime oldest = now;
  auto consider = [&](SteadyTime since) {
    if (since < oldest) oldest = since;
  };
  while (!queue_.empty() && Expired(queue_.front().since, now)) {
    Queued& front = queue_.front();
    queue_bytes_ -= front.message.channel.size() + front.message.message.size();
    out.published.push_back(std::move(front.done));
    queue_.pop_front();
  }
  if (!queue_.empty()) consider(queue_.front().since);
  for (auto& in_flight : batch_) {
    if (!in_flight.done) continue;
    if (Expired(in_flight.since, now)) {
      out.published.push_back(std::move(in_flight.done));
      in_flight.done = nullptr;
    } else {
      consider(in_flight.since);
    }
  }
  out.expired_messages = out.published.size();
  for (auto& waiter : recording_) {
    if (!waiter.recorded) continue;
    if (Expired(waiter.since, now)) {
      out.recorded.push_back(std::move(waiter.recorded));
      waiter.recorded = nullptr;
    } else {
      consider(waiter.since);
    }
  }
  while (!waiters_.empty() && Expired(waiters_.front().since, now)) {
    out.recorded.push_back(std::move(waiters_.front().recorded));
    waiters_.pop_front();
  }
  if (!waiters_.empty()) consider(waiters_.front().since);
  while (!questions_.empty() && Expired(questions_.front().since, now)) {
    out.answers.push_back(std::move(questions_.front().done));
    questions_.pop_front();
  }
  if (!questions_.empty()) consider(questions_.front().since);
  if (asking_ && asking_->done) {
    if (Expired(asking_->since, now)) {
      out.answers.push_back(std::move(asking_->done));
      asking_->done = nullptr;
    } else {
      consider(asking_->since);
    }
  }
  *next = oldest + limits_.wait;
  return out;
}

Fallbacks Requests::Stop() {
  Fallbacks out;
  MutexLock lock(mu_);
  stopped_ = true;
  up_ = false;
  DropQueued(out);
  for (auto& in_flight : batch_) {
    if (in_flight.done) out.published.push_back(std::move(in_flight.done));
  }
  batch_.clear();
  for (auto& waiter : recording_) {
    if (waiter.recorded) out.recorded.push_back(std::move(waiter.recorded));
  }
  recording_.clear();
  for (auto& waiter : waiters_) out.recorded.push_back(std::move(waiter.recorded));
  waiters_.clear();
  counts_.clear();
  if (asking_ && asking_->done) out.answers.push_back(std::move(asking_->done));
  asking_.reset();
  return out;
}

}  // namespace skydb::pg::pubsub
