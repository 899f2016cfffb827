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
#include <ctime>
#include <functional>
#include <memory>
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

// The whole process: every load thread, the boundary thread and the main thread.
double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The calling thread alone.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

enum class Phase {
  kPinging,      // PING sent, waiting for +PONG (establishment)
  kIdle,         // waiting for its next start (think time or schedule)
  kAwaitGet,     // GET sent
  kAwaitSet,     // SET sent
  kAwaitExpire,  // EXPIRE sent (a cold read)
  kDone,         // no more interactions for this connection
  kDead,         // closed after a failure
};

bool InFlight(Phase p) {
  return p == Phase::kAwaitGet || p == Phase::kAwaitSet || p == Phase::kAwaitExpire;
}

struct Conn {
  long index = 0;  // among all C connections (every thread's)
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
  long current = 0;  // which owned session the interaction in progress uses
  long session = -1;
  uint64_t started = 0;            // interactions this connection started
  std::vector<uint32_t> acked;     // per owned session: counter of the last acknowledged write
  std::vector<uint8_t> uncertain;  // per owned session: the last write failed (either value ok)
  TimePoint start;                 // the interaction's start (intended, in open loop)
  TimePoint op_sent;               // when the current command was sent
  bool in_window = false;
  TimePoint due;  // open loop: next intended start
  Reply reply;
};

struct Timer {
  TimePoint due;
  size_t conn;
  bool operator>(const Timer& o) const { return due > o.due; }
};

// The run's timeline, the same for every thread.
struct Schedule {
  TimePoint launch, t0, t1;  // load starts; the measured window is [t0, t1)
  TimePoint drain_end;       // in-window interactions may finish until then
  bool open_loop = false;
  Clock::duration interval{};  // open loop: between one connection's intended starts
};

Schedule MakeSchedule(const DriverOptions& o) {
  using std::chrono::duration;
  using std::chrono::duration_cast;
  Schedule s;
  s.launch = Clock::now();
  if (o.populate) {
    s.t0 = s.launch;
    s.t1 = TimePoint::max();
    s.drain_end = TimePoint::max();
  } else {
    s.t0 = s.launch + duration_cast<Clock::duration>(duration<double>(o.warmup_seconds));
    s.t1 = s.t0 + duration_cast<Clock::duration>(duration<double>(o.duration_seconds));
    s.drain_end = s.t1 + duration_cast<Clock::duration>(duration<double>(o.drain_seconds));
  }
  s.open_loop = o.rate > 0 && !o.populate;
  if (s.open_loop) {
    s.interval = duration_cast<Clock::duration>(duration<double>(o.connections / o.rate));
  }
  return s;
}

// One epoll thread's share of the load: connections [first, first + count) of C. Touches
// nothing another worker touches.
class Worker {
 public:
  Worker(const DriverOptions& o, int index, long first, long count)
      : o_(o), index_(index), first_(first), count_(count) {}
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void Connect();
  void Establish();
  void Load(const Schedule& s);
  const LoadTally& tally() const { return r_; }
  double cpu_seconds() const { return cpu_seconds_; }
  TimePoint finished_at() const { return finished_at_; }

 private:
  void Fail(const std::string& what) {
    if (!r_.first_failure.empty()) return;
    r_.first_failure = what;
    r_.first_failure_ns = static_cast<int64_t>(Ns(Clock::now().time_since_epoch()));
  }
  void Kill(size_t i, const std::string& why);
  void Flush(size_t i);
  void OnReadable(size_t i);
  void OnReply(size_t i);
  void StartInteraction(size_t i, TimePoint start);
  void ScheduleNext(size_t i, TimePoint now);
  std::string Key(long session) const { return o_.key_prefix + std::to_string(session); }
  std::string_view ValueFor(size_t i, uint32_t counter);
  bool ColdRead(const Conn& c) const;
  void FinishInteraction(size_t i, TimePoint now);
  bool Matches(size_t i, const Reply& reply);
  void Wait(TimePoint until);

