// `skydb tune`: prints the derived settings and how each was derived, for this host or a
// hypothetical one (--ram/--cores), as a table, JSON or postgresql.conf lines.
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "skydb/env.h"
#include "skydb/tune.h"

namespace skydb::cli {
namespace {

struct TuneFlags {
  std::string ram;    // host.ram, e.g. "2GiB"; empty = from config or detected
  std::string cores;  // host.cores; empty = from config or detected
  std::string profile = "embedded";
  std::string format = "text";
};

enum class TuneFormat { kText, kJson, kConf };

Result<TuneFormat> ParseTuneFormat(const std::string& name) {
  if (name == "text") return TuneFormat::kText;
  if (name == "json") return TuneFormat::kJson;
  if (name == "conf") return TuneFormat::kConf;
  return Error::InvalidArgument("unknown format '" + name + "': expected text, json or conf");
}

// Both sizes given on the command line: a hypothetical host, so nothing of the real one
// (its topology, its cgroups) leaks into the answer.
HostFacts HypotheticalHost(const HostConfig& host) {
  HostFacts facts;
  facts.ram_bytes = host.ram_bytes;
  facts.ram_source = "config";
  facts.cores = host.cores;
  facts.cores_source = "config";
  return facts;
}

Result<HostFacts> HostFor(const Env& env, const TuneFlags& flags, const Config& config) {
  if (!flags.ram.empty() && !flags.cores.empty()) return HypotheticalHost(config.host);
  return ReadHostFacts(*env.fs, SchedAffinityCpuCount(), config.host);
}

std::string Render(TuneFormat format, const HostFacts& host, const Settings& settings) {
  switch (format) {
    case TuneFormat::kText:
      return RenderText(host, settings);
    case TuneFormat::kJson:
      return RenderJson(host, settings);
    case TuneFormat::kConf:
      return RenderConf(settings);
  }
  return "";
}

int UsageError(const Error& error) { return ExitUsage(error.message); }

int RunTune(CommandContext& ctx, const TuneFlags& flags) {
  auto profile = ParseProfile(flags.profile);
  if (!profile.ok()) return UsageError(std::move(profile).error().Within("--profile"));
  auto format = ParseTuneFormat(flags.format);
  if (!format.ok()) return UsageError(std::move(format).error().Within("--format"));
  // --ram/--cores are the config keys host.ram/host.cores, so config validates them.
  if (!flags.ram.empty()) ctx.flag_values.emplace_back("host.ram", flags.ram);
  if (!flags.cores.empty()) ctx.flag_values.emplace_back("host.cores", flags.cores);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  auto host = HostFor(ctx.env, flags, *config);
  if (!host.ok()) {
    std::cerr << "skydb: " << host.error().message << "\n";
    return kExitFailure;
  }
  Settings settings = Tune(*host, *profile, config->postgres.settings, AppPool(*config));
  std::cout << Render(*format, *host, settings);
  return kExitOk;
}

}  // namespace

void AddTuneCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<TuneFlags>();
  auto* cmd = app.add_subcommand(
      "tune",
      "print the derived PostgreSQL settings and how each was derived, for this host "
      "or a hypothetical one");
  cmd->add_option("--ram", flags->ram, "assume this much RAM, e.g. 2GiB (config host.ram)");
  cmd->add_option("--cores", flags->cores, "assume this many cores (config host.cores)");
  cmd->add_option("--profile", flags->profile, "embedded (production) or dev")
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "text, json or conf (postgresql.conf lines)")
      ->capture_default_str();
  cmd->callback([&ctx, flags] { ctx.exit_code = RunTune(ctx, *flags); });
}

}  // namespace skydb::cli
