// `skydb upgrade --data-dir DIR`: moves the stopped cluster under DIR to a new PostgreSQL major
// (skydb/upgrade.h, docs/upgrade.md). Finds the new binaries as `serve` would (or
// --to-bin-dir) and the cluster's own (an earlier extraction under DIR/runtime, the other
// discovery sources pinned to its major, or --from-bin-dir), prints the plan and the expected
// downtime, and runs it. As root it becomes the cluster's user first, as serve does.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/strings.h"
#include "cli/command.h"
#include "skydb/bundle.h"
#include "skydb/data_dir_layout.h"
#include "skydb/discovery.h"
#include "skydb/supervisor.h"
#include "skydb/upgrade.h"
#include "supervisor/data_dir.h"

namespace skydb::cli {
namespace {

struct UpgradeFlags {
  std::string data_dir;
  std::string user;
  std::string to_bin_dir;
  std::string from_bin_dir;
  std::string method = "auto";
  bool link = false;
  bool dry_run = false;
  int jobs = 0;
};

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "skydb upgrade: %s\n", why.c_str());
  return kExitFailure;
}

Result<UpgradeBinaries> Chosen(Result<DiscoveryReport> report) {
  if (!report.ok()) return std::move(report).error();
  if (!report->chosen || !report->chosen->version) {
    return Error::NotFound("no usable PostgreSQL binaries were found");
  }
  return UpgradeBinaries{report->chosen->bin_dir, *report->chosen->version};
}

Result<UpgradeBinaries> ExplicitBinDir(Env& env, const std::string& dir, const std::string& flag,
                                       const std::string& pin) {
  DiscoveryOptions options;
  options.bin_dir = dir;
  options.bin_dir_origin = flag;
  options.version_pin = pin;
  options.allowed = {BinarySource::kBinDir};
  return Chosen(DiscoverBinaries(options, *env.fs, *env.runner));
}

// The binaries `serve` would run now: the new major's, once the operator pointed skydb at it.
Result<UpgradeBinaries> NewBinaries(Env& env, const Config& config, const UpgradeFlags& flags,
                                    std::unique_ptr<BundleSlot>& bundle) {
  if (!flags.to_bin_dir.empty()) {
    return ExplicitBinDir(env, flags.to_bin_dir, "--to-bin-dir", config.postgres.version);
  }
  SKYDB_ASSIGN_OR_RETURN(
      auto options,
      DiscoveryOptionsFromConfig(config.postgres, EnvOr("SKY_POSTGRES_BIN"), EnvOr("PATH")));
  SKYDB_ASSIGN_OR_RETURN(
      bundle, BundleSlotFor(config.postgres.bundle, config.data_dir, *env.fs, env.bundle_output));
  options.bundle = bundle.get();
  return Chosen(DiscoverBinaries(options, *env.fs, *env.runner));
}

// The cluster's own major: an extraction of an earlier bundle under DIR/runtime first (what the
// daemon ran), then pg_config, the distribution's layouts and PATH, pinned to it.
Result<UpgradeBinaries> OldBinaries(Env& env, const Config& config, const UpgradeFlags& flags,
                                    int major) {
  std::string pin = std::to_string(major);
  if (!flags.from_bin_dir.empty()) {
    return ExplicitBinDir(env, flags.from_bin_dir, "--from-bin-dir", pin);
  }
  std::string runtime = DataDirLayout::For(config.data_dir).runtime;
  if (auto entries = env.fs->ListDir(runtime); entries.ok()) {
    for (const auto& entry : *entries) {
      auto text = env.fs->ReadFile(runtime + "/" + entry + "/manifest.json");
      if (!text.ok()) continue;
      auto manifest = ParseManifest(*text);
      if (!manifest.ok()) continue;
      auto version = ParsePostgresVersion(manifest->pg_version_line);
      if (!version.ok() || version->major != major) continue;
      auto found = ExplicitBinDir(env, runtime + "/" + entry + "/" + manifest->bin_dir,
                                  "extraction " + entry, pin);
      if (found.ok()) return found;
    }
  }
  SKYDB_ASSIGN_OR_RETURN(auto options,
                         DiscoveryOptionsFromConfig(config.postgres, "", EnvOr("PATH")));
  // postgres.sources says where the daemon may take binaries from; the old ones only read the
  // cluster once, so every other source is looked at.
  options.bin_dir.clear();
  options.version_pin = pin;
  options.allowed = {BinarySource::kPgConfig, BinarySource::kDistro, BinarySource::kPath};
  auto found = Chosen(DiscoverBinaries(options, *env.fs, *env.runner));
  if (!found.ok()) {
    return std::move(found).error().Within("cannot find the cluster's PostgreSQL " + pin +
                                           " binaries (give --from-bin-dir)");
  }
  return found;
}