  const DriverOptions& o_;
  const int index_;
  const long first_, count_;
  LoadTally r_;
  double cpu_seconds_ = 0;
  TimePoint finished_at_;
  int epfd_ = -1;
  std::vector<Conn> conns_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  TimePoint t0_, t1_;
  bool open_loop_ = false;
  Clock::duration interval_{};
  std::string scratch_;
};

Worker::~Worker() {
  for (Conn& c : conns_) {
    if (c.fd >= 0) ::close(c.fd);
  }
  if (epfd_ >= 0) ::close(epfd_);
}

void Worker::Connect() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  // Worker 0's seeds are the single-threaded generator's, so --threads 1 writes what it did.
  std::mt19937_64 rng(o_.seed + 2 * static_cast<uint64_t>(index_));
  auto C = static_cast<long>(o_.connections);
  conns_.resize(static_cast<size_t>(count_));
  for (long k = 0; k < count_; ++k) {
    Conn& conn = conns_[static_cast<size_t>(k)];
    long c = first_ + k;
    conn.index = c;
    conn.owned = (o_.sessions - c + C - 1) / C;
    conn.acked.assign(static_cast<size_t>(conn.owned), 0);
    conn.uncertain.assign(static_cast<size_t>(conn.owned), 0);
    if (o_.values && !o_.values->empty()) {
      conn.base = (*o_.values)[static_cast<size_t>(c) % o_.values->size()];
    } else {
      conn.base.resize(o_.value_bytes);
      for (auto& ch : conn.base) ch = static_cast<char>('a' + rng() % 26);
    }
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
    ev.data.u64 = static_cast<uint64_t>(k);
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    conn.phase = Phase::kPinging;
    AppendCommand(&conn.out, {"PING"});
    Flush(static_cast<size_t>(k));
  }
}

