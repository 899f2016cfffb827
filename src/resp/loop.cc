// Loop: one epoll event loop thread, its connections and its task queue.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "resp/server_internal.h"
#include "skydb/log.h"

namespace skydb::resp {
namespace {

constexpr uint64_t kWakeTag = 1ULL << 63;
constexpr uint64_t kListenerTag = 1ULL << 62;
constexpr std::string_view kTooManyClients = "-ERR max number of clients reached\r\n";
constexpr std::string_view kOutOfDescriptors =
    "-ERR max number of clients reached (the server is out of file descriptors)\r\n";

}  // namespace

Loop::Loop(ServerShared& shared) : shared_(shared) {}

Loop::~Loop() {
  for (int fd : listeners_) ::close(fd);
  if (spare_fd_ >= 0) ::close(spare_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Status Loop::Init() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return ErrnoError("epoll_create1", errno);
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (spare_fd_ < 0) return ErrnoError("open(/dev/null)", errno);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return ErrnoError("eventfd", errno);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kWakeTag;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event) != 0) {
    return ErrnoError("epoll_ctl(eventfd)", errno);
  }
  return Ok();
}

void Loop::AddListener(int fd) {
  listeners_.push_back(fd);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kListenerTag | static_cast<uint64_t>(fd);
  (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
}

void Loop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Loop::Join() {
  if (thread_.joinable()) thread_.join();
}

void Loop::Post(std::function<void()> task) {
  bool wake = false;
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    tasks_.push_back(std::move(task));
    wake = !std::exchange(wake_pending_, true);  // one eventfd write per batch of posts
  }
  Wake(wake);
}

void Loop::PostPush(std::weak_ptr<Connection> conn, SharedFrame frame, ReplyClaim claim) {
  bool wake = false;
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    pushes_.push_back({std::move(conn), std::move(frame), std::move(claim)});
    wake = !std::exchange(wake_pending_, true);
  }
  Wake(wake);
}

void Loop::Wake(bool wake) {
  if (!wake) return;
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void Loop::RunTasks() {
  std::vector<std::function<void()>> batch;
  {
    MutexLock lock(mu_);
    running_pushes_.swap(pushes_);  // pushes_ gets the capacity the last batch had
    batch.swap(tasks_);
    wake_pending_ = false;
  }
  uint64_t count = 0;
  (void)!::read(wake_fd_, &count, sizeof count);
  RunPushes(running_pushes_);
  for (auto& task : batch) task();
}

void Loop::RunPushes(std::vector<QueuedPush>& pushes) {
  for (auto& push : pushes) {
    if (auto conn = push.conn.lock()) conn->Push(push.frame, std::move(push.claim));
  }
  pushes.clear();
  constexpr size_t kKeptPushes = 4096;  // a burst's buffer is not kept (~200 KiB at most)
  if (pushes.capacity() > kKeptPushes) std::vector<QueuedPush>().swap(pushes);
}

void Loop::Run() {
  thread_id_.store(std::this_thread::get_id());
  shared_.counters.commands->BindThisThread();
  epoll_event events[256];
  while (!Finished()) {
    // Connections still dirty after FlushDirty's rounds must not wait for the next event.
    int n = ::epoll_wait(epoll_fd_, events, 256, WaitMillis());
    if (n < 0 && errno != EINTR) {
      spdlog::error("resp: epoll_wait failed: {}", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) HandleEvent(events[i]);
    RunTasks();
    RunTimers();
    FlushDirty();
    Housekeeping();
  }
  {
    MutexLock lock(mu_);
    stopped_ = true;  // later completions are dropped
    tasks_.clear();
    pushes_.clear();
  }
  std::vector<uint64_t> ids;
  for (auto& [id, conn] : connections_) ids.push_back(id);
  for (uint64_t id : ids) {
    auto it = connections_.find(id);
    if (it != connections_.end()) it->second->Close("server shutting down");
  }
  dirty_.clear();
  shared_.counters.commands->UnbindThisThread();
}

void Loop::HandleEvent(const epoll_event& event) {
  uint64_t tag = event.data.u64;
  if (tag == kWakeTag) return;  // tasks run after every batch
  if ((tag & kListenerTag) != 0) return Accept(static_cast<int>(tag & ~kListenerTag));
  auto it = connections_.find(tag);
  if (it == connections_.end()) return;
  auto conn = it->second;
  conn->OnEvents(event.events);
}

void Loop::Accept(int listener) {
  for (int i = 0; i < 64; ++i) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) return RefuseWithoutDescriptors(listener);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        spdlog::warn("resp: accept failed: {}", std::strerror(errno));
      }
      return;
    }
    auto& counters = shared_.counters;
    bool tls = listener == shared_.tls_listener;
    if (counters.connected_clients.load() >= shared_.options.max_clients) {
      counters.rejected_connections.fetch_add(1);
      // A TLS client could not read the plain-text reason; it sees the connection close.
      if (!tls) (void)!::send(fd, kTooManyClients.data(), kTooManyClients.size(), MSG_NOSIGNAL);
      DiscardUnreadInput(fd);
      ::close(fd);
      continue;
    }
    out_of_descriptors_ = false;
    counters.connected_clients.fetch_add(1);
    counters.total_connections.fetch_add(1);
    auto& loops = shared_.loops;
    auto& target = loops[shared_.next_loop.fetch_add(1) % loops.size()];
    if (target.get() == this) {
      Adopt(fd, tls);
    } else {
      target->Post([loop = target.get(), fd, tls] { loop->Adopt(fd, tls); });
    }
  }
}