// As root: the cluster's user from here on, as `serve` does (root never writes where the
// cluster user owns). Not root: the cluster must be ours.
Status BecomeClusterUser(Env& env, const Config& config, const supervisor::DataDirLayout& layout,
                         ClusterUser& user) {
  SKYDB_ASSIGN_OR_RETURN(user, ResolveClusterUser(env.host->EffectiveUid(), config.run_as_user,
                                                  LookupUserByUid, LookupUser));
  SKYDB_ASSIGN_OR_RETURN(FileInfo info, env.fs->Stat(layout.pgdata));
  if (info.uid != user.user.uid) {
    return Error::Permission(layout.pgdata + " belongs to uid " + std::to_string(info.uid) +
                             ", not to " + user.user.name +
                             " who runs the cluster; give --user (or run_as_user) its owner");
  }
  if (!user.drop_privileges) return Ok();
  SKYDB_ASSIGN_OR_RETURN(auto groups, GroupsToKeep(user.user, {}));
  SKYDB_RETURN_IF_ERROR(env.host->DropPrivileges(user.user, groups));
  ::setenv("HOME", user.user.home.c_str(), 1);
  ::setenv("USER", user.user.name.c_str(), 1);
  return Ok();
}

std::string Mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

int RunUpgradeCommand(CommandContext& ctx, const UpgradeFlags& flags) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  if (!flags.user.empty()) ctx.flag_values.emplace_back("run_as_user", flags.user);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  UpgradeMethod method = UpgradeMethod::kAuto;
  if (flags.method == "pg_upgrade") method = UpgradeMethod::kPgUpgrade;
  if (flags.method == "dump") method = UpgradeMethod::kDump;
  Env& env = ctx.env;
  auto abs = env.fs->RealPath(config->data_dir);
  if (!abs.ok()) return Fail(config->data_dir + " does not exist: there is no cluster to upgrade");
  config->data_dir = *abs;
  auto layout = supervisor::DataDirLayout::For(*abs);
  auto version_text = env.fs->ReadFile(layout.pgdata + "/PG_VERSION");
  if (!version_text.ok())
    return Fail("there is no cluster in " + layout.pgdata + " (no PG_VERSION)");
  int major = std::atoi(std::string(Trim(*version_text)).c_str());

  ClusterUser user;
  if (Status became = BecomeClusterUser(env, *config, layout, user); !became.ok()) {
    return Fail(became.error().message);
  }
  // Held until the upgrade ends: no daemon starts on DIR meanwhile.
  auto lock = env.host->LockExclusive(layout.lock_file);
  if (!lock.ok()) {
    return Fail("refused, nothing was changed: " + lock.error().message +
                "; stop it first (systemctl stop skydb, or SIGTERM), then upgrade");
  }
  if (Status free = CheckNoKeptCluster(*env.fs, layout.root); !free.ok()) {
    return Fail(free.error().message);
  }
  std::unique_ptr<BundleSlot> bundle;
  auto new_bin = NewBinaries(env, *config, flags, bundle);
  if (!new_bin.ok()) return Fail("the new binaries: " + new_bin.error().message);
  auto old_bin = OldBinaries(env, *config, flags, major);
  if (!old_bin.ok()) return Fail(old_bin.error().message);
  auto plan = PlanUpgrade(major, *old_bin, *new_bin, method,
                          flags.link ? UpgradeTransfer::kLink : UpgradeTransfer::kCloneOrCopy,
                          [&](const std::string& path) { return env.fs->IsExecutable(path); });
  if (!plan.ok()) return Fail(plan.error().message);

  UpgradeOs os = RealUpgradeOs();
  // The databases, not the WAL: what is dumped, restored or copied.
  uint64_t size = os.tree_bytes(layout.pgdata + "/base") + os.tree_bytes(layout.pgdata + "/global");
  bool clone = os.can_clone(layout.root);
  auto downtime = EstimateDowntime(*plan, size, clone);
  std::string how = plan->method == UpgradeMethod::kDump ? "dump and restore (" + plan->why + ")"
                                                         : "pg_upgrade (" + plan->why + ")";
  std::fprintf(stderr,
               "skydb upgrade: %s: PostgreSQL %s (%s) -> PostgreSQL %s (%s) by %s; its databases "
               "hold %s; expected downtime about %lld s (docs/upgrade.md has the measured "
               "rates)\n",
               layout.pgdata.c_str(), old_bin->version.text.c_str(), old_bin->dir.c_str(),
               new_bin->version.text.c_str(), new_bin->dir.c_str(), how.c_str(), Mib(size).c_str(),
               static_cast<long long>(downtime.count()));
  if (flags.dry_run) {
    std::fprintf(stderr, "skydb upgrade: --dry-run: nothing was changed\n");
    return kExitOk;
  }
  UpgradeOptions options;
  options.data_dir = layout.root;
  options.superuser = user.user.name;
  options.plan = *plan;
  options.backup_repository = config->backup.repository;
  options.jobs = flags.jobs > 0 ? flags.jobs : std::max(1, SchedAffinityCpuCount());
  auto started = env.clock->Now();
  options.progress = [&](const std::string& line) {
    double at = std::chrono::duration<double>(env.clock->Now() - started).count();
    std::fprintf(stderr, "skydb upgrade: %6.1fs %s\n", at, line.c_str());
    std::fflush(stderr);
  };
  Status done = RunUpgrade(options, env, os);
  double took = std::chrono::duration<double>(env.clock->Now() - started).count();
  if (!done.ok())
    return Fail("failed after " + std::to_string(static_cast<int>(took)) +
                " s: " + done.error().message);
  std::printf(
      "upgraded %s to PostgreSQL %s in %.1f s; the PostgreSQL %d cluster is kept in "
      "%s/upgrade/old-%d (remove it once the new one serves you well); start skydb with the "
      "new binaries (%s)\n",
      layout.pgdata.c_str(), new_bin->version.text.c_str(), took, major, layout.root.c_str(), major,
      new_bin->dir.c_str());
  return kExitOk;
}

}  // namespace

void AddUpgradeCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<UpgradeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "upgrade",
      "move the stopped cluster under --data-dir to the major of the binaries serve would run "
      "(or --to-bin-dir), keeping the app's data, the sessions and the backup configuration");
  cmd->add_option("--data-dir", flags->data_dir, "data directory (config data_dir)");
  cmd->add_option("--user", flags->user, "the cluster's user, when run as root (run_as_user)");
  cmd->add_option("--to-bin-dir", flags->to_bin_dir,
                  "the new major's bin dir (default: what serve would choose)");
  cmd->add_option("--from-bin-dir", flags->from_bin_dir,
                  "the cluster's major's bin dir (default: found under DIR/runtime, then "
                  "discovered)");
  cmd->add_option("--method", flags->method, "auto, pg_upgrade or dump")
      ->check(CLI::IsMember({"auto", "pg_upgrade", "dump"}));
  cmd->add_flag("--link", flags->link,
                "pg_upgrade --link: no copy, but the old cluster cannot run once the new one has");
  cmd->add_option("--jobs", flags->jobs, "parallel restore jobs (default: the cores)");
  cmd->add_flag("--dry-run", flags->dry_run, "print the plan and the expected downtime only");
  cmd->callback([&ctx, flags] { ctx.exit_code = RunUpgradeCommand(ctx, *flags); });
}

}  // namespace skydb::cli
