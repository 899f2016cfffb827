// Loader: the store's reads from PostgreSQL — evicted values coming back, and, with shared
// coherence, every key's row — on reader threads with their own durable connections. Requests
// that wait together are read in one statement (up to 256 distinct keys). A task (SCAN, a
// count) can run on a reader's connection too.
//
// Thread-safety: every method may be called from any thread. Callbacks run on a reader thread
// (or on the caller's, when the loader is stopped) and must not block.
// Failure: a failed read fails every request in its statement with the reason.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "skydb/durable.h"
#include "skydb/env.h"
#include "skydb/mutex.h"
#include "store/memory_tier.h"

namespace skydb::store {

class Loader {
 public:
  using RowsDone = std::function<void(Result<std::vector<Row>>)>;
  using Task = std::function<void(int reader)>;  // reader -1: refused, the store is closing

  Loader(int readers, DurableBackend& durable, Clock& clock);
  ~Loader();

  void Start();
  // Refuses new requests, answers the queued ones ("shutting down"), joins the threads.
  void Stop();

  // The rows of `keys`, aligned with them (absent or expired: nullopt).
  void Read(std::vector<std::string> keys, RowsDone done);
  void Run(Task task);
  // From a Read callback only: `keys`' rows read again now, on that callback's reader.
  Result<std::vector<Row>> ReadAgain(const std::vector<std::string>& keys);
  size_t waiting() const;

 private:
  struct Request {
    std::vector<std::string> keys;
    RowsDone done;
    Task task;
  };
  void Refuse(Request& request);
  void ReaderLoop(int index);
  void ReadBatch(int index, std::vector<Request>& batch);

  int readers_;
  DurableBackend& durable_;
  Clock& clock_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Request> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace skydb::store
