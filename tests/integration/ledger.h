// The acknowledged-write ledger: writer threads SET unique values to their own keys over RESP
// and record every acknowledgement; Verify then proves that every key reads back its last
// acknowledged value or a later attempted one, and that nothing is served that no writer
// wrote. Writers survive a daemon that dies or restarts underneath them (they reconnect).
// With `pipeline` > 1 a writer sends that many writes to one key at once, as pipelining
// clients do, alternating `SET … GET` (which must load a value that left memory) and `SET`:
// each old value a `SET … GET` answers must be the write sent just before it, or, for the
// first of a pipeline, one at least as new as the key's last acknowledged write.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "resp_client.h"

namespace skydb::testing {

struct LedgerOptions {
  std::string socket;  // the daemon's RESP socket
  int writers = 8;
  int keys_per_writer = 32;  // each key has exactly one writer
  size_t value_bytes = 200;
  std::string key_prefix = "ledger";
  std::chrono::milliseconds reconnect_every{20};
  std::chrono::milliseconds command_timeout{30000};  // above store.write_timeout
  int pipeline = 1;                                  // writes sent at once to one key (see above)
};

class Ledger {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit Ledger(LedgerOptions options);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  void Start();
  void Stop();  // joins the writers; idempotent

  long acked() const { return acked_.load(); }
  long failed() const { return failed_.load(); }  // error replies and lost connections
  // Old values answered by `SET … GET` that reflect no state the key was in (pipeline > 1).
  std::vector<std::string> WrongOldValues() const;
  // Waits until `more` acknowledgements arrive after the call; how long it took, or nullopt.
  std::optional<std::chrono::milliseconds> WaitForAcks(long more,
                                                       std::chrono::milliseconds timeout) const;

  // The write outage of a fault at `from`: the longest time without any acknowledgement
  // between the last one before `from` and `to` (writes had resumed by then); nullopt when
  // nothing was acknowledged before `from`.
  std::optional<std::chrono::milliseconds> LongestAckGap(TimePoint from, TimePoint to) const;

  // Reads every key from the daemon at `socket` and returns one line per violation (empty:
  // the ledger is intact). With `acked_before`, only acknowledgements made before that moment
  // must be present (the async durability window); later ones may be missing.
  std::vector<std::string> Verify(const std::string& socket,
                                  std::optional<TimePoint> acked_before = std::nullopt) const;
  // For an async loss: the age, at `moment`, of the oldest acknowledgement that Verify(socket)
  // found missing (zero when nothing was lost).
  std::chrono::milliseconds OldestLostAckAge(const std::string& socket, TimePoint moment) const;
  // When each acknowledgement that Verify(socket) found missing was received.
  std::vector<TimePoint> LostAcks(const std::string& socket) const;

 private:
  struct Ack {
    long seq;
    TimePoint at;
  };
  struct KeyState {
    std::mutex mu;
    long attempted = 0;     // highest sequence number sent
    std::vector<Ack> acks;  // in sequence order
  };

  std::string KeyName(int writer, int key) const;
  std::string Value(int writer, int key, long seq) const;
  // The sequence number encoded in `value` if it is exactly a value this ledger wrote to
  // (writer, key); nullopt otherwise.
  std::optional<long> SeqOf(const std::string& value, int writer, int key) const;
  KeyState& State(int writer, int key) const;
  void WriterLoop(int writer);
  // One round of `pipeline` writes to `key`; false when the connection must be reopened.
  bool PipelinedRound(RespClient& client, int writer, int key);
  // Reads every key once: its sequence number (0: absent), or an error line.
  std::vector<std::optional<long>> ReadAll(const std::string& socket,
                                           std::vector<std::string>& problems) const;

  LedgerOptions options_;
  std::unique_ptr<KeyState[]> keys_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<long> acked_{0};
  std::atomic<long> failed_{0};
  mutable std::mutex wrong_mu_;
  std::vector<std::string> wrong_old_values_;
};

}  // namespace skydb::testing
