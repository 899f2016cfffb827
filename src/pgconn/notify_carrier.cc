// NotifyCarrier: one thread, one libpq connection, LISTEN + pg_notify.
#include "pgconn/notify_carrier.h"

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <thread>

#include "pgconn/pgconn.h"
#include "skydb/mutex.h"

namespace skydb::pg {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<uint8_t>(in[i + 2]);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < in.size() ? kAlphabet[n & 63] : '=');
  }
  return out;
}

std::optional<std::string> Unbase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t n = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      char c = in[i + j];
      const char* at = c == '=' ? nullptr : std::find(kAlphabet, kAlphabet + 64, c);
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
      } else if (at == nullptr || at == kAlphabet + 64 || pad > 0) {
        return std::nullopt;
      }
      n = (n << 6) | (at != nullptr ? static_cast<uint32_t>(at - kAlphabet) : 0);
    }
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

class NotifyCarrier final : public PubSubCarrier {
 public:
  explicit NotifyCarrier(NotifyCarrierOptions options) : options_(std::move(options)) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    thread_ = std::thread([this] { Run(); });
  }
  ~NotifyCarrier() override {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    Wake();
    thread_.join();
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  size_t max_message_bytes() const override { return kMaxNotifyMessageBytes; }

  Result<bool> Publish(std::string_view channel, std::string_view message) override {
    if (channel.size() + message.size() > kMaxNotifyMessageBytes) {
      return Error::InvalidArgument("the message is too large for PostgreSQL NOTIFY");
    }
    {
      MutexLock lock(mu_);
      if (!connected_ || queue_.size() >= options_.max_queue) {
        if (!dropping_) {
          spdlog::warn(
              "pubsub: {}: messages published here reach this daemon's subscribers only until "
              "it recovers",
              connected_ ? "the NOTIFY queue is full (PostgreSQL is slow)"
                         : "not connected to PostgreSQL");
        }
        dropping_ = true;
        return false;
      }
      dropping_ = false;
      queue_.push_back(EncodeNotifyPayload(channel, message));
    }
    Wake();
    return true;
  }

  void SetReceiver(Receiver receiver) override {
    MutexLock lock(receiver_mu_);  // waits for a receiver running now
    receiver_ = std::move(receiver);
  }

 private:
  void Wake() {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  bool Stopping() {
    MutexLock lock(mu_);
    return stopping_;
  }
  void SetConnected(bool connected) {
    MutexLock lock(mu_);
    connected_ = connected;
    if (!connected) queue_.clear();  // an outage loses what it had not sent
  }

  void Run();
  bool Connect();
  bool SendQueued(Connection& conn);
  bool Receive(Connection& conn);
  void WaitBackoff();

  NotifyCarrierOptions options_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::optional<Connection> conn_;  // the carrier thread's only
  std::chrono::milliseconds backoff_{0};
  bool outage_logged_ = false;

  Mutex mu_;
  std::deque<std::string> queue_ GUARDED_BY(mu_);
  bool connected_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool dropping_ GUARDED_BY(mu_) = false;

  Mutex receiver_mu_;
  Receiver receiver_ GUARDED_BY(receiver_mu_);
};

void NotifyCarrier::Run() {
  while (!Stopping()) {
    if (!conn_ && !Connect()) {
      WaitBackoff();
      continue;
    }
    pollfd fds[2] = {{PQsocket(conn_->native()), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    (void)::poll(fds, 2, 1000);
    uint64_t count = 0;
    (void)!::read(wake_fd_, &count, sizeof count);
    if (!SendQueued(*conn_) || !Receive(*conn_)) {
      spdlog::warn(
          "pubsub: lost the PostgreSQL connection that carries messages between daemons; "
          "reconnecting (messages meanwhile are lost)");
      outage_logged_ = true;
      conn_.reset();
      SetConnected(false);
    }
  }
}

bool NotifyCarrier::Connect() {
  ConnectOptions connect;
  connect.application_name = "skydb pubsub";
  connect.name = "pubsub";
  auto opened = Connection::Open(options_.conninfo, connect);
  Status listening = opened.ok()
                         ? opened.value().Run(std::string("LISTEN \"") + kNotifyChannel + "\"")
                         : Status(opened.error());
  if (!listening.ok()) {
    if (!outage_logged_) {
      spdlog::warn("pubsub: cannot LISTEN for messages from other daemons: {}; retrying",
                   listening.error().message);
      outage_logged_ = true;
    }
    return false;
  }
  if (outage_logged_) spdlog::info("pubsub: carrying messages between daemons again");
  outage_logged_ = false;
  backoff_ = std::chrono::milliseconds(0);
  conn_ = std::move(opened).value();
  SetConnected(true);
  return true;
}

void NotifyCarrier::WaitBackoff() {
  backoff_ = std::clamp(backoff_ * 2, options_.min_backoff, options_.max_backoff);
  pollfd fd{wake_fd_, POLLIN, 0};
  auto until = std::chrono::steady_clock::now() + backoff_;
  while (!Stopping() && std::chrono::steady_clock::now() < until) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    (void)::poll(&fd, 1, static_cast<int>(std::max<int64_t>(left.count(), 1)));
    uint64_t count = 0;
    (void)!::read(wake_fd_, &count, sizeof count);
  }
}

bool NotifyCarrier::SendQueued(Connection& conn) {
  std::deque<std::string> batch;
  {
    MutexLock lock(mu_);
    batch.swap(queue_);
  }
  for (auto& payload : batch) {
    Status sent = conn.Run("SELECT pg_notify($1, $2)", {std::string(kNotifyChannel), payload});
    if (!sent.ok()) {
      spdlog::debug("pubsub: NOTIFY failed: {}", sent.error().message);
      if (!conn.Healthy()) return false;
    }
  }
  return true;
}

bool NotifyCarrier::Receive(Connection& conn) {
  pg_conn* raw = conn.native();
  if (PQconsumeInput(raw) == 0 || !conn.Healthy()) return false;
  int self = PQbackendPID(raw);
  while (PGnotify* notify = PQnotifies(raw)) {
    if (notify->be_pid != self) {
      auto decoded = DecodeNotifyPayload(notify->extra);
      if (decoded) {
        MutexLock lock(receiver_mu_);
        if (receiver_) receiver_(std::move(decoded->first), std::move(decoded->second));
      } else {
        spdlog::debug("pubsub: ignored a notification on \"{}\" that skydb did not send",
                      kNotifyChannel);
      }
    }
    PQfreemem(notify);
  }
  return true;
}

}  // namespace

std::string EncodeNotifyPayload(std::string_view channel, std::string_view message) {
  std::string both;
  both.reserve(channel.size() + message.size());
  both.append(channel).append(message);
  return std::to_string(channel.size()) + ":" + Base64(both);
}

std::optional<std::pair<std::string, std::string>> DecodeNotifyPayload(std::string_view payload) {
  size_t colon = payload.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 10) return std::nullopt;
  size_t length = 0;
  auto [end, ec] = std::from_chars(payload.data(), payload.data() + colon, length);
  if (ec != std::errc() || end != payload.data() + colon) return std::nullopt;
  auto both = Unbase64(payload.substr(colon + 1));
  if (!both || length > both->size()) return std::nullopt;
  return std::make_pair(both->substr(0, length), both->substr(length));
}

std::unique_ptr<PubSubCarrier> NewNotifyCarrier(NotifyCarrierOptions options) {
  return std::make_unique<NotifyCarrier>(std::move(options));
}

}  // namespace skydb::pg
