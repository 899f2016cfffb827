#include "env/real_env.h"

#include "skydb/bundle.h"
#include "skydb/notify.h"
#include "skydb/process.h"
#include "skydb/supervisor.h"

namespace skydb {

struct RealEnv::Parts {
  std::unique_ptr<FileSystem> fs = NewRealFileSystem();
  std::unique_ptr<Clock> clock = NewRealClock();
  std::unique_ptr<ProcessRunner> runner = NewRealProcessRunner();
  std::unique_ptr<ChildLauncher> launcher = NewRealChildLauncher();
  std::unique_ptr<HostOps> host = NewRealHostOps();
  std::unique_ptr<Notifier> notifier = NewSystemdNotifier();
  std::unique_ptr<PgProbe> pg = NewRealPgProbe();
  std::unique_ptr<BundleOutput> bundle_output = NewRealBundleOutput();
  std::unique_ptr<AppLauncherForker> app_launchers = NewRealAppLauncherForker(*host);
};

RealEnv::RealEnv() : parts_(std::make_unique<Parts>()) {
  env_ = Env{parts_->fs.get(),       parts_->clock.get(),         parts_->runner.get(),
             parts_->launcher.get(), parts_->host.get(),          parts_->notifier.get(),
             parts_->pg.get(),       parts_->bundle_output.get(), parts_->app_launchers.get()};
}

RealEnv::~RealEnv() = default;

}  // namespace skydb
