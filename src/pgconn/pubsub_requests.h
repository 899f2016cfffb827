// What the pub/sub carrier has been asked and not yet answered: messages to carry (queued and
// the batch in flight), subscription counts to record and the replies waiting for them, and
// PUBSUB questions for the registry. The carrier's sender thread takes work from here and
// reports how it went; its watchdog expires what waited longer than the wait bound, so no
// reply waits for PostgreSQL for longer than that, whatever PostgreSQL does.
//
// Every callback leaves this object exactly once: through the sender (the result), through
// Expire (the fallback), or at Stop; callbacks are handed out, never run under the lock.
// Thread-safety: every method may be called from any thread; one mutex guards everything.
// Failure: a refused request (the carrier is down, the queue is full) is reported to the
// caller, which answers it at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "skydb/mutex.h"
#include "skydb/pubsub.h"

namespace skydb::pg::pubsub {

using SteadyTime = std::chrono::steady_clock::time_point;

struct RequestLimits {
  size_t max_messages = 65536;            // messages waiting for the sender
  size_t max_bytes = 64 << 20;            // their channels and messages
  size_t batch_messages = 1024;           // one batch (one transaction)
  size_t batch_bytes = 16 << 20;          // at least one message, whatever its size
  std::chrono::milliseconds wait{10000};  // the longest a reply waits for PostgreSQL
};

struct Outgoing {
  std::string channel;
  std::string message;
};

struct Question {
  bool patterns = false;
  std::optional<std::vector<std::string>> names;
};

// Callbacks to run, with the fallback each request gets when it cannot be served.
struct Fallbacks {
  std::vector<PubSubCarrier::Published> published;  // run with 0
  std::vector<PubSubCarrier::Recorded> recorded;
  std::vector<PubSubCarrier::Answer> answers;  // run with an error
  size_t expired_messages = 0;                 // of `published`, those the watchdog expired
  bool empty() const { return published.empty() && recorded.empty() && answers.empty(); }
  void Run(const std::string& why);
};

class Requests {
 public:
  explicit Requests(RequestLimits limits) : limits_(limits) {}

  // ---- callers (any thread) ----
  // Queues a message. false: refused (down, full or stopping); `done` was not taken.
  // `*first`: the queue was empty (the sender may be asleep).
  bool Publish(std::string_view channel, std::string_view message, PubSubCarrier::Published& done,
               SteadyTime now, bool* first) EXCLUDES(mu_);
  // Records the latest count for a name; `recorded` waits for the next record to commit.
  // true: nothing was waiting before (the sender may be asleep).
  bool Announce(SubscriptionCount count, PubSubCarrier::Recorded recorded, SteadyTime now)
      EXCLUDES(mu_);
  // Queues a question. false: refused (down or stopping); `done` was not taken.
  bool Ask(Question question, PubSubCarrier::Answer& done, SteadyTime now) EXCLUDES(mu_);
  // True when the sender has work (or must wake to drop it).
  bool HasWork() const EXCLUDES(mu_);

  // ---- the sender ----
  // The sender connected (or lost its connection: everything queued falls back).
  Fallbacks SetUp(bool up) EXCLUDES(mu_);
  // The next batch of messages, in order; their callbacks are now in flight.
  std::vector<Outgoing> TakeBatch() EXCLUDES(mu_);
  // The in-flight batch's callbacks not yet expired, aligned with TakeBatch's messages (an
  // expired one is empty).
  std::vector<PubSubCarrier::Published> FinishBatch() EXCLUDES(mu_);
  // The counts to record (latest per name); their waiters are now in flight.
  std::vector<SubscriptionCount> TakeCounts() EXCLUDES(mu_);
  // The in-flight counts' waiters not yet expired.
  std::vector<PubSubCarrier::Recorded> FinishCounts() EXCLUDES(mu_);
  // Not registered (the listener is down): the counts are dropped, to be announced whole at
  // the next registration; every waiter is answered now.
  std::vector<PubSubCarrier::Recorded> DropCounts() EXCLUDES(mu_);
  std::optional<Question> TakeQuestion() EXCLUDES(mu_);
  PubSubCarrier::Answer FinishQuestion() EXCLUDES(mu_);  // empty when expired

  // ---- the watchdog ----
  // What waited longer than the wait bound. `next`: when to look again.
  Fallbacks Expire(SteadyTime now, SteadyTime* next) EXCLUDES(mu_);
  // Everything still waiting; nothing is accepted afterwards.
  Fallbacks Stop() EXCLUDES(mu_);

  size_t queued_messages() const EXCLUDES(mu_);

 private:
  struct Queued {
    Outgoing message;
    PubSubCarrier::Published done;
    SteadyTime since;
  };
  struct Waiter {
    PubSubCarrier::Recorded recorded;
    SteadyTime since;
  };
  struct Asked {
    Question question;
    PubSubCarrier::Answer done;
    SteadyTime since;
  };
  bool Expired(SteadyTime since, SteadyTime now) const { return now - since >= limits_.wait; }
  void DropQueued(Fallbacks& out) REQUIRES(mu_);

  const RequestLimits limits_;
  mutable Mutex mu_;
  bool up_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  std::deque<Queued> queue_ GUARDED_BY(mu_);
  size_t queue_bytes_ GUARDED_BY(mu_) = 0;
  struct InFlight {
    PubSubCarrier::Published done;  // empty once expired
    SteadyTime since;
  };
  std::vector<InFlight> batch_ GUARDED_BY(mu_);
  std::map<std::pair<bool, std::string>, uint64_t> counts_ GUARDED_BY(mu_);
  std::deque<Waiter> waiters_ GUARDED_BY(mu_);
  std::vector<Waiter> recording_ GUARDED_BY(mu_);  // waiters of the counts in flight
  std::deque<Asked> questions_ GUARDED_BY(mu_);
  std::optional<Asked> asking_ GUARDED_BY(mu_);
};

}  // namespace skydb::pg::pubsub
