// `skydb doctor [--data-dir DIR] [--user NAME]`: can skydb start here, and if not, why not.
//
// Gathers facts from the real OS (host facts, binaries, users, /dev/shm, the data dir), hands
// them to the pure checks in doctor_checks.h, prints the report on stdout and every blocker on
// stderr. Exit 0 when nothing blocks a start, 1 when something does, 2 on a config error.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/doctor_checks.h"
#include "skydb/bundle.h"
#include "skydb/discovery.h"
#include "skydb/env.h"
#include "skydb/tune.h"

namespace skydb::cli {
namespace {

constexpr const char* kShmPath = "/dev/shm";
// Searched when the environment has no PATH at all (an `env -i` start), as execvp would.
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

struct DoctorFlags {
  std::string data_dir;
  std::string user;
};

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

UserFacts GatherUserFacts(const Config& config) {
  UserFacts facts;
  facts.euid = ::geteuid();
  facts.run_as_user = config.run_as_user;
  if (facts.run_as_user.empty()) return facts;
  auto user = LookupUser(facts.run_as_user);
  if (user.ok()) {
    facts.run_as = std::move(user).value();
  } else {
    facts.lookup_error = user.error().message;
  }
  return facts;
}

// Host facts and the derived tuning; nullopt (and a blocker) when the host cannot be read.
std::optional<Settings> HostAndTuning(const Config& config, const FileSystem& fs, std::string& out,
                                      std::vector<Finding>& findings) {
  auto host = ReadHostFacts(fs, SchedAffinityCpuCount(), config.host);
  if (!host.ok()) {
    findings.push_back({Severity::kBlocker, "host",
                        "cannot read host facts (" + host.error().message +
                            "): set host.ram and host.cores in the config"});
    return std::nullopt;
  }
  Settings settings = Tune(*host, Profile::kEmbedded, config.postgres.settings, AppPool(config));
  out += RenderHostFacts(*host) + "\n" + RenderTuning(settings) + "\n";
  auto tuning = TuningFindings(settings);
  findings.insert(findings.end(), tuning.begin(), tuning.end());
  return settings;
}

// Every check but the tuning ones, in the order the report lists them.
std::vector<Finding> RunChecks(const Config& config, const FileSystem& fs,
                               const DiscoveryOutcome& binaries,
                               const std::optional<Settings>& settings) {
  std::vector<Finding> findings{CheckBinaries(binaries)};
  const auto& chosen = binaries.report.chosen;
  if (auto cluster =
          CheckClusterVersion(fs, config.data_dir, chosen ? chosen->version : std::nullopt)) {
    findings.push_back(*cluster);
  }
  UserFacts user = GatherUserFacts(config);
  findings.push_back(CheckServiceUser(user));
  auto data_dir = CheckDataDir(fs, config.data_dir, ExpectedDataDirOwner(user));
  findings.insert(findings.end(), data_dir.begin(), data_dir.end());
  std::optional<uint64_t> need = settings ? SharedMemoryNeed(*settings) : std::nullopt;
  findings.push_back(CheckSharedMemory(kShmPath, StatFileSystemSpace(kShmPath), need));
  findings.push_back(
      CheckBackupRepository(fs, config.backup.repository, config.backup.compression));
  findings.push_back(CheckSocketPaths(config));
  return findings;
}

// The report on stdout, then each blocker on stderr (after the report, so a terminal shows
// the reasons last).
int PrintVerdict(const std::string& report, const std::vector<Finding>& findings) {
  std::cout << report << RenderFindings(findings) << "\n";
  int blockers = 0;
  for (const auto& f : findings) blockers += f.severity == Severity::kBlocker ? 1 : 0;
  if (blockers == 0) {
    std::cout << "result: nothing blocks a start" << std::endl;
    return kExitOk;
  }
  std::cout << "result: " << blockers << (blockers == 1 ? " problem blocks" : " problems block")
            << " a start" << std::endl;
  for (const auto& f : findings) {
    if (f.severity == Severity::kBlocker) {
      std::cerr << "skydb doctor: " << f.topic << ": " << f.message << "\n";
    }
  }
  return kExitFailure;
}

int RunDoctor(const CommandContext& ctx) {
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  auto options = DiscoveryOptionsFromConfig(config->postgres, EnvOr("SKY_POSTGRES_BIN", ""),
                                            EnvOr("PATH", kDefaultPath));
  if (!options.ok()) {
    std::cerr << "skydb: " << options.error().message << "\n";
    return kExitUsage;
  }
  options->examine_all = true;  // doctor explains every candidate, not just the winner
  FileSystem* fs = ctx.env.fs;
  // Doctor verifies a bundle but never writes into the data directory.
  auto bundle = BundleSlotFor(config->postgres.bundle, config->data_dir, *fs, /*out=*/nullptr);
  if (!bundle.ok()) {
    std::cerr << "skydb doctor: bundle: " << bundle.error().message << "\n";
    return kExitFailure;
  }
  options->bundle = bundle->get();
  ProcessRunner* runner = ctx.env.runner;
  std::string report;
  std::vector<Finding> findings;
  std::optional<Settings> settings = HostAndTuning(*config, *fs, report, findings);
  DiscoveryOutcome binaries = ExamineBinaries(*options, *fs, *runner);
  report += RenderDiscovery(binaries) + "\n";
  auto checks = RunChecks(*config, *fs, binaries, settings);
  findings.insert(findings.begin(), checks.begin(), checks.end());
  return PrintVerdict(report, findings);
}

}  // namespace

void AddDoctorCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<DoctorFlags>();
  CLI::App* cmd = app.add_subcommand(
      "doctor", "check whether skydb can start here: host, tuning, binaries, user, data dir");
  cmd->add_option("--data-dir", flags->data_dir, "data directory to check (config data_dir)");
  cmd->add_option("--user", flags->user, "service user the cluster runs as (config run_as_user)");
  cmd->callback([&ctx, flags] {
    if (!flags->data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags->data_dir);
    if (!flags->user.empty()) ctx.flag_values.emplace_back("run_as_user", flags->user);
    ctx.exit_code = RunDoctor(ctx);
  });
}

}  // namespace skydb::cli
