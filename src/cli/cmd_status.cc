// `skydb status [--data-dir DIR] [--json]`: is a daemon running on DIR, and what is it doing.
// Exit status: 0 running, 3 not running (as LSB init scripts report it), 1 unreadable state.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "cli/command.h"
#include "cli/published_env.h"
#include "skydb/app_env.h"
#include "skydb/env.h"
#include "skydb/status_file.h"
#include "skydb/supervisor.h"
#include "supervisor/data_dir.h"

namespace skydb::cli {
namespace {

constexpr int kExitNotRunning = 3;

struct StatusFlags {
  std::string data_dir;
  bool json = false;
};

// `now` and `since` in seconds since the epoch.
std::string Uptime(int64_t since, int64_t now) {
  if (since <= 0) return "-";
  int64_t s = now - since;
  if (s < 0) s = 0;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", static_cast<long long>(s / 3600),
                static_cast<long long>((s / 60) % 60), static_cast<long long>(s % 60));
  return buf;
}

// The store socket and the app's database (skydb/app_env.h): what the running daemon published,
// else what the configuration says.
struct AppLines {
  std::string store_socket;
  std::string database_url;  // passwords redacted; "" for a memory-only store
};

AppLines AppLinesFor(const FileSystem& fs, Config config, const std::string& dir) {
  config.data_dir = dir;
  AppLines lines;
  std::optional<AppEnvironment> contract = PublishedEnvironment(fs, dir);
  if (!contract) {
    if (auto configured = AppEnvironmentFor(config); configured.ok()) contract = *configured;
  }
  if (!contract) return lines;
  if (const std::string* socket = contract->Find("SKY_LIVE_STORE_PATH"))
    lines.store_socket = *socket;
  if (const std::string* url = contract->Find("DATABASE_URL")) {
    lines.database_url = RedactedDatabaseUrl(*url);
  }
  return lines;
}

void PrintText(const std::string& dir, const LockProbe& lock,
               const std::optional<supervisor::StatusRecord>& r, const AppLines& app, int64_t now) {
  if (!lock.held) {
    std::printf("skydb: not running on %s\n", dir.c_str());
    if (r)
      std::printf("last state: %s%s%s\n", r->state.c_str(), r->error.empty() ? "" : ": ",
                  r->error.c_str());
    return;
  }
  std::printf("skydb: running (pid %d, up %s)\n", static_cast<int>(lock.holder),
              r ? Uptime(r->started_at, now).c_str() : "-");
  std::printf("store socket: %s\n", app.store_socket.c_str());
  if (!app.database_url.empty()) std::printf("app database: %s\n", app.database_url.c_str());
  if (!r) return;
  std::printf("PostgreSQL: %s", r->state.c_str());
  if (r->postgres_pid != 0) std::printf(" (pid %d)", static_cast<int>(r->postgres_pid));
  std::printf(", version %s, up %s, restarts %d\n",
              r->server_version.empty() ? "-" : r->server_version.c_str(),
              Uptime(r->ready_since, now).c_str(), r->restarts);
  if (!r->last_exit.empty()) std::printf("last unexpected exit: %s\n", r->last_exit.c_str());
  std::printf("socket: %s/.s.PGSQL.%d\n", r->socket_dir.c_str(), r->port);
  std::printf("data dir: %s\n", r->data_dir.c_str());
}

void PrintJson(const std::string& dir, const LockProbe& lock,
               const std::optional<supervisor::StatusRecord>& r, const AppLines& app, int64_t now) {
  nlohmann::json j =
      r ? nlohmann::json::parse(supervisor::RenderStatusJson(*r)) : nlohmann::json::object();
  if (!lock.held) {
    // What the file says is history: the daemon that wrote it is gone.
    if (j.contains("state")) j["last_state"] = j["state"];
    j["state"] = "not running";
    j["postgres_pid"] = 0;
  }
  j["running"] = lock.held;
  j["lock_holder_pid"] = lock.holder;
  j["data_dir"] = JsonBytes<nlohmann::json>(dir);  // as the status file writes it
  j["store_socket"] = JsonBytes<nlohmann::json>(app.store_socket);
  j["app_database_url"] =
      app.database_url.empty() ? nlohmann::json(nullptr) : nlohmann::json(app.database_url);
  if (r && lock.held && r->started_at > 0) {
    j["uptime_seconds"] = now - r->started_at;
  }
  std::printf("%s\n", JsonText(j, 2).c_str());
}

int RunStatus(CommandContext& ctx, const StatusFlags& flags) {
  if (!flags.data_dir.empty()) ctx.flag_values.emplace_back("data_dir", flags.data_dir);
  auto config = ctx.LoadConfigOrPrint();
  if (!config) return kExitUsage;
  FileSystem* fs = ctx.env.fs;
  auto abs = fs->RealPath(config->data_dir);
  auto layout = supervisor::DataDirLayout::For(abs.ok() ? *abs : config->data_dir);
  auto lock = ProbeDirLock(layout.lock_file);
  if (!lock.ok()) {
    std::fprintf(stderr, "skydb: %s\n", lock.error().message.c_str());
    return kExitFailure;
  }
  std::optional<supervisor::StatusRecord> record;
  if (auto text = fs->ReadFile(layout.status_file); text.ok()) {
    if (auto parsed = supervisor::ParseStatusJson(*text); parsed.ok()) record = *parsed;
  }
  AppLines app = AppLinesFor(*fs, *config, layout.root);
  const int64_t now = std::chrono::system_clock::to_time_t(ctx.env.clock->WallNow());
  if (flags.json) {
    PrintJson(layout.root, *lock, record, app, now);
  } else {
    PrintText(layout.root, *lock, record, app, now);
  }
  return lock->held ? kExitOk : kExitNotRunning;
}

}  // namespace

void AddStatusCommand(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd =
      app.add_subcommand("status",
                         "is a daemon running on the data directory, and what is it doing (exit 0 "
                         "running, 3 not running)");
  cmd->add_option("--data-dir", flags->data_dir, "data directory (config data_dir)");
  cmd->add_flag("--json", flags->json, "print JSON");
  cmd->callback([&ctx, flags] { ctx.exit_code = RunStatus(ctx, *flags); });
}

}  // namespace skydb::cli