void Worker::Kill(size_t i, const std::string& why) {
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

void Worker::Flush(size_t i) {
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

void Worker::OnReadable(size_t i) {
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

std::string_view Worker::ValueFor(size_t i, uint32_t counter) {
  scratch_ = conns_[i].base;
  char head[17];
  std::snprintf(head, sizeof head, "%016x", counter);
  std::memcpy(scratch_.data(), head, 16);
  return scratch_;
}

bool Worker::Matches(size_t i, const Reply& reply) {
  const Conn& c = conns_[i];
  uint32_t acked = c.acked[static_cast<size_t>(c.current)];
  bool uncertain = c.uncertain[static_cast<size_t>(c.current)] != 0;
  if (reply.type == Reply::Type::kNil) return acked == 0;
  const std::string& base = c.base;
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

void Worker::OnReply(size_t i) {
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
      } else if (!Matches(i, reply)) {
        ++r_.stale_reads;
        ++r_.errors;
        Fail("GET " + Key(c.session) + " did not return the value this session last wrote");
      } else if (c.in_window && reply.type == Reply::Type::kBulk) {
        ++r_.read_hits;
      }
      std::string key = Key(c.session);
      std::string ttl = std::to_string(o_.ttl_seconds);
      if (ColdRead(c)) {
        AppendCommand(&c.out, {"EXPIRE", key, ttl});
        c.phase = Phase::kAwaitExpire;
      } else {
        std::string_view value = ValueFor(i, c.acked[static_cast<size_t>(c.current)] + 1);
        AppendCommand(&c.out, {"SET", key, value, "EX", ttl});
        c.phase = Phase::kAwaitSet;
      }
      c.op_sent = Clock::now();
      Flush(i);
      return;
    }
    case Phase::kAwaitSet: {
      auto s = static_cast<size_t>(c.current);
      if (c.in_window) r_.set.Record(Ns(now - c.op_sent));
      if (reply.type == Reply::Type::kSimple && reply.text == "OK") {
        ++c.acked[s];
        c.uncertain[s] = 0;
        ++r_.run_writes;
        if (c.in_window) ++r_.writes_acked;
      } else {
        c.uncertain[s] = 1;
        if (reply.type == Reply::Type::kError) {
          ++r_.error_replies;
          Fail("SET: " + reply.text);
        } else {
          ++r_.bad_replies;
          Fail("SET answered with something other than +OK");
        }
        ++r_.errors;
      }
      FinishInteraction(i, now);
      return;
    }
    case Phase::kAwaitExpire: {
      if (c.in_window) r_.expire.Record(Ns(now - c.op_sent));
      if (reply.type == Reply::Type::kInteger) {
        if (c.in_window) ++r_.expires_acked;
      } else {
        ++r_.errors;
        if (reply.type == Reply::Type::kError) {
          ++r_.error_replies;
          Fail("EXPIRE: " + reply.text);
        } else {
          ++r_.bad_replies;
          Fail("EXPIRE answered with something other than an integer");
        }
      }
      FinishInteraction(i, now);
      return;
    }
    default:
      Kill(i, "a reply arrived that no request asked for");
  }
}

// Interaction n of a connection is a cold read when it carries the running total of
// n * expire_ratio past a whole number: evenly spread, the same in every run.
bool Worker::ColdRead(const Conn& c) const {
  if (o_.expire_ratio <= 0 || o_.populate) return false;
  auto n = static_cast<double>(c.started);
  return std::floor(n * o_.expire_ratio) > std::floor((n - 1) * o_.expire_ratio);
}

void Worker::FinishInteraction(size_t i, TimePoint now) {
  Conn& c = conns_[i];
  if (c.in_window) {
    ++r_.interactions;
    r_.interaction.Record(Ns(now - c.start));
  }
  c.phase = Phase::kIdle;
  ScheduleNext(i, now);
}

void Worker::StartInteraction(size_t i, TimePoint start) {
  Conn& c = conns_[i];
  c.current = c.slot;
  c.session = c.index + c.current * o_.connections;
  c.slot = (c.slot + 1) % c.owned;
  c.start = start;
  c.in_window = start >= t0_ && start < t1_;
  ++c.started;
  ++r_.attempts;
  AppendCommand(&c.out, {"GET", Key(c.session)});
  c.phase = Phase::kAwaitGet;
  c.op_sent = Clock::now();
  Flush(i);
}

// After an interaction (or at the start): the next one now, later, or never.
void Worker::ScheduleNext(size_t i, TimePoint now) {
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

void Worker::Wait(TimePoint until) {
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

void Worker::Establish() {
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

void Worker::Load(const Schedule& s) {
  t0_ = s.t0;
  t1_ = s.t1;
  open_loop_ = s.open_loop;
  interval_ = s.interval;
  std::mt19937_64 rng(o_.seed + 2 * static_cast<uint64_t>(index_) + 1);
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    if (c.phase != Phase::kIdle) continue;
    if (open_loop_) {
      std::uniform_real_distribution<double> phase(0, 1);
      c.due = s.launch + std::chrono::duration_cast<Clock::duration>(interval_ * phase(rng));
    }
    ScheduleNext(i, s.launch);
  }
  bool started = false, ended = false;
  double cpu0 = o_.populate ? ThreadCpuSeconds() : 0;
  finished_at_ = s.launch;
  while (true) {
    TimePoint now = Clock::now();
    if (!started && now >= t0_) {
      started = true;
      cpu0 = ThreadCpuSeconds();
    }
    if (!ended && now >= t1_) {
      ended = true;
      cpu_seconds_ = ThreadCpuSeconds() - cpu0;
    }
    while (!timers_.empty() && timers_.top().due <= now) {
      Timer t = timers_.top();
      timers_.pop();
      if (conns_[t.conn].phase == Phase::kIdle) StartInteraction(t.conn, open_loop_ ? t.due : now);
    }
    bool busy = std::any_of(conns_.begin(), conns_.end(), [](const Conn& c) {
      return c.phase == Phase::kIdle || InFlight(c.phase);
    });
    if (!busy || now >= s.drain_end) {
      finished_at_ = now;
      break;
    }
    TimePoint until = std::min(s.drain_end, now + std::chrono::milliseconds(100));
    if (!started) until = std::min(until, t0_);
    if (!ended) until = std::min(until, t1_);
    if (!timers_.empty()) until = std::min(until, timers_.top().due);
    Wait(until);
  }
  if (!ended) cpu_seconds_ = ThreadCpuSeconds() - cpu0;
  for (Conn& c : conns_) {
    if (InFlight(c.phase) && c.in_window) {
      ++r_.unfinished;
      ++r_.errors;
      Fail("an interaction was still unanswered at the drain deadline");
    }
    bool in_flight = InFlight(c.phase);
    if (open_loop_ && in_flight && c.due < t1_) {
      // A connection stuck behind its schedule: its intended starts up to the window's end
      // never began.
      TimePoint first = std::max(c.due, t0_);
      r_.missed += static_cast<uint64_t>((t1_ - first) / interval_) + 1;
    }
  }
}

// Runs `job` on every worker at once: worker 0 on the calling thread, the others on their own.
void OnEach(std::vector<std::unique_ptr<Worker>>& workers,
            const std::function<void(Worker&)>& job) {
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers.size(); ++w) {
    threads.emplace_back([&job, &workers, w] { job(*workers[w]); });
  }
  job(*workers[0]);
  for (auto& t : threads) t.join();
}

}  // namespace

DriverResult RunLoad(const DriverOptions& options, WindowHooks& hooks) {
  DriverResult r;
  const long C = options.connections;
  r.threads = static_cast<int>(std::clamp<long>(options.threads, 1, C));
  std::vector<std::unique_ptr<Worker>> workers;
  for (long t = 0; t < r.threads; ++t) {
    long first = C * t / r.threads, end = C * (t + 1) / r.threads;
    workers.push_back(std::make_unique<Worker>(options, static_cast<int>(t), first, end - first));
  }
  OnEach(workers, [](Worker& w) {
    w.Connect();
    w.Establish();
  });
  int established = 0;
  for (const auto& w : workers) established += w->tally().established;
  if (established == options.connections) {
    Schedule s = MakeSchedule(options);
    // Window boundaries run on their own thread so a slow /proc read never stalls the load;
    // the process's CPU is read there, at the boundaries, for every thread at once.
    double cpu0 = 0, cpu1 = 0;
    std::thread boundaries;
    if (options.populate) {
      cpu0 = ProcessCpuSeconds();
    } else {
      boundaries = std::thread([&hooks, &s, &cpu0, &cpu1] {
        std::this_thread::sleep_until(s.t0);
        cpu0 = ProcessCpuSeconds();
        hooks.OnWindowStart();
        std::this_thread::sleep_until(s.t0 + (s.t1 - s.t0) / 2);
        hooks.OnWindowMiddle();
        std::this_thread::sleep_until(s.t1);
        cpu1 = ProcessCpuSeconds();
        hooks.OnWindowEnd();
      });
    }
    OnEach(workers, [&s](Worker& w) { w.Load(s); });
    if (boundaries.joinable()) boundaries.join();
    if (options.populate) {
      cpu1 = ProcessCpuSeconds();
      TimePoint last = s.launch;
      for (const auto& w : workers) last = std::max(last, w->finished_at());
      r.window_seconds = std::chrono::duration<double>(last - s.launch).count();
    } else {
      r.window_seconds = std::chrono::duration<double>(s.t1 - s.t0).count();
    }
    r.cpu_seconds = cpu1 - cpu0;
  }
  for (const auto& w : workers) {
    r.tally.Merge(w->tally());
    r.thread_cpu_seconds.push_back(w->cpu_seconds());
  }
  return r;
}

}  // namespace skydb::loadgen
