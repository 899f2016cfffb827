// skydb::Embedded (include/skydb/embedded.h): the lifecycle `skydb serve` runs
// (daemon/lifecycle.h), on a thread this object owns, over a real Env whose systemd notifier
// is silent: readiness towards systemd is the app's to announce, not the library's.
#include "skydb/embedded.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

#include "daemon/database_source.h"
#include "daemon/lifecycle.h"
#include "daemon/open_files.h"
#include "embed/embedded_config.h"
#include "embed/log_sinks.h"
#include "env/real_env.h"
#include "skydb/mutex.h"

namespace skydb {
// A named namespace, not an anonymous one: Embedded::Impl holds one, and a unity build
// (tools/package-test.sh) would make GCC's -Wsubobject-linkage refuse an anonymous type there.
namespace embed {

class SilentNotifier final : public Notifier {
 public:
  void Send(const std::string&) override {}
  std::optional<std::chrono::microseconds> WatchdogTimeout() const override { return std::nullopt; }
  uint64_t MonotonicUsec() const override { return 0; }
};

}  // namespace embed

class Embedded::Impl {
 public:
  Impl() : env_(real_.env()) { env_.notifier = &notifier_; }
  ~Impl() {
    (void)Stop();
    embed::ReleaseLogSink();
  }

  uid_t EffectiveUid() const { return env_.host->EffectiveUid(); }

  // Every signal is blocked on skydb's threads (built under the mask, they inherit it), so
  // the app's handlers or sigwait see them; PostgreSQL's children reset their masks.
  void Begin(const Config& config, std::shared_ptr<embed::LastError> last_error) {
    last_error_ = std::move(last_error);
    daemon::LifecycleOptions options{config, [this](const daemon::ReadyInfo& info) {
                                       MutexLock lock(mu_);
                                       ready_ = true;
                                       store_socket_ = info.store_socket;
                                       changed_.NotifyAll();
                                     }};
    sigset_t all, previous;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &previous);
    lifecycle_ = std::make_unique<daemon::Lifecycle>(
        env_, std::move(options), daemon::NewDatabaseSource(env_, config, Profile::kEmbedded));
    thread_ = std::thread([this] {
      int status = lifecycle_->Run();
      MutexLock lock(mu_);
      ended_ = true;
      exit_status_ = status;
      changed_.NotifyAll();
    });
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }

  Status WaitReady(std::chrono::milliseconds timeout) {
    auto deadline = env_.clock->Now() + timeout;
    MutexLock lock(mu_);
    while (!ready_ && !ended_) {
      auto left = deadline - env_.clock->Now();
      if (left <= Clock::Duration::zero()) {
        return Error::Timeout("skydb was not ready within " + FormatDuration(timeout) +
                              "; it goes on starting (a first start runs initdb)");
      }
      changed_.WaitFor(mu_, left);
    }
    if (ready_) return Ok();
    if (exit_status_ == 0) return Error::Unavailable("skydb was stopped before it was ready");
    return FailedLocked("skydb stopped before it was ready");
  }

  Status Stop() {
    std::lock_guard<std::mutex> stopping(stop_mu_);
    if (thread_.joinable()) {
      lifecycle_->RequestStop();
      thread_.join();
    }
    MutexLock lock(mu_);
    if (exit_status_ == 0) return Ok();
    return FailedLocked("skydb had failed");
  }

  std::string store_socket() {
    MutexLock lock(mu_);
    return store_socket_;
  }

 private:
  // The lifecycle logs why it failed as one error line; that line is the reason.
  Status FailedLocked(const std::string& what) REQUIRES(mu_) {
    std::string reason = last_error_->Get();
    return Error::Unavailable(what + (reason.empty() ? " (see its log)" : ": " + reason));
  }

  RealEnv real_;
  embed::SilentNotifier notifier_;
  Env env_;
  std::shared_ptr<embed::LastError> last_error_;
  std::unique_ptr<daemon::Lifecycle> lifecycle_;
  std::mutex stop_mu_;  // one Stop at a time; held while joining
  std::thread thread_;
  Mutex mu_;
  CondVar changed_;
  bool ready_ GUARDED_BY(mu_) = false;
  bool ended_ GUARDED_BY(mu_) = false;
  int exit_status_ GUARDED_BY(mu_) = 0;
  std::string store_socket_ GUARDED_BY(mu_);
};

Result<std::unique_ptr<Embedded>> Embedded::Start(EmbeddedOptions options) {
  auto impl = std::make_unique<Impl>();
  SKYDB_RETURN_IF_ERROR(embed::RefuseRoot(impl->EffectiveUid()));
  SKYDB_ASSIGN_OR_RETURN(Config config, embed::EmbeddedConfig(options));
  SKYDB_ASSIGN_OR_RETURN(AppEnvironment environment, AppEnvironmentFor(config));
  SKYDB_ASSIGN_OR_RETURN(auto last_error, embed::InstallLogging(config, options.log_sink));
  daemon::RaiseOpenFileLimit(static_cast<uint64_t>(config.resp.max_clients));
  impl->Begin(config, std::move(last_error));
  return std::unique_ptr<Embedded>(
      new Embedded(std::move(config), std::move(environment), std::move(impl)));
}

Embedded::Embedded(Config config, AppEnvironment environment, std::unique_ptr<Impl> impl)
    : config_(std::move(config)), environment_(std::move(environment)), impl_(std::move(impl)) {}

Embedded::~Embedded() = default;

Status Embedded::WaitReady(std::chrono::milliseconds timeout) { return impl_->WaitReady(timeout); }

Status Embedded::Stop() { return impl_->Stop(); }

std::string Embedded::database_url() const {
  const std::string* url = environment_.Find("DATABASE_URL");
  return url == nullptr ? std::string() : *url;
}

std::string Embedded::store_socket() const {
  std::string socket = impl_->store_socket();
  return socket.empty() ? StoreSocketPath(config_) : socket;
}

}  // namespace skydb
