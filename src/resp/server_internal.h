// Internal to the RESP server: the state every loop shares, the event loop and the
// per-connection state machine. See skydb/resp.h for the public contract.
//
// Threading: each Loop runs on its own thread and owns its connections; nothing of a
// connection is touched off its loop thread. Store completions arriving on other threads are
// posted to the loop (a mutex-guarded queue plus an eventfd wake-up).
// Ownership: the server owns ServerShared and the loops; reply callbacks hold shared_ptrs to
// their loop and connection, so a late completion after shutdown finds a stopped loop and is
// dropped instead of touching freed memory.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "os/listen_socket.h"
#include "resp/clients.h"
#include "resp/commands.h"
#include "resp/parser.h"
#include "skydb/mutex.h"
#include "skydb/resp.h"
#include "tls/tls_stream.h"

namespace skydb::resp {

class Loop;
struct ServerShared;

// CLIENT LIST / KILL over every loop of the server (resp/client_control.cc).
class LoopClientControl final : public ClientControl {
 public:
  explicit LoopClientControl(ServerShared& shared) : shared_(shared) {}
  void List(ClientFilter filter, std::function<void(std::vector<ClientInfo>)> done) override;
  void Kill(ClientFilter filter, uint64_t requester, std::function<void(size_t)> done) override;

 private:
  ServerShared& shared_;
};

struct ServerShared {
  RespServerOptions options;
  ServerCounters counters;
  std::unique_ptr<ReplyMemory> reply_memory;  // every connection's reply bytes, server-wide
  std::unique_ptr<CommandExecutor> executor;
  std::vector<std::shared_ptr<Loop>> loops;
  Clock* clock = nullptr;
  int tls_listener = -1;  // the TCP listener when it speaks TLS (options.tls)
  std::atomic<uint64_t> next_client_id{1};
  std::atomic<size_t> next_loop{0};
  std::unique_ptr<LoopClientControl> client_control;  // the executor's, for CLIENT LIST / KILL
};

// One client connection: reads, parses, dispatches, and writes replies in request order.
class Connection final : public ReplyTarget, public std::enable_shared_from_this<Connection> {
 public:
  Connection(int fd, uint64_t id, Loop& loop, ServerShared& shared);
  ~Connection();

  void OnEvents(uint32_t events);
  // Fills reply slot `seq`; replies leave only when every earlier slot has. `claim` counts the
  // reply's bytes in this connection's budget; the connection takes them over.
  void Complete(uint64_t seq, std::string reply, ReplyClaim claim);
  // Complete, from any thread: on another one, posted to the loop (dropped if it is gone).
  void Deliver(uint64_t seq, std::string reply, ReplyClaim claim) override;
  std::optional<std::string_view> BuildInPlace(uint64_t seq, ReplyClaim& claim,
                                               FunctionRef<void(std::string& out)> build) override;
  void Flush();  // moves ready replies out, writes what the socket takes, resumes reading
  void BeginDrain();
  void CheckIdle(Clock::TimePoint now);
  void Close(const char* why);
  void EndAuthHold();  // the AUTH failure delay is over: send the reply, read again
  // Loop thread, right after the connection is adopted: makes it a possible subscriber.
  void Start();
  // Before Start: the connection's bytes go through TLS (an accept on the TLS listener).
  void UseTls(std::unique_ptr<TlsStream> tls) { tls_ = std::move(tls); }
  // Queues a pub/sub message (encoded for RESP2; pushed as RESP3 if the client speaks it)
  // after every reply owed so far; `claim` holds its bytes in this connection's budget.
  void Push(const SharedFrame& frame, ReplyClaim claim);
  // Closes the connection because a reply limit was reached, naming the limit in the log.
  void CloseOverBudget();
  bool closed() const { return fd_ < 0; }
  ClientInfo Info(Clock::TimePoint now) const;  // for CLIENT LIST / INFO / KILL
  uint64_t id() const { return id_; }

 private:
  // Reads and runs what the client sent; until_empty: until EOF or EAGAIN (at hang-up).
  void OnReadable(bool until_empty);
  void Process();
  void ProcessView(std::string_view& view);
  void Dispatch(std::vector<std::string>& args);  // the parser's: may be moved from
  // A command over the whole keyspace (SCAN, DBSIZE, FLUSHALL...) sees every earlier command
  // of its connection applied: it waits while one of them has not answered (the store orders
  // the commands of each key, not a key's commands against the whole keyspace).
  bool WaitsForEarlierReplies(const std::vector<std::string>& args) const;
  bool AllEarlierAnswered() const;
  void OnProtocolError();
  void OnAuthFailure();
  bool ShouldPause() const;
  void UpdateInterest();
  bool WriteOut();
  ReplyFn MakeReply(uint64_t seq);
  void ReserveOutput(size_t more);
  void FlushSoon();  // out_ grew outside Flush: marks the connection dirty, once per Flush
  void CompleteHere(uint64_t seq, std::string reply);  // a reply made on the loop thread

  void DescribeSockets();  // addr_, laddr_ as CLIENT LIST shows them
  // read(2) and send(2) on the socket, or through TLS on a TLS connection.
  ssize_t ReadSome(char* buffer, size_t size);
  ssize_t SendSome(const char* data, size_t size);

