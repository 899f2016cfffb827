// The epoll load loop (see driver.h).
#include "driver.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <queue>
#include <random>
#include <thread>
#include <vector>

namespace skydb::loadgen {
namespace {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

uint64_t Ns(Clock::duration d) {
  return d.count() < 0 ? 0 : static_cast<uint64_t>(std::chrono::nanoseconds(d).count());
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

enum class Phase {
  kPinging,   // PING sent, waiting for +PONG (establishment)
  kIdle,      // waiting for its next start (think time or schedule)
  kAwaitGet,  // GET sent
  kAwaitSet,  // SET sent
  kDone,      // no more interactions for this connection
  kDead,      // closed after a failure
};

struct Conn {
  int fd = -1;
  Phase phase = Phase::kDone;
  std::string out;
  size_t out_sent = 0;
  bool polling_out = false;
  std::string in;
  size_t in_used = 0;
  std::string base;  // this connection's value; bytes 0..15 are replaced by the counter
  long owned = 0;    // sessions owned: index, index + C, ...
  long slot = 0;     // which owned session is next
  long session = -1;
  TimePoint start;    // the interaction's start (intended, in open loop)
  TimePoint op_sent;  // when the current command was sent
  bool in_window = false;
  TimePoint due;  // open loop: next intended start
  Reply reply;
};

struct Timer {
  TimePoint due;
  size_t conn;
  bool operator>(const Timer& o) const { return due > o.due; }
};

class Driver {
 public:
  Driver(const DriverOptions& o, WindowHooks& hooks) : o_(o), hooks_(hooks) {}
  DriverResult Run();

 private:
  void Fail(const std::string& what) {
    if (r_.first_failure.empty()) r_.first_failure = what;
  }
  void Connect();
  void Establish();
  void Load();
  void Kill(size_t i, const std::string& why);
  void Flush(size_t i);
  void OnReadable(size_t i);
  void OnReply(size_t i);
  void StartInteraction(size_t i, TimePoint start);
  void ScheduleNext(size_t i, TimePoint now);
  std::string Key(long session) const { return o_.key_prefix + std::to_string(session); }
  std::string_view ValueFor(size_t i, uint32_t counter);
  bool Matches(size_t i, const Reply& reply, long session);
  void Wait(TimePoint until);

  const DriverOptions& o_;
  WindowHooks& hooks_;
  DriverResult r_;
  int epfd_ = -1;
  std::vector<Conn> conns_;
  std::vector<uint32_t> acked_;     // per session: counter of the last acknowledged write
  std::vector<uint8_t> uncertain_;  // per session: the last write failed (either value ok)
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  TimePoint launch_, t0_, t1_;
  bool open_loop_ = false;
  Clock::duration interval_{};
  std::string scratch_;
};

void Driver::Connect() {
  std::mt19937_64 rng(o_.seed);
  auto C = static_cast<long>(o_.connections);
  conns_.resize(static_cast<size_t>(o_.connections));
  for (long c = 0; c < C; ++c) {
    Conn& conn = conns_[static_cast<size_t>(c)];
    conn.owned = (o_.sessions - c + C - 1) / C;
    conn.base.resize(o_.value_bytes);
    for (auto& ch : conn.base) ch = static_cast<char>('a' + rng() % 26);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, o_.socket_path.c_str(), sizeof addr.sun_path - 1);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Fail("connect " + o_.socket_path + ": " + std::strerror(errno));
      if (fd >= 0) ::close(fd);
      conn.phase = Phase::kDead;
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    conn.fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(c);
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    conn.phase = Phase::kPinging;
    AppendCommand(&conn.out, {"PING"});
    Flush(static_cast<size_t>(c));
  }
}

void Driver::Kill(size_t i, const std::string& why) {
  Conn& c = conns_[i];
  if (c.phase == Phase::kDead) return;
  Fail(why);
  if (c.phase != Phase::kPinging) {
    ++r_.dropped;
    ++r_.errors;
  }
  c.phase = Phase::kDead;
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
}

void Driver::Flush(size_t i) {
  Conn& c = conns_[i];
  while (c.out_sent < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    Kill(i, std::string("send: ") + std::strerror(errno));
    return;
  }
  bool pending = c.out_sent < c.out.size();
  if (!pending) {
    c.out.clear();
    c.out_sent = 0;
  }
  if (pending != c.polling_out) {
    epoll_event ev{};
    ev.events = EPOLLIN | (pending ? EPOLLOUT : 0u);
    ev.data.u64 = i;
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.polling_out = pending;
  }
}

void Driver::OnReadable(size_t i) {
  char buf[65536];
  while (true) {
    Conn& c = conns_[i];
    if (c.phase == Phase::kDead) return;
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      while (c.phase != Phase::kDead) {
        long used = ParseReply(std::string_view(c.in).substr(c.in_used), &c.reply);
        if (used == 0) break;
        if (used < 0) {
          Kill(i, "the server's reply is not RESP");
          return;
        }
        c.in_used += static_cast<size_t>(used);
        OnReply(i);
      }
      if (c.in_used == c.in.size()) {
        c.in.clear();
        c.in_used = 0;
      } else if (c.in_used > 65536) {
        c.in.erase(0, c.in_used);
        c.in_used = 0;
      }
      if (static_cast<size_t>(n) < sizeof buf) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    Kill(i,
         n == 0 ? "the server closed a connection" : std::string("recv: ") + std::strerror(errno));
    return;
  }
}

std::string_view Driver::ValueFor(size_t i, uint32_t counter) {
  scratch_ = conns_[i].base;
  char head[17];
  std::snprintf(head, sizeof head, "%016x", counter);
  std::memcpy(scratch_.data(), head, 16);
  return scratch_;
}

bool Driver::Matches(size_t i, const Reply& reply, long session) {
  uint32_t acked = acked_[static_cast<size_t>(session)];
  bool uncertain = uncertain_[static_cast<size_t>(session)] != 0;
  if (reply.type == Reply::Type::kNil) return acked == 0;
  const std::string& base = conns_[i].base;
  if (reply.text.size() != base.size()) return false;
  if (std::memcmp(reply.text.data() + 16, base.data() + 16, base.size() - 16) != 0) return false;
  char head[17];
  for (uint32_t candidate : {acked, acked + 1}) {
    if (candidate == acked + 1 && !uncertain) break;
    if (candidate == 0) continue;
    std::snprintf(head, sizeof head, "%016x", candidate);
    if (std::memcmp(reply.text.data(), head, 16) == 0) return true;
  }
  return false;
}

void Driver::OnReply(size_t i) {
  Conn& c = conns_[i];
  const Reply& reply = c.reply;
  TimePoint now = Clock::now();
  switch (c.phase) {
    case Phase::kPinging:
      if (reply.type == Reply::Type::kSimple && reply.text == "PONG") {
        ++r_.established;
        c.phase = Phase::kIdle;
      } else {
        Kill(i, "PING was answered with '" + reply.text + "'");
      }
      return;
    case Phase::kAwaitGet: {
      if (c.in_window) r_.get.Record(Ns(now - c.op_sent));
      if (reply.type == Reply::Type::kError) {
        ++r_.error_replies;
        ++r_.errors;
        Fail("GET: " + reply.text);
      } else if (reply.type != Reply::Type::kBulk && reply.type != Reply::Type::kNil) {
        ++r_.bad_replies;
        ++r_.errors;
        Fail("GET answered with a reply that is neither a bulk string nor nil");
      } else if (!Matches(i, reply, c.session)) {
        ++r_.stale_reads;
        ++r_.errors;
        Fail("GET " + Key(c.session) + " did not return the value this session last wrote");
      } else if (c.in_window && reply.type == Reply::Type::kBulk) {
        ++r_.read_hits;
      }
      auto s = static_cast<size_t>(c.session);
      std::string key = Key(c.session);
      std::string_view value = ValueFor(i, acked_[s] + 1);
      std::string ttl = std::to_string(o_.ttl_seconds);
      AppendCommand(&c.out, {"SET", key, value, "EX", ttl});
      c.phase = Phase::kAwaitSet;
      c.op_sent = Clock::now();
      Flush(i);
      return;
    }
    case Phase::kAwaitSet: {
      auto s = static_cast<size_t>(c.session);
      if (c.in_window) r_.set.Record(Ns(now - c.op_sent));
      if (reply.type == Reply::Type::kSimple && reply.text == "OK") {
        ++acked_[s];
        uncertain_[s] = 0;
        if (c.in_window) ++r_.writes_acked;
      } else {
        uncertain_[s] = 1;
        if (reply.type == Reply::Type::kError) {
          ++r_.error_replies;
          Fail("SET: " + reply.text);
        } else {
          ++r_.bad_replies;
          Fail("SET answered with something other than +OK");
        }
        ++r_.errors;
      }
      if (c.in_window) {
        ++r_.interactions;
        r_.interaction.Record(Ns(now - c.start));
      }
      c.phase = Phase::kIdle;
      ScheduleNext(i, now);
      return;
    }
    default:
      Kill(i, "a reply arrived that no request asked for");
  }
}

void Driver::StartInteraction(size_t i, TimePoint start) {
  Conn& c = conns_[i];
  c.session = static_cast<long>(i) + c.slot * o_.connections;
  c.slot = (c.slot + 1) % c.owned;
  c.start = start;
  c.in_window = start >= t0_ && start < t1_;
  ++r_.attempts;
  AppendCommand(&c.out, {"GET", Key(c.session)});
  c.phase = Phase::kAwaitGet;
  c.op_sent = Clock::now();
  Flush(i);
}

// After an interaction (or at the start): the next one now, later, or never.
void Driver::ScheduleNext(size_t i, TimePoint now) {
  Conn& c = conns_[i];
  if (c.phase != Phase::kIdle || c.owned == 0) {
    if (c.phase == Phase::kIdle) c.phase = Phase::kDone;
    return;
  }
  if (o_.populate) {
    if (c.slot == 0 && c.session >= 0) {
      c.phase = Phase::kDone;  // every owned session written once
      return;
    }
    StartInteraction(i, now);
    return;
  }
  TimePoint next;
  if (open_loop_) {
    next = c.due;
    c.due += interval_;
  } else {
    next = now + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double, std::milli>(o_.think_ms));
  }
  if (next >= t1_) {
    c.phase = Phase::kDone;
    return;
  }
  if (next <= now) {
    StartInteraction(i, open_loop_ ? next : now);
  } else {
    timers_.push({next, i});
  }
}

void Driver::Wait(TimePoint until) {
  epoll_event events[256];
  TimePoint now = Clock::now();
  auto left = until > now ? until - now : Clock::duration::zero();
  auto ns = std::chrono::nanoseconds(left).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  int n = ::epoll_pwait2(epfd_, events, 256, &ts, nullptr);
  for (int k = 0; k < n; ++k) {
    auto i = static_cast<size_t>(events[k].data.u64);
    if (conns_[i].phase == Phase::kDead) continue;
    if (events[k].events & EPOLLOUT) Flush(i);
    if (events[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) OnReadable(i);
  }
}

void Driver::Establish() {
  TimePoint deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(o_.establish_seconds));
  auto pinging = [this] {
    return std::any_of(conns_.begin(), conns_.end(),
                       [](const Conn& c) { return c.phase == Phase::kPinging; });
  };
  while (pinging() && Clock::now() < deadline) Wait(deadline);
  for (size_t i = 0; i < conns_.size(); ++i) {
    if (conns_[i].phase == Phase::kPinging) Kill(i, "PING not answered in time");
  }
}

void Driver::Load() {
  using std::chrono::duration;
  using std::chrono::duration_cast;
  launch_ = Clock::now();
  if (o_.populate) {
    t0_ = launch_;
    t1_ = TimePoint::max();
  } else {
    t0_ = launch_ + duration_cast<Clock::duration>(duration<double>(o_.warmup_seconds));
    t1_ = t0_ + duration_cast<Clock::duration>(duration<double>(o_.duration_seconds));
  }
  open_loop_ = o_.rate > 0 && !o_.populate;
  std::mt19937_64 rng(o_.seed + 1);
  if (open_loop_) {
    interval_ = duration_cast<Clock::duration>(duration<double>(o_.connections / o_.rate));
  }
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    if (c.phase != Phase::kIdle) continue;
    if (open_loop_) {
      std::uniform_real_distribution<double> phase(0, 1);
      c.due = launch_ + duration_cast<Clock::duration>(interval_ * phase(rng));
    }
    ScheduleNext(i, launch_);
  }
  // Window boundaries run on their own thread so a slow /proc read never stalls the load.
  std::thread boundaries;
  if (!o_.populate) {
    boundaries = std::thread([this] {
      std::this_thread::sleep_until(t0_);
      hooks_.OnWindowStart();
      std::this_thread::sleep_until(t0_ + (t1_ - t0_) / 2);
      hooks_.OnWindowMiddle();
      std::this_thread::sleep_until(t1_);
      hooks_.OnWindowEnd();
    });
  }
  bool started = false, ended = false;
  double cpu0 = o_.populate ? CpuSeconds() : 0;
  TimePoint drain_end =
      o_.populate ? TimePoint::max()
                  : t1_ + duration_cast<Clock::duration>(duration<double>(o_.drain_seconds));
  TimePoint finished_at = launch_;
  while (true) {
    TimePoint now = Clock::now();
    if (!started && now >= t0_) {
      started = true;
      cpu0 = CpuSeconds();
    }
    if (!ended && now >= t1_) {
      ended = true;
      r_.cpu_seconds = CpuSeconds() - cpu0;
    }
    while (!timers_.empty() && timers_.top().due <= now) {
      Timer t = timers_.top();
      timers_.pop();
      if (conns_[t.conn].phase == Phase::kIdle) StartInteraction(t.conn, open_loop_ ? t.due : now);
    }
    bool busy = std::any_of(conns_.begin(), conns_.end(), [](const Conn& c) {
      return c.phase == Phase::kIdle || c.phase == Phase::kAwaitGet || c.phase == Phase::kAwaitSet;
    });
    if (!busy || now >= drain_end) {
      finished_at = now;
      break;
    }
    TimePoint until = std::min(drain_end, now + std::chrono::milliseconds(100));
    if (!started) until = std::min(until, t0_);
    if (!ended) until = std::min(until, t1_);
    if (!timers_.empty()) until = std::min(until, timers_.top().due);
    Wait(until);
  }
  if (o_.populate) {
    r_.cpu_seconds = CpuSeconds() - cpu0;
    r_.window_seconds = duration<double>(finished_at - launch_).count();
  } else {
    if (!ended) r_.cpu_seconds = CpuSeconds() - cpu0;
    r_.window_seconds = duration<double>(t1_ - t0_).count();
  }
  for (Conn& c : conns_) {
    if ((c.phase == Phase::kAwaitGet || c.phase == Phase::kAwaitSet) && c.in_window) {
      ++r_.unfinished;
      ++r_.errors;
      Fail("an interaction was still unanswered at the drain deadline");
    }
    bool in_flight = c.phase == Phase::kAwaitGet || c.phase == Phase::kAwaitSet;
    if (open_loop_ && in_flight && c.due < t1_) {
      // A connection stuck behind its schedule: its intended starts up to the window's end
      // never began.
      TimePoint first = std::max(c.due, t0_);
      r_.missed += static_cast<uint64_t>((t1_ - first) / interval_) + 1;
    }
  }
  if (boundaries.joinable()) boundaries.join();
}

DriverResult Driver::Run() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  acked_.assign(static_cast<size_t>(o_.sessions), 0);
  uncertain_.assign(static_cast<size_t>(o_.sessions), 0);
  Connect();
  Establish();
  if (r_.established == o_.connections) Load();
  for (Conn& c : conns_) {
    if (c.fd >= 0) ::close(c.fd);
  }
  ::close(epfd_);
  return r_;
}

}  // namespace

DriverResult RunLoad(const DriverOptions& options, WindowHooks& hooks) {
  Driver driver(options, hooks);
  return driver.Run();
}

}  // namespace skydb::loadgen
