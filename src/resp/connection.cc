// Connection: the per-client state machine of the RESP server.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/strings.h"
#include "resp/command_table.h"
#include "resp/encoder.h"
#include "resp/pubsub.h"
#include "resp/server_internal.h"
#include "skydb/log.h"

namespace skydb::resp {
namespace {

std::string SocketAddressText(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, host, sizeof host);
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, host, sizeof host);
    port = ntohs(v6.sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kReadBudget = 1 << 20;  // per readiness event, so one client cannot hog
// Reply bytes held (or claimed) above this pause reading: a pipeline of GETs is then answered
// as fast as the client takes the replies, never built ahead of it.
constexpr size_t kOutputSoftLimit = 1 << 20;
// The output buffer keeps up to this much capacity between flushes, so a pipeline's replies
// are appended without regrowing it; a larger reply is moved in whole instead of copied.
constexpr size_t kKeptOutputCapacity = 64 << 10;

ParserLimits LimitsFrom(const RespServerOptions& o) {
  ParserLimits limits;
  limits.max_bulk_bytes = o.max_bulk_bytes;
  limits.max_multibulk_length = o.max_multibulk_length;
  limits.max_query_buffer = o.max_query_buffer;
  return limits;
}

// A connection as the hub sees it. Deliver runs on the publisher's thread: it claims the
// frame's bytes in the connection's budget there (so messages in transit are counted and a
// subscriber that does not read is bounded by resp.max_output_buffer) and queues the shared
// frame for the connection's loop (Loop::PostPush: no task per message); a refused claim posts
// the connection's close instead. Never blocks. On the connection's own loop thread the frame
// goes straight into its output: the connection cannot be closed meanwhile (its close runs on
// this thread and unsubscribes first, under the hub's lock that Deliver holds).
class ConnectionSubscriber final : public Subscriber {
 public:
  ConnectionSubscriber(Connection* raw, std::weak_ptr<Connection> conn, std::shared_ptr<Loop> loop,
                       std::shared_ptr<ReplyBudget> budget)
      : raw_(raw), conn_(std::move(conn)), loop_(std::move(loop)), budget_(std::move(budget)) {}

  void Deliver(const SharedFrame& frame) override {
    if (closing_.load(std::memory_order_relaxed)) return;
    if (!budget_->TryClaim(frame->size())) {
      if (closing_.exchange(true)) return;
      loop_->Post([conn = conn_] {
        if (auto c = conn.lock()) c->CloseOverBudget();
      });
      return;
    }
    if (loop_->InLoopThread()) {
      if (!conn_.expired()) raw_->Push(frame, ReplyClaim(budget_, frame->size()));
      return;
    }
    loop_->PostPush(conn_, frame, ReplyClaim(budget_, frame->size()));
  }

 private:
  Connection* raw_;  // used only on the connection's loop thread
  std::weak_ptr<Connection> conn_;
  std::shared_ptr<Loop> loop_;
  std::shared_ptr<ReplyBudget> budget_;
  std::atomic<bool> closing_{false};
};

}  // namespace

std::chrono::milliseconds AuthFailureDelay(uint32_t failures) {
  constexpr int64_t kFirstMs = 100;
  constexpr int64_t kMaxMs = 5000;
  uint32_t doublings = failures == 0 ? 0 : std::min<uint32_t>(failures - 1, 16);
  return std::chrono::milliseconds(std::min(kFirstMs << doublings, kMaxMs));
}

// Closing a unix socket with unread input makes the peer's next read fail with ECONNRESET,
// which can hide the error reply just sent; reading what is already queued avoids that.
void DiscardUnreadInput(int fd) {
  char sink[16384];
  for (int i = 0; i < 64 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
}

Connection::Connection(int fd, uint64_t id, Loop& loop, ServerShared& shared)
    : ReplyTarget(std::make_shared<ReplyBudget>(shared.options.max_output_buffer,
                                                shared.reply_memory.get()),
                  shared.counters.commands),
      fd_(fd),
      id_(id),
      loop_(loop),
      loop_alive_(loop.weak_from_this()),
      shared_(shared),
      parser_(LimitsFrom(shared.options)),
      last_active_(shared.clock->Now()),
      created_(last_active_) {
  client_.id = id;
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);  // only if the loop died without closing it
}

void Connection::Start() {
  DescribeSockets();
  client_.pubsub.subscriber = std::make_shared<ConnectionSubscriber>(
      this, weak_from_this(), loop_.shared_from_this(), budget_);
}

// Redis's forms: "ip:port" for TCP, "<socket path>:0" for both ends of a unix socket.
void Connection::DescribeSockets() {
  sockaddr_storage peer{}, local{};
  socklen_t peer_len = sizeof peer, local_len = sizeof local;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return;
  if (local.ss_family == AF_UNIX) {
    unix_socket_ = true;
    addr_ = laddr_ = shared_.options.unix_path + ":0";
    client_.peer = addr_;
    return;
  }
  laddr_ = SocketAddressText(local);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0) {
    addr_ = SocketAddressText(peer);
  }
  client_.peer = addr_;
}

