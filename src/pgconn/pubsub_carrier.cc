// The carrier's front: the PubSubCarrier methods, its threads, and the watchdog that bounds
// how long a reply waits for PostgreSQL.
#include "pgconn/pubsub_carrier.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "pgconn/pubsub_threads.h"

namespace skydb::pg {
namespace pubsub {

Waker::Waker() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Waker::~Waker() {
  if (fd_ >= 0) ::close(fd_);
}

void Waker::Wake() {
  uint64_t one = 1;
  (void)!::write(fd_, &one, sizeof one);
}

void Waker::Wait(std::chrono::milliseconds timeout, int fd) {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {fd, POLLIN, 0}};
  auto ms = std::clamp<int64_t>(timeout.count(), 0, 60000);
  (void)::poll(fds, fd >= 0 ? 2 : 1, static_cast<int>(ms));
  uint64_t count = 0;
  (void)!::read(fd_, &count, sizeof count);
}

std::chrono::milliseconds Backoff::Next() {
  current_ = std::clamp(current_ * 2, min_, max_);
  return current_;
}

Shared::Shared(PubSubCarrierOptions o, uint64_t id)
    : options(std::move(o)),
      me(id),
      requests(RequestLimits{options.max_queue_messages, options.max_queue_bytes, 1024, 16 << 20,
                             options.wait}) {}

Result<Connection> OpenCarrierConnection(const Shared& shared, const char* application_name,
                                         const char* name) {
  ConnectOptions connect;
  connect.read_write = true;  // NOTIFY and the tables need the primary
  connect.application_name = application_name;
  connect.name = name;
  auto opened = Connection::Open(shared.options.conninfo, connect);
  if (!opened.ok()) return std::move(opened).error();
  SKYDB_RETURN_IF_ERROR(PrepareSession(opened.value()));
  return opened;
}

namespace {

uint64_t NewDaemonId() {
  std::random_device seed;
  std::mt19937_64 random((uint64_t{seed()} << 32) ^ seed());
  uint64_t id = 0;
  while (id == 0) id = random() >> 1;  // a positive bigint
  return id;
}

std::string DescribeThisProcess() {
  char host[256] = "?";
  (void)::gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  return "pid " + std::to_string(::getpid()) + " on " + host;
}

class Carrier final : public PubSubCarrier {
 public:
  explicit Carrier(PubSubCarrierOptions options)
      : shared_(WithDescription(std::move(options)), NewDaemonId()),
        sender_(shared_),
        listener_(shared_) {
    sender_thread_ = std::thread([this] { sender_.Run(); });
    listener_thread_ = std::thread([this] { listener_.Run(); });
    watchdog_thread_ = std::thread([this] { Watch(); });
  }

  ~Carrier() override {
    {
      MutexLock lock(watch_mu_);
      shared_.stopping.store(true);
      watch_cv_.NotifyAll();
    }
    shared_.listener_wake.Wake();
    shared_.sender_wake.Wake();
    listener_thread_.join();
    sender_thread_.join();
    watchdog_thread_.join();
    shared_.requests.Stop().Run("skydb is stopping");
  }

  void Attach(PubSubLocal* local) override {
    MutexLock lock(shared_.local_mu);  // waits for a delivery running now
    shared_.local = local;
  }

  void Publish(std::string_view channel, std::string_view message, Published done) override {
    bool first = false;
    if (!shared_.requests.Publish(channel, message, done, Now(), &first)) {
      done(0);
      return;
    }
    if (first) shared_.sender_wake.Wake();
  }

  void Announce(SubscriptionCount now, Recorded recorded) override {
    if (shared_.requests.Announce(std::move(now), std::move(recorded), Now())) {
      shared_.sender_wake.Wake();
    }
  }

  void Remote(bool patterns, std::optional<std::vector<std::string>> names, Answer done) override {
    if (!shared_.requests.Ask({patterns, std::move(names)}, done, Now())) {
      done(Error::Unavailable("the pub/sub carrier is not connected to PostgreSQL"));
      return;
    }
    shared_.sender_wake.Wake();
  }

 private:
  SteadyTime Now() const { return shared_.options.clock->Now(); }

  static PubSubCarrierOptions WithDescription(PubSubCarrierOptions options) {
    if (options.description.empty()) options.description = DescribeThisProcess();
    return options;
  }

  // Answers what waited for PostgreSQL longer than the wait bound, as if the carrier were down.
  // An episode is logged once; it ends after a whole wait bound with nothing late.
  void Watch() {
    Episode late;
    SteadyTime last_late{};
    MutexLock lock(watch_mu_);
    while (!shared_.stopping.load()) {
      lock.Unlock();
      SteadyTime next, now = Now();
      Fallbacks expired = shared_.requests.Expire(now, &next);
      if (!expired.empty()) {
        last_late = now;
        if (late.Report()) {
          spdlog::warn(
              "pubsub: PostgreSQL did not answer within {} ms (store.write_timeout): PUBLISH, "
              "SUBSCRIBE and PUBSUB are answered for this daemon only until it does ({} "
              "message(s) not carried)",
              shared_.options.wait.count(), expired.expired_messages);
        }
        expired.Run("PostgreSQL did not answer in time");
      } else if (late.open() && now - last_late >= shared_.options.wait && late.Recover()) {
        spdlog::info("pubsub: PostgreSQL answers the carrier in time again");
      }
      lock.Lock();
      if (!shared_.stopping.load()) watch_cv_.WaitUntil(watch_mu_, next);
    }
  }

  Shared shared_;
  Sender sender_;
  Listener listener_;
  Mutex watch_mu_;
  CondVar watch_cv_;
  std::thread sender_thread_;
  std::thread listener_thread_;
  std::thread watchdog_thread_;
};

}  // namespace
}  // namespace pubsub

std::unique_ptr<PubSubCarrier> NewPubSubCarrier(PubSubCarrierOptions options) {
  return std::make_unique<pubsub::Carrier>(std::move(options));
}

}  // namespace skydb::pg
