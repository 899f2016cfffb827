// The carrier's sender: registration, subscription counts, PUBSUB questions, message batches,
// heartbeats and sweeps, on one connection of its own.
#include <spdlog/spdlog.h>

#include <set>

#include "pgconn/pubsub_threads.h"

namespace skydb::pg::pubsub {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kRetryAfterFailure{1000};  // a statement failed on a live connection

void RunRecorded(std::vector<PubSubCarrier::Recorded> waiters) {
  for (auto& recorded : waiters) recorded();
}

}  // namespace

Sender::Sender(Shared& shared)
    : s_(shared), backoff_(shared.options.min_backoff, shared.options.max_backoff) {}

void Sender::Run() {
  while (!s_.stopping.load()) {
    if (!conn_ && !Connect()) {
      // Until the next attempt: SUBSCRIBE replies go out at once (the whole set is announced
      // at the next registration); PUBLISH and PUBSUB are refused while down (Requests).
      auto until = Clock::now() + backoff_.Next();
      while (!s_.stopping.load() && Clock::now() < until) {
        RunRecorded(s_.requests.DropCounts());
        s_.sender_wake.Wait(std::chrono::duration_cast<milliseconds>(until - Clock::now()));
      }
      RunRecorded(s_.requests.DropCounts());
      continue;
    }
    if (!Step()) LoseConnection();
  }
  if (conn_ && registered_) (void)Deregister(*conn_, s_.me);  // a clean stop: counted no more
}

bool Sender::Connect() {
  auto opened = OpenCarrierConnection(s_, "skydb pubsub send", "pubsub sender");
  if (!opened.ok()) {
    if (outage_.Report()) {
      spdlog::warn(
          "pubsub: cannot reach PostgreSQL to carry messages to other daemons: {}; retrying "
          "(PUBLISH reaches this daemon's subscribers only meanwhile)",
          opened.error().message);
    }
    return false;
  }
  conn_ = std::move(opened).value();
  backoff_.Reset();
  registered_ = false;
  next_heartbeat_ = next_sweep_ = Clock::now();
  s_.requests.SetUp(true).Run("not connected");
  if (outage_.Recover()) spdlog::info("pubsub: sending messages to other daemons again");
  return true;
}

void Sender::LoseConnection() {
  if (outage_.Report()) {
    spdlog::warn(
        "pubsub: lost the PostgreSQL connection that carries messages to other daemons; "
        "reconnecting (PUBLISH reaches this daemon's subscribers only meanwhile)");
  }
  conn_.reset();
  registered_ = false;
  s_.requests.SetUp(false).Run("not connected to PostgreSQL");
  RunRecorded(s_.requests.DropCounts());
}

bool Sender::Failed(const Error& error, const char* what) {
  if (!conn_->Healthy()) return false;
  if (failing_.Report()) {
    spdlog::error("pubsub: cannot {}: {}; retrying", what, error.message);
  }
  return true;
}

bool Sender::Step() {
  auto now = Clock::now();
  Clock::time_point wake = next_sweep_;
  if (registered_) wake = std::min(wake, next_heartbeat_);
  if (registered_ != s_.listening.load()) wake = std::min(wake, next_attempt_);
  if (!s_.requests.HasWork() && now < wake) {
    s_.sender_wake.Wait(std::chrono::ceil<milliseconds>(wake - now));
    if (s_.stopping.load()) return true;
  }
  return Registration() && Record() && Answer() && SendBatch() && Maintain();
}

// Registered exactly while the listener LISTENs: a message another daemon commits for this one
// after the registration is then sure to be heard.
bool Sender::Registration() {
  if (!s_.listening.load()) {
    RunRecorded(s_.requests.DropCounts());
    if (!registered_) return true;
    registered_ = false;
    Status gone = Deregister(*conn_, s_.me);
    return gone.ok() || Failed(gone.error(), "remove this daemon's subscriptions");
  }
  if (registered_ || Clock::now() < next_attempt_) return true;
  (void)s_.requests.TakeCounts();  // what they say is in the snapshot taken after them
  std::vector<SubscriptionCount> all;
  {
    MutexLock lock(s_.local_mu);
    if (s_.local != nullptr) all = s_.local->Subscriptions();
  }
  Status registered = Register(*conn_, s_.me, s_.options.description, all);
  RunRecorded(s_.requests.FinishCounts());
  if (!registered.ok()) {
    next_attempt_ = Clock::now() + kRetryAfterFailure;
    return Failed(registered.error(), "register this daemon's subscriptions");
  }
  registered_ = true;
  next_heartbeat_ = Clock::now() + s_.options.peer_timeout / 5;
  if (failing_.Recover()) spdlog::info("pubsub: the registry accepts this daemon again");
  spdlog::debug("pubsub: registered {} subscription(s) of this daemon", all.size());
  return true;
}