ClientInfo Connection::Info(Clock::TimePoint now) const {
  ClientInfo info = InfoFromState(client_);
  info.addr = addr_;
  info.laddr = laddr_;
  info.fd = fd_;
  info.unix_socket = unix_socket_;
  auto seconds = [](Clock::Duration d) {
    return std::chrono::duration_cast<std::chrono::seconds>(d).count();
  };
  info.age_seconds = seconds(now - created_);
  info.idle_seconds = seconds(now - last_active_);
  info.qbuf = in_.size();
  info.obl = out_.size() - out_sent_;
  info.oll = slots_.size();
  info.omem = budget_->held();
  info.writing = out_sent_ < out_.size();
  if (!last_cmd_.empty()) {
    info.cmd = ToLower(last_cmd_);
    if (!last_sub_.empty() && (info.cmd == "client" || info.cmd == "pubsub" ||
                               info.cmd == "config" || info.cmd == "command")) {
      info.cmd += "|" + ToLower(last_sub_);
    }
  }
  return info;
}

void Connection::Push(const SharedFrame& frame, ReplyClaim claim) {
  if (fd_ < 0) return;
  if (slots_.empty() && !auth_hold_) {  // nothing owed before it: no slot, one copy
    size_t start = out_.size();
    ReserveOutput(frame->size());
    out_.append(*frame);
    if (client_.proto == Proto::kResp3) out_[start] = '>';
    held_ += claim.Take();
    FlushSoon();
    return;
  }
  std::string& slot = slots_.emplace_back(*frame).value();
  if (client_.proto == Proto::kResp3) slot[0] = '>';  // the same size: the claim holds
  held_ += claim.Take();
  if (slots_.size() == 1) loop_.MarkDirty(shared_from_this());
}

void Connection::Close(const char* why) {
  if (fd_ < 0) return;
  spdlog::debug("resp: closing client id={}: {}", id_, why);
  shared_.executor->pubsub().RemoveAll(client_.pubsub);
  if (tls_) tls_->Shutdown();
  DiscardUnreadInput(fd_);
  loop_.Remove(fd_);
  ::close(fd_);
  fd_ = -1;
  slots_.clear();
  out_.clear();
  budget_->Release(std::exchange(held_, 0));
  shared_.executor->ClientClosed(client_);
  shared_.counters.connected_clients.fetch_sub(1);
  loop_.Forget(id_);  // may drop the last owner: touch nothing after this
}

void Connection::OnEvents(uint32_t events) {
  auto self = shared_from_this();  // Close() below may drop the map's reference
  // A TLS read may wait for the socket to take bytes (its handshake's reply) rather than bring.
  bool tls_read_ready = tls_ && tls_->WantsWritable() && (events & EPOLLOUT) != 0;
  if (((events & EPOLLIN) != 0 || tls_read_ready) && !stop_reading_) OnReadable(false);
  if (fd_ >= 0 && (events & (EPOLLHUP | EPOLLERR)) != 0) {
    // The peer is gone both ways: read what it sent (writes still reach the store), but
    // nobody is left to read replies.
    if ((events & EPOLLHUP) != 0 && !stop_reading_) OnReadable(true);
    return Close((events & EPOLLERR) != 0 ? "socket error" : "peer hung up");
  }
  if (fd_ >= 0) loop_.MarkDirty(self);
}