  int fd_;
  uint64_t id_;
  Loop& loop_;
  std::weak_ptr<Loop> loop_alive_;  // for replies from store threads after the server stopped
  ServerShared& shared_;
  RespParser parser_;
  ClientState client_;
  std::string in_;  // bytes read but not yet fed (reading paused mid-buffer)
  std::string out_;
  size_t out_sent_ = 0;
  std::deque<std::optional<std::string>> slots_;  // replies owed, in request order
  // Reply bytes: `budget_` (ReplyTarget's) counts them all, including claims of replies still
  // being built on store threads; `held_` is the part this connection holds (filled slots +
  // out_ unsent).
  size_t held_ = 0;
  bool flush_queued_ = false;  // FlushSoon marked this connection dirty; Flush clears it
  uint64_t first_seq_ = 0;     // sequence number of slots_.front()
  bool stop_reading_ = false;  // EOF, protocol error, QUIT or drain
  bool close_after_flush_ = false;
  bool auth_hold_ = false;  // after a failed AUTH: no reading, no writing, until a timer
  // A whole-keyspace command held until every earlier one answered (WaitsForEarlierReplies).
  std::optional<std::vector<std::string>> held_command_;
  uint32_t interest_ = EPOLLIN;  // epoll events registered
  Clock::TimePoint last_active_;
  Clock::TimePoint created_;
  std::string addr_;
  std::string laddr_;
  bool unix_socket_ = false;
  std::string last_cmd_;  // the last command's name and first argument, as sent
  std::string last_sub_;
  std::unique_ptr<TlsStream> tls_;  // null on a plain connection
};

// An epoll loop on its own thread, with a task queue other threads post to.
class Loop : public std::enable_shared_from_this<Loop> {
 public:
  explicit Loop(ServerShared& shared);
  ~Loop();
  Status Init();
  void Start();
  void Join();

  // Any thread. Runs `task` on the loop thread; dropped once the loop has stopped.
  void Post(std::function<void()> task);
  // Any thread. Connection::Push(frame, claim) on the loop thread, if `conn` still exists:
  // queued without a task of its own, so a PUBLISH to many subscribers costs no allocation
  // per delivery here and one wake-up serves every push and task queued meanwhile. (On the
  // loop thread itself the subscriber pushes straight into the connection instead.)
  void PostPush(std::weak_ptr<Connection> conn, SharedFrame frame, ReplyClaim claim);
  bool InLoopThread() const { return std::this_thread::get_id() == thread_id_.load(); }

  // Loop thread only.
  void AddListener(int fd);  // before Start
  void Adopt(int fd, bool tls);
  void SetInterest(int fd, uint64_t id, uint32_t events, bool add);
  void Remove(int fd);
  void MarkDirty(std::shared_ptr<Connection> conn);
  void Forget(uint64_t id);
  // Calls `visit` for every connection of this loop; it may close the one it is given.
  void ForEachConnection(const std::function<void(Connection&)>& visit);
  void BeginDrain(std::chrono::steady_clock::time_point deadline);  // real time, not Clock
  // Calls conn->EndAuthHold() once the server's Clock reaches `when` (if conn still exists).
  void AddTimer(Clock::TimePoint when, std::weak_ptr<Connection> conn);

 private:
  void Run();
  void HandleEvent(const epoll_event& event);
  void Accept(int listener);
  void RefuseWithoutDescriptors(int listener);
  void RunTasks();
  void FlushDirty();
  void Housekeeping();
  void RunTimers();
  int WaitMillis() const;  // epoll_wait's timeout: now when work is pending, else timer-bound
  bool Finished() const;

  ServerShared& shared_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int spare_fd_ = -1;                // given up to accept-and-refuse when out of descriptors
  bool out_of_descriptors_ = false;  // logged once until an accept succeeds again
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  std::vector<int> listeners_;
  std::unordered_map<uint64_t, std::shared_ptr<Connection>> connections_;
  std::vector<std::shared_ptr<Connection>> dirty_;
  bool draining_ = false;
  std::chrono::steady_clock::time_point drain_deadline_{};
  Clock::TimePoint next_housekeeping_{};
  std::multimap<Clock::TimePoint, std::weak_ptr<Connection>> timers_;

  struct QueuedPush {
    std::weak_ptr<Connection> conn;
    SharedFrame frame;
    ReplyClaim claim;
  };
  void Wake(bool wake);
  // Runs `pushes`, then empties it, keeping a small buffer for the next wake-up.
  static void RunPushes(std::vector<QueuedPush>& pushes);

  Mutex mu_;
  std::vector<std::function<void()>> tasks_ GUARDED_BY(mu_);
  std::vector<QueuedPush> pushes_ GUARDED_BY(mu_);  // run before tasks_, in order
  std::vector<QueuedPush> running_pushes_;  // loop thread: pushes_'s other buffer, kept sized
  bool wake_pending_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
};

// How long a connection is held after its n-th failed AUTH (n >= 1): 100 ms, doubling per
// failure, at most 5 s. Held means neither the failure's reply nor any later request moves,
// so a password guesser gets one guess per delay per connection; the loop is never blocked.
std::chrono::milliseconds AuthFailureDelay(uint32_t failures);

// Reads and drops input already queued on `fd` (bounded), so closing it does not reset the peer.
void DiscardUnreadInput(int fd);

}  // namespace skydb::resp