// Out of descriptors, the pending connection would stay queued and the level-triggered listener
// would wake the loop forever. A spare descriptor, given up for a moment, lets it be accepted,
// told why and closed; the limit is named once per episode in the log.
void Loop::RefuseWithoutDescriptors(int listener) {
  int err = errno;
  if (!out_of_descriptors_) {
    spdlog::warn(
        "resp: out of file descriptors ({}) with {} clients connected: refusing new "
        "clients; raise LimitNOFILE / ulimit -n or lower resp.max_clients",
        std::strerror(err), shared_.counters.connected_clients.load());
    out_of_descriptors_ = true;
  }
  if (spare_fd_ >= 0) ::close(spare_fd_);
  int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) {
    shared_.counters.rejected_connections.fetch_add(1);
    (void)!::send(fd, kOutOfDescriptors.data(), kOutOfDescriptors.size(), MSG_NOSIGNAL);
    DiscardUnreadInput(fd);
    ::close(fd);
  }
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void Loop::Adopt(int fd, bool tls) {
  if (draining_) {
    ::close(fd);
    shared_.counters.connected_clients.fetch_sub(1);
    return;
  }
  int one = 1;  // small replies must not wait for Nagle (fails harmlessly on unix sockets)
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  uint64_t id = shared_.next_client_id.fetch_add(1);
  auto conn = std::make_shared<Connection>(fd, id, *this, shared_);
  if (tls) {
    auto stream = TlsStream::Accept(*shared_.options.tls, fd);
    if (!stream) {
      spdlog::warn("resp: client id={}: no TLS state could be made for it; closing", id);
      ::close(fd);
      shared_.counters.connected_clients.fetch_sub(1);
      return;
    }
    conn->UseTls(std::move(stream));
  }
  connections_[id] = conn;
  conn->Start();
  SetInterest(fd, id, EPOLLIN, true);
}

void Loop::SetInterest(int fd, uint64_t id, uint32_t events, bool add) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = id;
  (void)::epoll_ctl(epoll_fd_, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event);
}

void Loop::Remove(int fd) { (void)::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void Loop::MarkDirty(std::shared_ptr<Connection> conn) { dirty_.push_back(std::move(conn)); }

void Loop::Forget(uint64_t id) { connections_.erase(id); }

void Loop::ForEachConnection(const std::function<void(Connection&)>& visit) {
  std::vector<std::shared_ptr<Connection>> all;
  all.reserve(connections_.size());
  for (auto& [id, conn] : connections_) all.push_back(conn);
  for (auto& conn : all) visit(*conn);
}

// Flushing may resume a paused pipeline whose commands complete inline and mark the connection
// dirty again; a bounded number of rounds keeps one client from starving the loop.
void Loop::FlushDirty() {
  for (int round = 0; round < 4 && !dirty_.empty(); ++round) {
    std::vector<std::shared_ptr<Connection>> batch;
    batch.swap(dirty_);
    for (auto& conn : batch) conn->Flush();
  }
}

void Loop::BeginDrain(std::chrono::steady_clock::time_point deadline) {
  draining_ = true;
  drain_deadline_ = deadline;
  for (int fd : listeners_) {
    Remove(fd);
    ::close(fd);
  }
  listeners_.clear();
  for (auto& [id, conn] : connections_) conn->BeginDrain();
}

bool Loop::Finished() const {
  if (!draining_) return false;
  return connections_.empty() || std::chrono::steady_clock::now() >= drain_deadline_;
}

void Loop::AddTimer(Clock::TimePoint when, std::weak_ptr<Connection> conn) {
  timers_.emplace(when, std::move(conn));
}

void Loop::RunTimers() {
  if (timers_.empty()) return;
  auto now = shared_.clock->Now();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    std::shared_ptr<Connection> conn = timers_.begin()->second.lock();
    timers_.erase(timers_.begin());
    if (conn) conn->EndAuthHold();
  }
}

// At most 100 ms, so housekeeping runs and a test's fake clock is noticed without an event.
int Loop::WaitMillis() const {
  if (!dirty_.empty()) return 0;
  if (timers_.empty()) return 100;
  auto until = timers_.begin()->first - shared_.clock->Now();
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(until).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 100));
}

void Loop::Housekeeping() {
  if (shared_.executor->settings().idle_timeout().count() == 0) return;
  auto now = shared_.clock->Now();
  if (now < next_housekeeping_) return;
  next_housekeeping_ = now + std::chrono::milliseconds(100);
  std::vector<std::shared_ptr<Connection>> all;
  for (auto& [id, conn] : connections_) all.push_back(conn);
  for (auto& conn : all) conn->CheckIdle(now);
}

}  // namespace skydb::resp