void Connection::OnReadable(bool until_empty) {
  char buffer[kReadChunk];
  size_t budget = kReadBudget;
  while (budget > 0 && !stop_reading_ && !ShouldPause()) {
    ssize_t n = ReadSome(buffer, sizeof buffer);
    if (n == 0) {  // the client finished sending: answer what it asked, then close
      stop_reading_ = true;
      close_after_flush_ = true;
      break;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        stop_reading_ = true;
        close_after_flush_ = true;
      }
      break;
    }
    budget -= std::min(budget, static_cast<size_t>(n));
    last_active_ = shared_.clock->Now();
    if (in_.empty()) {  // the common case: parse straight from the read buffer
      std::string_view view(buffer, static_cast<size_t>(n));
      ProcessView(view);
      in_.assign(view);
    } else {
      in_.append(buffer, static_cast<size_t>(n));
      Process();
    }
    // A short read emptied the socket: epoll (level-triggered) reports what comes later, so
    // a read that would only say EAGAIN is saved; one per pipeline, as redis-server does. TLS
    // may hold decrypted bytes epoll cannot see.
    if (static_cast<size_t>(n) < sizeof buffer && !until_empty && !(tls_ && tls_->Buffered())) {
      break;
    }
  }
}

void Connection::Process() {
  std::string_view view(in_);
  ProcessView(view);
  in_.erase(0, in_.size() - view.size());
}

// Feeds input to the parser and dispatches whole commands, until the input runs out, the
// pipeline is full, or the connection stops taking commands.
void Connection::ProcessView(std::string_view& view) {
  while (!view.empty() && !close_after_flush_ && !ShouldPause()) {
    ParseStatus status = parser_.Feed(view);
    if (status == ParseStatus::kCommand) {
      std::vector<std::string>& args = parser_.args();
      if (WaitsForEarlierReplies(args) && !AllEarlierAnswered()) {
        held_command_ = std::move(args);
      } else {
        Dispatch(args);
      }
    } else if (status == ParseStatus::kError) {
      OnProtocolError();
    }
  }
}

bool Connection::WaitsForEarlierReplies(const std::vector<std::string>& args) const {
  auto whole = [](const std::string& name) {
    for (const char* command : {"scan", "keys", "dbsize", "flushall", "flushdb", "randomkey"}) {
      if (EqualsIgnoreCase(name, command)) return true;
    }
    return false;
  };
  if (!client_.in_multi) return whole(args[0]);
  if (!EqualsIgnoreCase(args[0], "exec")) return false;  // queued, not run
  for (const auto& queued : client_.queued) {
    if (whole(queued[0])) return true;
  }
  return false;
}

bool Connection::AllEarlierAnswered() const {
  for (const auto& slot : slots_) {
    if (!slot.has_value()) return false;
  }
  return true;
}

void Connection::Dispatch(std::vector<std::string>& args) {
  uint64_t seq = first_seq_ + slots_.size();
  slots_.emplace_back();
  shared_.counters.commands->CountDispatched();
  last_cmd_.assign(args[0], 0, 32);
  last_sub_.clear();
  if (args.size() > 1 && args[0].size() <= 7) last_sub_.assign(args[1], 0, 32);
  uint32_t auth_failures = client_.auth_failures;
  shared_.executor->ExecuteIn(client_, args, MakeReply(seq));
  if (client_.auth_failures != auth_failures) OnAuthFailure();
  if (client_.close_after_reply) {  // QUIT
    stop_reading_ = true;
    close_after_flush_ = true;
  }
}

ssize_t Connection::ReadSome(char* buffer, size_t size) {
  if (!tls_) return ::read(fd_, buffer, size);
  ssize_t n = tls_->Read(buffer, size);
  if (n < 0 && errno == EPROTO) {
    // A plain client on the TLS port, an expired or unknown client certificate...: the reason,
    // once, with the peer; never its bytes.
    spdlog::info("resp: client id={} ({}): TLS {}: {}; closing the connection", id_, addr_,
                 tls_->handshake_done() ? "failed" : "handshake failed", tls_->error());
  }
  return n;
}

ssize_t Connection::SendSome(const char* data, size_t size) {
  if (!tls_) return ::send(fd_, data, size, MSG_NOSIGNAL);
  return tls_->Write(data, size);
}

void Connection::OnProtocolError() {
  shared_.counters.protocol_errors.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("resp: client id={}: {}; closing the connection", id_, parser_.error());
  uint64_t seq = first_seq_ + slots_.size();
  slots_.emplace_back();
  CompleteHere(seq, ErrorReply("ERR " + parser_.error()));
  stop_reading_ = true;
  close_after_flush_ = true;
}

