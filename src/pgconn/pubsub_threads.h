// Internal to the pub/sub carrier (pgconn/pubsub_carrier.h): the state its threads share, and
// the sender and the listener, each the only user of its own connection.
//
// Thread-safety: Shared's members are atomics, immutable after construction, or guarded by
// their mutex; a Sender or Listener object is used by its own thread only (Run), apart from
// Wake, which any thread may call.
// Ownership: the carrier owns Shared, the Sender and the Listener; both borrow Shared.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pgconn/pgconn.h"
#include "pgconn/pubsub_carrier.h"
#include "pgconn/pubsub_requests.h"
#include "pgconn/pubsub_sql.h"
#include "skydb/mutex.h"

namespace skydb::pg::pubsub {

// An eventfd another thread wakes this one with.
class Waker {
 public:
  Waker();
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;
  void Wake();
  // Waits until woken, `fd` is readable (if >= 0) or `timeout` passes; clears the wake-up.
  void Wait(std::chrono::milliseconds timeout, int fd = -1);

 private:
  int fd_ = -1;
};

// 0, then min doubling to max; Reset after a success.
class Backoff {
 public:
  Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max) : min_(min), max_(max) {}
  std::chrono::milliseconds Next();
  void Reset() { current_ = std::chrono::milliseconds(0); }

 private:
  std::chrono::milliseconds min_, max_, current_{0};
};

// Logs a problem once per episode: the first Report of an episode logs, Recover ends it.
class Episode {
 public:
  bool Report() { return !std::exchange(open_, true); }   // true: log it now
  bool Recover() { return std::exchange(open_, false); }  // true: it had been reported
  bool open() const { return open_; }

 private:
  bool open_ = false;
};

struct Shared {
  Shared(PubSubCarrierOptions o, uint64_t id);
  const PubSubCarrierOptions options;
  const uint64_t me;  // this daemon's id in skydb_pubsub_daemons and in payloads
  Requests requests;
  std::atomic<bool> stopping{false};
  std::atomic<bool> listening{false};  // the listener is LISTENing now
  Waker sender_wake;
  Waker listener_wake;

  // The local side; held while it is called, so Attach(nullptr) waits for a call running.
  Mutex local_mu;
  PubSubLocal* local GUARDED_BY(local_mu) = nullptr;
};

// Opens a carrier connection with `application_name` and its session settings.
Result<Connection> OpenCarrierConnection(const Shared& shared, const char* application_name,
                                         const char* name);

class Sender {
 public:
  explicit Sender(Shared& shared);
  void Run();

 private:
  bool Connect();
  bool Step();  // false: the connection was lost
  bool Registration();
  bool Record();
  bool Answer();
  bool SendBatch();
  bool Maintain();
  bool Failed(const Error& error, const char* what);  // false when the connection is gone
  void LoseConnection();

  Shared& s_;
  std::optional<Connection> conn_;
  Backoff backoff_;
  Episode outage_;
  Episode failing_;  // statements failing on a live connection
  bool registered_ = false;
  uint64_t next_seq_ = 1;
  std::chrono::steady_clock::time_point next_heartbeat_{};
  std::chrono::steady_clock::time_point next_sweep_{};
  std::chrono::steady_clock::time_point next_attempt_{};  // of a failed registration
};

class Listener {
 public:
  explicit Listener(Shared& shared);
  void Run();

 private:
  // A record of another daemon's notification, addressed to this daemon.
  struct Item {
    uint64_t publisher;
    Record record;
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (publisher, seq) of a large message

  bool Connect();
  bool Receive();  // false: the connection was lost
  bool Deliver(std::vector<Item>& items);
  // Takes the large messages of items[from...] (up to a bounded size) into `fetched`; sets
  // `*end` to the first item not asked for.
  bool Fetch(const std::vector<Item>& items, size_t from, size_t* end,
             std::map<Key, Taken>* fetched);
  void DeliverOne(std::string_view channel, std::string_view message);

  Shared& s_;
  std::optional<Connection> conn_;
  Backoff backoff_;
  Episode outage_;
  Episode missing_;  // large messages reclaimed before this daemon read them
};

}  // namespace skydb::pg::pubsub
