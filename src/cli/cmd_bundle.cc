// `skydb bundle stage|verify|list`: provisioning a relocatable PostgreSQL (docs/bundles.md).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "base/strings.h"
#include "cli/command.h"
#include "skydb/bundle.h"
#include "skydb/data_dir_layout.h"

namespace skydb::cli {
namespace {

struct StageFlags {
  std::string from;
  std::string out;
  int level = 12;
};

std::string MiB(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

std::string Summary(const BundleManifest& m) {
  return "PostgreSQL " + m.pg_version + " " + m.arch + ", glibc >= " + m.glibc_baseline + ", " +
         std::to_string(m.files.size()) + " files, " + MiB(m.total_size) + " uncompressed";
}

// One self-overwriting status line on a terminal; nothing when stderr is not one.
std::function<void(const StageProgress&)> TerminalProgress() {
  if (::isatty(STDERR_FILENO) == 0) return nullptr;
  return [](const StageProgress& p) {
    std::fprintf(stderr, "\r%-8s %zu/%zu", p.phase.c_str(), p.done, p.total);
    if (p.done == p.total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

int RunStage(const CommandContext& ctx, const StageFlags& flags) {
  StageOptions options;
  options.from = flags.from;
  options.out = flags.out;
  options.zstd_level = flags.level;
  options.progress = TerminalProgress();
  std::vector<std::string> left_out;
  options.left_out = &left_out;
  Env& env = ctx.env;
  auto manifest = StageBundle(options, *env.fs, *env.bundle_output, *env.runner);
  if (!manifest.ok()) {
    std::cerr << "skydb bundle stage: " << manifest.error().message << "\n";
    return kExitFailure;
  }
  if (!left_out.empty()) {
    std::cerr << "skydb bundle stage: left out " << left_out.size()
              << " modules whose libraries this host lacks (they could not load here either): "
              << Join(left_out, ", ") << "\n";
  }
  auto archive = BundleArchive::FromFile(*env.fs, flags.out);
  std::cout << "staged " << flags.out << ": " << Summary(*manifest);
  if (archive.ok()) {
    std::cout << ", " << MiB(archive->bytes().size()) << " compressed, sha256 "
              << archive->Sha256();
  }
  std::cout << std::endl;
  return kExitOk;
}

int RunVerify(const CommandContext& ctx, const std::string& file) {
  auto archive = BundleArchive::FromFile(*ctx.env.fs, file);
  Result<BundleManifest> manifest =
      archive.ok() ? VerifyBundle(*archive) : Result<BundleManifest>(archive.error());
  if (!manifest.ok()) {
    std::cerr << "skydb bundle verify: " << manifest.error().message << "\n";
    return kExitFailure;
  }
  std::cout << file << ": ok, every file matches its manifest: " << Summary(*manifest)
            << ", sha256 " << archive->Sha256() << std::endl;
  return kExitOk;
}

void ListOne(const std::string& label, const Result<BundleArchive>& archive) {
  if (!archive.ok()) {
    std::cout << label << ": " << archive.error().message << "\n";
    return;
  }
  auto manifest = ReadBundleManifest(*archive);
  if (!manifest.ok()) {
    std::cout << label << ": unreadable: " << manifest.error().message << "\n";
    return;
  }
  std::cout << label << ": " << Summary(*manifest) << ", " << MiB(archive->bytes().size())
            << " compressed, extracts to runtime/" << ExtractionName(*manifest, archive->Sha256())
            << "\n";
}

int RunList(const CommandContext& ctx) {
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  FileSystem* fs = ctx.env.fs;
  auto embedded = EmbeddedBundle();
  if (embedded.empty()) {
    std::cout << "embedded: none (built without -DSKYDB_EMBED_BUNDLE)\n";
  } else {
    ListOne("embedded", BundleArchive::Embedded(embedded));
  }
  if (config->postgres.bundle.empty()) {
    std::cout << "configured (postgres.bundle): none\n";
  } else {
    ListOne("configured (postgres.bundle) " + config->postgres.bundle,
            BundleArchive::FromFile(*fs, config->postgres.bundle));
  }
  std::string runtime = DataDirLayout::For(config->data_dir).runtime;
  auto entries = fs->ListDir(runtime);
  std::cout << "extracted under " << runtime << ":";
  int shown = 0;
  if (entries.ok()) {
    for (const auto& e : *entries) {
      if (e.empty() || e[0] == '.') continue;
      std::cout << "\n  " << e;
      ++shown;
    }
  }
  std::cout << (shown == 0 ? " none" : "") << std::endl;
  return kExitOk;
}

// Extracts the bundle serve would use (configured, else embedded) ahead of time, e.g. from a
// package's install script, so the first start does not pay for it.
int RunExtract(const CommandContext& ctx) {
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  FileSystem* fs = ctx.env.fs;
  auto abs = fs->RealPath(config->data_dir);
  std::string runtime = DataDirLayout::For(abs.ok() ? *abs : config->data_dir).runtime;
  Result<BundleArchive> archive =
      Error::NotFound("no bundle: this skydb has none embedded and postgres.bundle is not set");
  if (!config->postgres.bundle.empty()) {
    archive = BundleArchive::FromFile(*fs, config->postgres.bundle);
  } else if (!EmbeddedBundle().empty()) {
    archive = BundleArchive::Embedded(EmbeddedBundle());
  }
  auto done = archive.ok() ? ExtractBundle(*archive, runtime, *ctx.env.bundle_output, *fs)
                           : Result<Extraction>(archive.error());
  if (!done.ok()) {
    std::cerr << "skydb bundle extract: " << done.error().message << "\n";
    return kExitFailure;
  }
  std::cout << (done->extracted ? "extracted into " : "reused the verified extraction ")
            << done->dir << std::endl;
  return kExitOk;
}

// A subcommand whose one option, --data-dir, sets the data_dir config key.
void AddDataDirSubcommand(CLI::App& parent, CommandContext& ctx, const char* name, const char* help,
                          int (*run)(const CommandContext&)) {
  auto data_dir = std::make_shared<std::string>();
  CLI::App* cmd = parent.add_subcommand(name, help);
  cmd->add_option("--data-dir", *data_dir, "data directory (config data_dir)");
  cmd->callback([&ctx, data_dir, run] {
    if (!data_dir->empty()) ctx.flag_values.emplace_back("data_dir", *data_dir);
    ctx.exit_code = run(ctx);
  });
}

}  // namespace

void AddBundleCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* bundle = app.add_subcommand("bundle", "stage, verify and list PostgreSQL bundles");
  bundle->require_subcommand(1);

  auto stage_flags = std::make_shared<StageFlags>();
  CLI::App* stage = bundle->add_subcommand(
      "stage", "copy a PostgreSQL installation and its libraries into one relocatable archive");
  stage
      ->add_option("--from", stage_flags->from,
                   "installation directory holding bin/postgres, e.g. /usr/lib/postgresql/15")
      ->required();
  stage->add_option("--out", stage_flags->out, "archive to write, e.g. pg15.skydb-bundle")
      ->required();
  stage->add_option("--zstd-level", stage_flags->level, "zstd compression level (1-19)")
      ->check(CLI::Range(1, 19));
  stage->callback([&ctx, stage_flags] { ctx.exit_code = RunStage(ctx, *stage_flags); });

  auto file = std::make_shared<std::string>();
  CLI::App* verify =
      bundle->add_subcommand("verify", "check a bundle's manifest and every file's SHA-256");
  verify->add_option("FILE", *file, "bundle archive")->required();
  verify->callback([&ctx, file] { ctx.exit_code = RunVerify(ctx, *file); });

  AddDataDirSubcommand(
      *bundle, ctx, "list",
      "show the embedded and configured bundles and what is extracted under DIR/runtime", RunList);
  AddDataDirSubcommand(*bundle, ctx, "extract",
                       "verify and extract the bundle serve would use into DIR/runtime now",
                       RunExtract);
}

}  // namespace skydb::cli