// The password is never logged; the first failure on a connection is, with who it was.
void Connection::OnAuthFailure() {
  shared_.counters.auth_failures.fetch_add(1, std::memory_order_relaxed);
  auto delay = AuthFailureDelay(client_.auth_failures);
  if (client_.auth_failures == 1) {
    Log(spdlog::level::warn, {.component = "resp", .pid = 0, .peer = addr_},
        fmt::format("resp: client id={} addr={}: AUTH failed (wrong password); this connection "
                    "is slowed from {} ms per failed attempt",
                    id_, addr_, delay.count()));
  }
  auth_hold_ = true;
  loop_.AddTimer(shared_.clock->Now() + delay, weak_from_this());
}

void Connection::EndAuthHold() {
  if (fd_ < 0 || !auth_hold_) return;
  auth_hold_ = false;
  loop_.MarkDirty(shared_from_this());
}

ReplyFn Connection::MakeReply(uint64_t seq) { return ReplyFn(shared_from_this(), seq); }

void Connection::Deliver(uint64_t seq, std::string reply, ReplyClaim claim) {
  std::shared_ptr<Loop> loop = loop_alive_.lock();
  if (loop == nullptr) return;  // the server is gone: nobody to send it to
  if (loop->InLoopThread()) return Complete(seq, std::move(reply), std::move(claim));
  // A task must be copyable, so the claim travels behind a pointer; a task dropped by a
  // stopped loop releases it.
  auto held = std::make_shared<ReplyClaim>(std::move(claim));
  loop->Post([self = shared_from_this(), seq, reply = std::move(reply), held]() mutable {
    self->Complete(seq, std::move(reply), std::move(*held));
  });
}

// Room for `more` bytes, grown to at most the capacity kept between flushes while that is
// enough (std::string's own doubling would pass it, and the buffer would be dropped each time);
// past it, doubled (a client that does not read must not cost a copy of its backlog per reply).
void Connection::ReserveOutput(size_t more) {
  size_t needed = out_.size() + more;
  if (needed <= out_.capacity()) return;
  size_t grown = needed <= kKeptOutputCapacity
                     ? std::max(needed, std::min(2 * out_.capacity(), kKeptOutputCapacity))
                     : std::max(needed, 2 * out_.capacity());
  std::string larger;
  larger.reserve(grown);
  larger.append(out_);
  out_.swap(larger);
}

std::optional<std::string_view> Connection::BuildInPlace(
    uint64_t seq, ReplyClaim& claim, FunctionRef<void(std::string& out)> build) {
  // Only the reply next in line, with nothing before it still owed or held back.
  if (fd_ < 0 || auth_hold_ || seq != first_seq_ || slots_.size() != 1) return std::nullopt;
  if (!loop_.InLoopThread()) return std::nullopt;
  if (budget_->refused() != ReplyLimit::kNone || budget_->held() > budget_->limit()) {
    return std::nullopt;  // Complete closes the connection
  }
  size_t start = out_.size();
  ReserveOutput(claim.bytes());
  build(out_);
  claim.Resize(out_.size() - start);
  held_ += claim.Take();
  slots_.pop_front();
  ++first_seq_;
  FlushSoon();
  return std::string_view(out_).substr(start);
}

void Connection::FlushSoon() {
  if (flush_queued_) return;
  flush_queued_ = true;
  loop_.MarkDirty(shared_from_this());
}

void Connection::CompleteHere(uint64_t seq, std::string reply) {
  size_t bytes = reply.size();
  budget_->Add(bytes);
  Complete(seq, std::move(reply), ReplyClaim(budget_, bytes));
}

void Connection::Complete(uint64_t seq, std::string reply, ReplyClaim claim) {
  if (fd_ < 0 || seq < first_seq_ || seq - first_seq_ >= slots_.size()) return;
  // A refused claim, or small replies on top of a full budget: nothing more is built for it.
  if (budget_->refused() != ReplyLimit::kNone || budget_->held() > budget_->limit()) {
    return CloseOverBudget();
  }
  held_ += claim.Take();
  slots_[seq - first_seq_] = std::move(reply);
  if (seq == first_seq_ || held_command_) loop_.MarkDirty(shared_from_this());
}

