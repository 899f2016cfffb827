// Preparing DIR before the first start: lock, modes and ownership, initdb, leftover postmaster,
// the configuration files.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <tuple>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "supervisor/conf_render.h"
#include "supervisor/postmaster_pid.h"
#include "supervisor/supervisor_impl.h"

namespace skydb::supervisor {
namespace {

constexpr auto kInitdbTimeout = std::chrono::minutes(5);
constexpr auto kConfigCheckTimeout = std::chrono::seconds(30);
constexpr size_t kInitdbErrorTail = 600;  // bytes of initdb's stderr quoted in an error

std::string Tail(const std::string& text, size_t n) {
  std::string t(Trim(text));
  return t.size() <= n ? t : "..." + t.substr(t.size() - n);
}

}  // namespace

Status SupervisorImpl::Prepare() {
  SKYDB_RETURN_IF_ERROR(EnsureDataDir());
  SKYDB_RETURN_IF_ERROR(PrepareDirs(*env_.fs, *env_.host, layout_, options_.cluster_user,
                                    RunDirAccess{options_.shared_group}));
  WriteStatusFile();  // replaces what an earlier (perhaps killed) daemon left there
  SKYDB_RETURN_IF_ERROR(EnsureCluster());
  SKYDB_RETURN_IF_ERROR(WriteSettingsFiles());
  return WriteStartAccessFiles();
}

Status SupervisorImpl::EnsureDataDir() {
  SKYDB_RETURN_IF_ERROR(CheckReachable(*env_.fs, layout_.root, options_.cluster_user));
  // DIR itself must exist (and be safe, and skydb's) before anything goes into it.
  SKYDB_RETURN_IF_ERROR(
      PrepareRoot(*env_.fs, layout_.root, RunDirAccess{options_.shared_group}.root_mode()));
  // DIR/skydb.lock is the daemon lifecycle's (src/daemon/lifecycle.cc): it holds the lock
  // for every database source, from before this runs until after PostgreSQL has stopped.
  return Ok();
}

Status SupervisorImpl::EnsureCluster() {
  SKYDB_ASSIGN_OR_RETURN(
      PgdataState state,
      InspectPgdata(*env_.fs, layout_.pgdata, options_.binaries_major, options_.binaries_version));
  if (state == PgdataState::kCluster) return StopLeftover();
  if (state == PgdataState::kAbsent) {
    SKYDB_RETURN_IF_ERROR(env_.fs->MakeDir(layout_.pgdata, 0700));
  }
  if (options_.cluster_user.drop_privileges) {
    const RunAs& u = options_.cluster_user.user;
    SKYDB_RETURN_IF_ERROR(env_.host->Chown(layout_.pgdata, u.uid, u.gid));
  }
  return RunInitdb();
}

Status SupervisorImpl::RunInitdb() {
  const std::string& user = options_.cluster_user.user.name;
  spdlog::info("initializing a new PostgreSQL cluster in {} (owner {})", layout_.pgdata, user);
  CommandSpec spec = InitdbCommand(options_.bin_dir, layout_.pgdata, user);
  if (!options_.sync_initdb) spec.argv.push_back("--no-sync");
  if (options_.cluster_user.drop_privileges) spec.run_as = options_.cluster_user.user;
  spec.working_dir = layout_.root;
  spec.timeout = kInitdbTimeout;
  SKYDB_ASSIGN_OR_RETURN(CommandOutput out, env_.runner->Run(spec));
  if (out.exit_code != 0) {
    return Error::Io("initdb failed for " + layout_.pgdata + " (" +
                     ExitStatus{out.exit_code, out.term_signal}.Describe() +
                     "): " + Tail(out.err, kInitdbErrorTail));
  }
  return Ok();
}

Status SupervisorImpl::StopLeftover() {
  LeftoverCheck check = IdentifyLeftover(*env_.fs, *env_.host, layout_.pgdata);
  switch (check.verdict) {
    case LeftoverVerdict::kNone:
      return Ok();
    case LeftoverVerdict::kNotOurs:
      return MovePidFileAside(check);
    case LeftoverVerdict::kStale:
      spdlog::info("postmaster.pid names pid {}: stale ({}); PostgreSQL will replace it", check.pid,
                   check.reason);
      return Ok();
    case LeftoverVerdict::kUnknown:
      spdlog::warn(
          "postmaster.pid names pid {}, which runs, and skydb cannot tell whether it is "
          "a postmaster of {} ({}); leaving the file for PostgreSQL to judge",
          check.pid, layout_.pgdata, check.reason);
      return Ok();
    case LeftoverVerdict::kOurs:
      return StopOurLeftover(check);
  }
  return Ok();
}

Status SupervisorImpl::StopOurLeftover(const LeftoverCheck& check) {
  spdlog::warn(
      "a postmaster (pid {}) left over from an earlier skydb still runs on {}; "
      "fast-stopping it before starting",
      check.pid, layout_.pgdata);
  (void)env_.host->Kill(check.pid, SIGINT);
  if (WaitForPidGone(check.pid, options_.timing.stop_timeout).ok()) return Ok();
  spdlog::warn("leftover postmaster {} did not stop within {}; sending SIGQUIT", check.pid,
               FormatDuration(options_.timing.stop_timeout));
  (void)env_.host->Kill(check.pid, SIGQUIT);
  if (WaitForPidGone(check.pid, options_.timing.stop_timeout).ok()) return Ok();
  return Error::Conflict("a postmaster (pid " + std::to_string(check.pid) +
                         ") left over from an earlier skydb still runs on " + layout_.pgdata +
                         " after SIGINT and SIGQUIT; stop it, then start skydb again");
}

Status SupervisorImpl::MovePidFileAside(const LeftoverCheck& check) {
  // PostgreSQL refuses to start ("lock file already exists") while a process of its user has the
  // pid the file names, even one that provably is not a postmaster; the file is kept, renamed.
  int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(env_.clock->WallNow().time_since_epoch())
          .count();
  std::string from = layout_.pgdata + "/postmaster.pid";
  std::string to = from + ".stale-" + std::to_string(now);
  SKYDB_RETURN_IF_ERROR(env_.fs->Rename(from, to));
  spdlog::warn(
      "postmaster.pid names pid {}, which runs but is no postmaster of {} ({}); moved "
      "the file to {} so that PostgreSQL can start",
      check.pid, layout_.pgdata, check.reason, to);
  return Ok();
}

Status SupervisorImpl::WaitForPidGone(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = env_.clock->Now() + timeout;
  while (env_.host->ProcessExists(pid)) {
    if (env_.clock->Now() >= deadline) return Error::Timeout("pid still running");
    env_.clock->SleepFor(options_.tick);
  }
  return Ok();
}

Status SupervisorImpl::WriteSettingsFiles() {
  const std::string& pgdata = layout_.pgdata;
  TcpListen tcp{options_.tcp_bind};
  if (!tcp.bind.empty()) SKYDB_RETURN_IF_ERROR(CopyTlsFiles(tcp));
  SKYDB_RETURN_IF_ERROR(WriteOwnedFile(
      pgdata + "/" + kSkydbConfName,
      RenderSkydbConf(options_.settings_conf, layout_.run, options_.port, options_.binaries_major,
                      options_.shared_group ? options_.shared_group->name : "", tcp)));
  SKYDB_ASSIGN_OR_RETURN(std::string conf, env_.fs->ReadFile(pgdata + "/postgresql.conf"));
  if (auto with_include = WithIncludeLine(conf)) {
    SKYDB_RETURN_IF_ERROR(WriteOwnedFile(pgdata + "/postgresql.conf", *with_include));
  }
  return Ok();
}

// PostgreSQL wants its key owned by its own user, 0600: a copy of each file in pgdata, made again
// at every start and reload (PostgreSQL reloads them on SIGHUP). Both are read before either is
// written, so a file that cannot be read leaves the last pair whole.
Status SupervisorImpl::CopyTlsFiles(const TcpListen& tcp) {
  std::vector<std::pair<std::string, std::string>> copies;
  for (const auto& [from, to, key] :
       {std::tuple{options_.tls_cert_file, tcp.cert_file, "tls.cert_file"},
        std::tuple{options_.tls_key_file, tcp.key_file, "tls.key_file"}}) {
    auto pem = env_.fs->ReadFile(from);
    if (!pem.ok()) {
      return Error::InvalidArgument(std::string(key) + " " + from +
                                    " (for postgres.tcp_bind): " + pem.error().message);
    }
    copies.emplace_back(layout_.pgdata + "/" + to, std::move(*pem));
  }
  for (const auto& [path, pem] : copies) SKYDB_RETURN_IF_ERROR(WriteOwnedFile(path, pem));
  return Ok();
}

Status SupervisorImpl::WriteStartAccessFiles() {
  // Before the server runs, only the configured app is known; once it answers, the apps of
  // skydb's registry join it (Migrate → PgProbe::SyncAccess).
  const AppDatabase& app = options_.app;
  AccessApp configured{app.role, app.database, !app.password.empty(), app.os_users};
  AccessFiles files = RenderAccessFiles(
      {options_.cluster_user.user.name, {configured}, !options_.tcp_bind.empty()});
  SKYDB_RETURN_IF_ERROR(WriteOwnedFile(layout_.pgdata + "/pg_hba.conf", files.hba));
  return WriteOwnedFile(layout_.pgdata + "/pg_ident.conf", files.ident);
}

Status SupervisorImpl::CheckConfigFiles() {
  // `postgres -C` reads postgresql.conf and its includes as a starting postmaster does and exits
  // non-zero, naming each bad line, on any error; it may run beside the live server. (The
  // pg_file_settings view cannot serve: it reports a valid setting that needs a restart with the
  // same "setting could not be applied" as an invalid one.)
  CommandSpec spec;
  spec.argv = {options_.bin_dir + "/postgres", "-D", layout_.pgdata, "-C", "data_directory"};
  spec.env["NOTIFY_SOCKET"] = std::nullopt;
  if (options_.cluster_user.drop_privileges) spec.run_as = options_.cluster_user.user;
  spec.working_dir = layout_.pgdata;
  spec.timeout = kConfigCheckTimeout;
  auto out = env_.runner->Run(spec);
  if (!out.ok()) {
    return std::move(out).error().Within("PostgreSQL's check of the new settings did not run");
  }
  if (out->exit_code == 0) return Ok();
  return Error::InvalidArgument("PostgreSQL rejects the new settings (" +
                                ExitStatus{out->exit_code, out->term_signal}.Describe() +
                                "): " + Tail(ConfigCheckReasons(out->err), kInitdbErrorTail));
}

Status SupervisorImpl::WriteOwnedFile(const std::string& path, const std::string& contents) {
  SKYDB_RETURN_IF_ERROR(env_.fs->WriteFileAtomic(path, contents, 0600));
  if (!options_.cluster_user.drop_privileges) return Ok();
  const RunAs& u = options_.cluster_user.user;
  return env_.host->Chown(path, u.uid, u.gid);
}

}  // namespace skydb::supervisor