bool Sender::Record() {
  if (!registered_) return true;
  std::vector<SubscriptionCount> counts = s_.requests.TakeCounts();
  if (counts.empty()) {
    RunRecorded(s_.requests.FinishCounts());
    return true;
  }
  Status recorded = RecordCounts(*conn_, s_.me, counts);
  RunRecorded(s_.requests.FinishCounts());
  if (recorded.ok()) return true;
  registered_ = false;  // announce the whole set again
  next_attempt_ = Clock::now() + kRetryAfterFailure;
  return Failed(recorded.error(), "record this daemon's subscriptions");
}

bool Sender::Answer() {
  std::optional<Question> question = s_.requests.TakeQuestion();
  if (!question) return true;
  auto answer =
      ReadRemote(*conn_, s_.me, s_.options.peer_timeout, question->patterns, question->names);
  std::optional<Error> failure;
  if (!answer.ok()) failure = answer.error();
  if (auto done = s_.requests.FinishQuestion()) done(std::move(answer));
  return !failure || Failed(*failure, "read the other daemons' subscriptions");
}

// One batch: the other live daemons' subscriptions to its channels, then one transaction that
// stores its large messages and NOTIFYs all of those that reach a daemon. Each PUBLISH is
// answered with the subscribers its message was committed for.
bool Sender::SendBatch() {
  std::vector<Outgoing> batch = s_.requests.TakeBatch();
  if (batch.empty()) return true;
  std::vector<std::string_view> channels;
  channels.reserve(batch.size());
  std::set<std::string_view> distinct;
  for (const auto& m : batch) {
    channels.push_back(m.channel);
    distinct.insert(m.channel);
  }
  std::vector<uint64_t> receivers(batch.size(), 0);
  auto rows = ReadReach(*conn_, s_.me, s_.options.peer_timeout, {distinct.begin(), distinct.end()});
  Status sent = Ok();
  if (rows.ok()) {
    std::vector<Reach> reach = ComputeReach(*rows, channels, s_.options.matches);
    std::vector<OutMessage> out;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (reach[i].receivers > 0)
        out.push_back({batch[i].channel, batch[i].message, &reach[i].daemons});
    }
    if (!out.empty()) sent = Send(*conn_, s_.me, EncodeBatch(s_.me, &next_seq_, out));
    for (size_t i = 0; i < batch.size() && sent.ok(); ++i) receivers[i] = reach[i].receivers;
  }
  std::vector<PubSubCarrier::Published> done = s_.requests.FinishBatch();
  for (size_t i = 0; i < done.size(); ++i) {
    if (done[i]) done[i](receivers[i]);
  }
  if (!rows.ok()) return Failed(rows.error(), "read which daemons subscribe to a message");
  if (!sent.ok()) return Failed(sent.error(), "send messages to other daemons");
  return true;
}

bool Sender::Maintain() {
  auto now = Clock::now();
  if (registered_ && now >= next_heartbeat_) {
    next_heartbeat_ = now + s_.options.peer_timeout / 5;
    auto recreated = Heartbeat(*conn_, s_.me, s_.options.description);
    if (!recreated.ok()) return Failed(recreated.error(), "refresh this daemon's heartbeat");
    if (*recreated) {
      spdlog::warn(
          "pubsub: this daemon's registration was gone (PostgreSQL restarted, or the daemon "
          "was silent for longer than 3 x store.pubsub_peer_timeout); announcing its "
          "subscriptions again");
      registered_ = false;
    }
  }
  if (now >= next_sweep_) {
    next_sweep_ = now + s_.options.peer_timeout;
    Status swept = Sweep(*conn_, s_.options.retention, 3 * s_.options.peer_timeout);
    if (!swept.ok()) return Failed(swept.error(), "reclaim old messages and silent daemons");
  }
  return true;
}

}  // namespace skydb::pg::pubsub