// Redis closes a client past its output buffer limit; so does skydb, naming the limit reached.
// The server-wide limit is logged once per episode (every client that does not read would be
// named otherwise), the client's own each time.
void Connection::CloseOverBudget() {
  if (fd_ < 0) return;
  shared_.counters.reply_limit_disconnects.fetch_add(1, std::memory_order_relaxed);
  ReplyMemory& memory = *shared_.reply_memory;
  if (budget_->refused() == ReplyLimit::kServer) {
    spdlog::log(memory.BeginEpisode() ? spdlog::level::warn : spdlog::level::debug,
                "resp: client id={}: reply memory limit (resp.max_reply_memory = {} bytes) "
                "reached: clients hold {} bytes of replies they have not read; closing each "
                "client whose reply would pass it until they drain",
                id_, memory.limit(), memory.held());
    return Close("reply memory limit reached");
  }
  spdlog::warn(
      "resp: client id={}: output buffer limit (resp.max_output_buffer = {} bytes) "
      "reached: the client does not read its replies ({} bytes held, {} more asked "
      "for); closing the connection",
      id_, budget_->limit(), held_, budget_->refused_bytes());
  Close("output buffer limit reached");
}

bool Connection::ShouldPause() const {
  return auth_hold_ || held_command_.has_value() || slots_.size() >= shared_.options.max_pipeline ||
         budget_->held() >= kOutputSoftLimit;
}

void Connection::Flush() {
  flush_queued_ = false;
  if (fd_ < 0) return;
  auto self = shared_from_this();
  if (auth_hold_) return UpdateInterest();  // EndAuthHold flushes
  size_t ready = 0;
  for (auto it = slots_.begin(); it != slots_.end() && it->has_value(); ++it)
    ready += (*it)->size();
  if (!slots_.empty() && slots_.front().has_value()) {  // even empty replies are taken
    if (out_.empty() && slots_.front()->size() > kKeptOutputCapacity) {
      out_ = std::move(*slots_.front());  // a large reply is not copied
      ready -= out_.size();
      slots_.pop_front();
      ++first_seq_;
    }
    out_.reserve(out_.size() + ready);
    while (!slots_.empty() && slots_.front().has_value()) {
      out_.append(*slots_.front());
      slots_.pop_front();
      ++first_seq_;
    }
  }
  if (!WriteOut()) return;
  if (held_command_ && AllEarlierAnswered()) {
    std::vector<std::string> args = std::move(*held_command_);
    held_command_.reset();
    Dispatch(args);
    loop_.MarkDirty(self);  // its reply, if it came at once
  }
  if (close_after_flush_ && slots_.empty() && out_sent_ == out_.size()) {
    return Close(client_.close_after_reply ? "QUIT" : "finished");
  }
  if (!stop_reading_ && !in_.empty() && !ShouldPause()) {
    Process();  // resume a paused pipeline
    if (!slots_.empty() && slots_.front().has_value()) loop_.MarkDirty(self);
  }
  // Bytes TLS decrypted before the pause: no epoll event will come for them.
  if (tls_ && tls_->Buffered() && !stop_reading_ && !ShouldPause()) OnReadable(false);
  if (fd_ < 0) return;
  UpdateInterest();
}

// Writes as much as the socket takes; false when the connection was closed.
bool Connection::WriteOut() {
  size_t before = out_sent_;
  while (out_sent_ < out_.size()) {
    ssize_t n = SendSome(out_.data() + out_sent_, out_.size() - out_sent_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      Close(std::strerror(errno));
      return false;
    }
    out_sent_ += static_cast<size_t>(n);
  }
  held_ -= out_sent_ - before;
  budget_->Release(out_sent_ - before);
  if (out_sent_ == out_.size()) {
    if (out_.capacity() > kKeptOutputCapacity) {
      std::string().swap(out_);
    } else {
      out_.clear();
    }
    out_sent_ = 0;
  } else if (out_sent_ > (1 << 20)) {
    out_.erase(0, out_sent_);
    out_sent_ = 0;
  }
  return true;
}

void Connection::UpdateInterest() {
  uint32_t want = 0;
  if (!stop_reading_ && !ShouldPause()) want |= EPOLLIN;
  if (out_sent_ < out_.size() && !auth_hold_) want |= EPOLLOUT;
  if (tls_ && tls_->WantsWritable()) want |= EPOLLOUT;
  if (want != interest_) {
    loop_.SetInterest(fd_, id_, want, false);
    interest_ = want;
  }
}

void Connection::BeginDrain() {
  stop_reading_ = true;
  close_after_flush_ = true;
  loop_.MarkDirty(shared_from_this());
}

void Connection::CheckIdle(Clock::TimePoint now) {
  auto idle = shared_.executor->settings().idle_timeout();
  if (idle.count() > 0 && slots_.empty() && out_.empty() && now - last_active_ >= idle) {
    Close("idle timeout");
  }
}

}  // namespace skydb::resp
