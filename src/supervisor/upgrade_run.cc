// `skydb upgrade`: builds the new major's cluster in DIR/upgrade/new, checks it, exchanges it
// with DIR/pgdata, checks it there, re-keys the backup repository; undoes everything on a
// failure (skydb/upgrade.h).
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <optional>

#include "base/strings.h"
#include "pgconn/pgconn.h"
#include "skydb/backup.h"
#include "skydb/upgrade.h"
#include "supervisor/data_dir.h"
#include "supervisor/upgrade_steps.h"

namespace skydb {
namespace {

constexpr int kPort = 5432;  // only names the socket file in DIR/upgrade/run
constexpr auto kLongStep = std::chrono::hours(12);
// Settings of every server the upgrade starts: reachable on its own socket only, archiving off
// (the old cluster's archive belongs to it; the new one starts its own at the first real start).
const char* const kCommonSettings = "-c listen_addresses='' -c archive_mode=off -c autovacuum=off";
// The old cluster is only read.
const char* const kOldSettings = "-c default_transaction_read_only=on";
// The new cluster is filled from scratch and synced to disk at the end (initdb --sync-only), so
// a crash while restoring loses nothing that matters: the old cluster is still in place.
const char* const kNewSettings =
    "-c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_wal_size=4GB";

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string Mib(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

class Upgrader {
 public:
  Upgrader(const UpgradeOptions& o, Env& env, const UpgradeOs& os)
      : o_(o), env_(env), os_(os), layout_(supervisor::DataDirLayout::For(o.data_dir)) {
    work_ = layout_.root + "/upgrade";
    new_ = work_ + "/new";
    run_ = DataDirLayout::For(work_).run;  // the temporary cluster's sockets
    dump_ = work_ + "/dump";
    old_kept_ = work_ + "/old-" + std::to_string(o.plan.old_bin.version.major);
  }

  Status Run();

 private:
  void Step(const std::string& what) {
    ++step_;
    if (o_.progress) o_.progress("[" + std::to_string(step_) + "] " + what);
  }
  Result<CommandOutput> Tool(const std::vector<std::string>& argv,
                             std::chrono::milliseconds timeout = kLongStep);
  Status ToolOk(const std::string& what, const std::vector<std::string>& argv);
  Status Prepare();
  Status StartServer(const UpgradeBinaries& bin, const std::string& pgdata,
                     const std::string& settings, const std::string& log);
  Status StopServer(const UpgradeBinaries& bin, const std::string& pgdata);
  std::string ConnInfo(const std::string& db) const {
    return pg::UnixSocketConnInfo(run_, kPort, o_.superuser, db, "skydb upgrade");
  }
  Result<std::vector<std::string>> Databases();
  Result<RowCounts> CountRows(const std::vector<std::string>& databases);
  Status CheckExtensions(const std::vector<std::string>& databases);
  Status Initdb();
  Status Dump(const std::vector<std::string>& databases);
  Status Restore(const std::vector<std::string>& databases);
  Status PgUpgrade(bool check_only);
  Status CheckNew(const std::string& pgdata, const std::string& where);
  Status Switch();
  Status MoveBackups();
  Status Build();
  Status Fail(Status failed);

  const UpgradeOptions& o_;
  Env& env_;
  const UpgradeOs& os_;
  supervisor::DataDirLayout layout_;
  std::string work_, new_, run_, dump_, old_kept_;
  int step_ = 0;
  RowCounts before_;
  std::vector<std::string> roles_before_;
  // What must be undone on failure.
  std::optional<std::pair<UpgradeBinaries, std::string>> running_;  // a server we started
  bool switched_ = false;
  std::string moved_backups_;  // REPO/pre-upgrade-…, once the old backups moved there
};

Result<CommandOutput> Upgrader::Tool(const std::vector<std::string>& argv,
                                     std::chrono::milliseconds timeout) {
  CommandSpec spec;
  spec.argv = argv;
  spec.env["NOTIFY_SOCKET"] = std::nullopt;
  spec.env["PGCONNECT_TIMEOUT"] = "30";
  spec.working_dir = work_;
  spec.timeout = timeout;
  return env_.runner->Run(spec);
}

Status Upgrader::ToolOk(const std::string& what, const std::vector<std::string>& argv) {
  auto ran = Tool(argv);
  if (!ran.ok()) return std::move(ran).error().Within(what);
  if (ran->exit_code == 0) return Ok();
  std::string text(Trim(ran->err.empty() ? ran->out : ran->err));
  if (text.size() > 800) text = "..." + text.substr(text.size() - 800);
  return Error::Io(what + " failed (" + ExitStatus{ran->exit_code, ran->term_signal}.Describe() +
                   "): " + text);
}

Status Upgrader::Prepare() {
  SKYDB_ASSIGN_OR_RETURN(std::string control,
                         env_.fs->ReadFile(layout_.pgdata + "/global/pg_control"));
  SKYDB_ASSIGN_OR_RETURN(ControlState state, ParseControlFile(control));
  if (!state.CleanlyShutDown()) {
    return Error::Conflict(layout_.pgdata + " was not shut down cleanly (pg_control state " +
                           std::to_string(state.state) +
                           "); start skydb on it once with its PostgreSQL " +
                           std::to_string(o_.plan.old_bin.version.major) +
                           " binaries and stop it, so that PostgreSQL recovers it, then upgrade");
  }
  SKYDB_RETURN_IF_ERROR(CheckNoKeptCluster(*env_.fs, layout_.root));
  // What an interrupted attempt left: never part of DIR/pgdata.
  if (env_.fs->Exists(work_)) SKYDB_RETURN_IF_ERROR(os_.remove_tree(work_));
  uint64_t size = os_.tree_bytes(layout_.pgdata);
  SKYDB_ASSIGN_OR_RETURN(uint64_t free, os_.free_bytes(layout_.root));
  bool shares_files = o_.plan.method == UpgradeMethod::kPgUpgrade &&
                      (o_.plan.transfer == UpgradeTransfer::kLink || os_.can_clone(layout_.root));
  // The new cluster, and for a dump the dump beside it; 10% slack.
  uint64_t need = shares_files
                      ? (64u << 20)
                      : size + size / 10 + (o_.plan.method == UpgradeMethod::kDump ? size / 2 : 0);
  if (free < need) {
    return Error::Unavailable("the upgrade needs about " + Mib(need) + " free in " + layout_.root +
                              " and there are " + Mib(free) + "; free space there" +
                              (o_.plan.method == UpgradeMethod::kPgUpgrade
                                   ? std::string(", or use --link")
                                   : std::string("")));
  }
  for (const auto& dir : {work_, run_, dump_}) SKYDB_RETURN_IF_ERROR(env_.fs->MakeDir(dir, 0700));
  return Ok();
}

Status Upgrader::StartServer(const UpgradeBinaries& bin, const std::string& pgdata,
                             const std::string& settings, const std::string& log) {
  std::string options = std::string(kCommonSettings) + " -c port=" + std::to_string(kPort) +
                        " -c unix_socket_directories=" + Quote(run_) + " " + settings;
  running_ = std::make_pair(bin, pgdata);
  Status started = ToolOk(
      "starting PostgreSQL " + bin.version.text + " on " + pgdata,
      {bin.dir + "/pg_ctl", "start", "-w", "-t", "600", "-D", pgdata, "-l", log, "-o", options});
  if (!started.ok()) {
    auto tail = env_.fs->ReadFile(log);
    std::string reason = started.error().message;
    if (tail.ok()) {
      std::string text(Trim(*tail));
      if (text.size() > 600) text = "..." + text.substr(text.size() - 600);
      reason += "; its log: " + text;
    }
    return Error::Io(reason);
  }
  return Ok();
}

Status Upgrader::StopServer(const UpgradeBinaries& bin, const std::string& pgdata) {
  Status stopped =
      ToolOk("stopping PostgreSQL on " + pgdata,
             {bin.dir + "/pg_ctl", "stop", "-w", "-t", "600", "-m", "fast", "-D", pgdata});
  if (stopped.ok()) running_.reset();
  return stopped;
}

Result<std::vector<std::string>> Upgrader::Databases() {
  SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(ConnInfo("postgres")));
  SKYDB_ASSIGN_OR_RETURN(
      auto rows,
      conn.Exec("SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate "
                "ORDER BY datname"));
  std::vector<std::string> names;
  for (int i = 0; i < rows.rows(); ++i) names.push_back(rows.Get(i, 0));
  return names;
}

Result<RowCounts> Upgrader::CountRows(const std::vector<std::string>& databases) {
  RowCounts counts;
  for (const auto& db : databases) {
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(ConnInfo(db)));
    SKYDB_ASSIGN_OR_RETURN(
        auto tables,
        conn.Exec("SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c "
                  "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND "
                  "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT "
                  "LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%' ORDER BY 1"));
    for (int i = 0; i < tables.rows(); ++i) {
      std::string table = tables.Get(i, 0);
      SKYDB_ASSIGN_OR_RETURN(auto n, conn.Exec("SELECT count(*) FROM " + table));
      counts[db + "." + table] = std::stoll(n.Get(0, 0));
    }
  }
  return counts;
}

// Every extension the old cluster uses must be installable into the new one, or the restore
// (or pg_upgrade) fails after minutes; say so now, naming what to install.
Status Upgrader::CheckExtensions(const std::vector<std::string>& databases) {
  for (const auto& db : databases) {
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(ConnInfo(db)));
    SKYDB_ASSIGN_OR_RETURN(auto rows, conn.Exec("SELECT extname FROM pg_extension ORDER BY 1"));
    for (int i = 0; i < rows.rows(); ++i) {
      std::string name = rows.Get(i, 0);
      auto found = upgrade::FindExtensionControl(*env_.fs, o_.plan.new_bin.dir, name);
      if (!found) continue;  // the share directory is not where skydb looks: PostgreSQL judges
      if (!found->empty()) continue;
      return Error::NotFound("the cluster uses the extension " + name + " (database " + db +
                             "), which PostgreSQL " + o_.plan.new_bin.version.text + " in " +
                             o_.plan.new_bin.dir + " does not have; " +
                             upgrade::ExtensionAdvice(name, o_.plan.new_bin.version.major));
    }
  }
  return Ok();
}

Status Upgrader::Initdb() {
  CommandSpec spec = supervisor::InitdbCommand(o_.plan.new_bin.dir, new_, o_.superuser);
  spec.working_dir = work_;
  SKYDB_ASSIGN_OR_RETURN(CommandOutput out, env_.runner->Run(spec));
  if (out.exit_code != 0) {
    return Error::Io("initdb of PostgreSQL " + o_.plan.new_bin.version.text + " failed (" +
                     ExitStatus{out.exit_code, out.term_signal}.Describe() +
                     "): " + std::string(Trim(out.err)));
  }
  return Ok();
}

Status Upgrader::Dump(const std::vector<std::string>& databases) {
  const std::string port = std::to_string(kPort);
  Step("dumping roles with " + o_.plan.pg_dumpall);
  SKYDB_RETURN_IF_ERROR(ToolOk("pg_dumpall --globals-only",
                               {o_.plan.pg_dumpall, "-h", run_, "-p", port, "-U", o_.superuser,
                                "--globals-only", "-f", dump_ + "/globals.sql"}));
  for (size_t i = 0; i < databases.size(); ++i) {
    Step("dumping database " + databases[i] + " with " + o_.plan.pg_dump);
    SKYDB_RETURN_IF_ERROR(ToolOk("pg_dump of database " + databases[i],
                                 // Without SET COMPRESSION: the new server may lack lz4 (migration
                                 // 124); the restored columns take its default method.
                                 {o_.plan.pg_dump, "-h", run_, "-p", port, "-U", o_.superuser,
                                  "-Fc", "-Z", "1", "--no-toast-compression", "-f",
                                  dump_ + "/" + std::to_string(i) + ".dump", "-d", databases[i]}));
  }
  return Ok();
}

Status Upgrader::Restore(const std::vector<std::string>& databases) {
  Step("restoring roles");
  SKYDB_ASSIGN_OR_RETURN(std::string globals, env_.fs->ReadFile(dump_ + "/globals.sql"));
  {
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(ConnInfo("postgres")));
    for (const auto& statement : GlobalsStatements(globals, o_.superuser)) {
      Status ran = conn.Run(statement);
      if (!ran.ok()) return std::move(ran).error().Within("restoring roles: " + statement);
    }
  }
  {
    // Every database, postgres (skydb's own: the sessions) included, is created by pg_restore
    // -C as it was; the new cluster's empty postgres makes way.
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(ConnInfo("template1")));
    SKYDB_RETURN_IF_ERROR(conn.Run("DROP DATABASE postgres"));
  }
  const std::string port = std::to_string(kPort);
  for (size_t i = 0; i < databases.size(); ++i) {
    Step("restoring database " + databases[i] + " with " + o_.plan.pg_restore + " (" +
         std::to_string(o_.jobs) + " jobs)");
    SKYDB_RETURN_IF_ERROR(
        ToolOk("restoring database " + databases[i],
               {o_.plan.pg_restore, "-h", run_, "-p", port, "-U", o_.superuser, "-d", "template1",
                "-C", "--exit-on-error", "-j", std::to_string(o_.jobs),
                dump_ + "/" + std::to_string(i) + ".dump"}));
  }
  return Ok();
}

Status Upgrader::PgUpgrade(bool check_only) {
  const UpgradePlan& p = o_.plan;
  std::vector<std::string> argv = {p.new_bin.dir + "/pg_upgrade",
                                   "-b",
                                   p.old_bin.dir,
                                   "-B",
                                   p.new_bin.dir,
                                   "-d",
                                   layout_.pgdata,
                                   "-D",
                                   new_,
                                   "-s",
                                   run_,
                                   "-p",
                                   "50432",
                                   "-P",
                                   "50433",
                                   "-U",
                                   o_.superuser,
                                   "-j",
                                   std::to_string(o_.jobs),
                                   "-o",
                                   "-c archive_mode=off",
                                   "-O",
                                   "-c archive_mode=off"};
  if (p.transfer == UpgradeTransfer::kLink) {
    argv.push_back("--link");
  } else if (os_.can_clone(layout_.root)) {
    argv.push_back("--clone");
  }
  if (check_only) argv.push_back("--check");
  return ToolOk(check_only ? "pg_upgrade --check" : "pg_upgrade", argv);
}

// The new cluster answers, and holds every table with the old one's row counts and the roles.
Status Upgrader::CheckNew(const std::string& pgdata, const std::string& where) {
  SKYDB_RETURN_IF_ERROR(
      StartServer(o_.plan.new_bin, pgdata, kCommonSettings, work_ + "/new-" + where + ".log"));
  SKYDB_ASSIGN_OR_RETURN(auto databases, Databases());
  SKYDB_ASSIGN_OR_RETURN(RowCounts after, CountRows(databases));
  auto differences = CountDifferences(before_, after);
  if (!differences.empty()) {
    return Error::Internal("the new cluster's row counts differ from the old one's: " +
                           Join(differences, "; "));
  }
  SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(ConnInfo("postgres")));
  SKYDB_ASSIGN_OR_RETURN(auto roles, upgrade::RoleNames(conn));
  if (roles != roles_before_) {
    return Error::Internal("the new cluster's roles (" + Join(roles, ", ") +
                           ") differ from the old one's (" + Join(roles_before_, ", ") + ")");
  }
  return StopServer(o_.plan.new_bin, pgdata);
}

Status Upgrader::Switch() {
  Step("switching: " + layout_.pgdata + " becomes PostgreSQL " + o_.plan.new_bin.version.text);
  SKYDB_RETURN_IF_ERROR(os_.exchange(layout_.pgdata, new_));
  switched_ = true;
  SKYDB_RETURN_IF_ERROR(os_.sync_dir(layout_.root));
  return os_.sync_dir(work_);
}

// The repository's backups and WAL are the old cluster's (another major, another system
// identifier): moved aside, intact, so that the new cluster's first start begins a new chain.
Status Upgrader::MoveBackups() {
  const std::string& repo = o_.backup_repository;
  if (repo.empty() || !env_.fs->Exists(RepositoryIdentityPath(repo))) return Ok();
  std::time_t now = std::chrono::system_clock::to_time_t(env_.clock->WallNow());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  std::string aside =
      repo + "/pre-upgrade-" + std::to_string(o_.plan.old_bin.version.major) + "-" + stamp;
  Step("moving the old cluster's backups in " + repo + " to " + aside);
  SKYDB_RETURN_IF_ERROR(env_.fs->MakeDir(aside, 0700));
  moved_backups_ = aside;
  for (const std::string& entry : {std::string("base"), std::string("wal")}) {
    if (env_.fs->Exists(repo + "/" + entry)) {
      SKYDB_RETURN_IF_ERROR(env_.fs->Rename(repo + "/" + entry, aside + "/" + entry));
    }
  }
  // Last: while it is in REPO, REPO is the old cluster's and nothing new is written there.
  SKYDB_RETURN_IF_ERROR(
      env_.fs->Rename(RepositoryIdentityPath(repo), aside + "/skydb-backup.json"));
  return os_.sync_dir(repo);
}

Status Upgrader::Build() {
  const UpgradePlan& p = o_.plan;
  Step("starting PostgreSQL " + p.old_bin.version.text + " read-only to count rows" +
       (p.method == UpgradeMethod::kDump ? " and dump" : ""));
  SKYDB_RETURN_IF_ERROR(StartServer(p.old_bin, layout_.pgdata, kOldSettings, work_ + "/old.log"));
  SKYDB_ASSIGN_OR_RETURN(auto databases, Databases());
  SKYDB_RETURN_IF_ERROR(CheckExtensions(databases));
  SKYDB_ASSIGN_OR_RETURN(before_, CountRows(databases));
  {
    SKYDB_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(ConnInfo("postgres")));
    SKYDB_ASSIGN_OR_RETURN(roles_before_, upgrade::RoleNames(conn));
  }
  int64_t rows = 0;
  for (const auto& [table, n] : before_) rows += n;
  if (o_.progress) {
    o_.progress("    " + std::to_string(databases.size()) + " databases (" + Join(databases, ", ") +
                "), " + std::to_string(before_.size()) + " tables, " + std::to_string(rows) +
                " rows, " + std::to_string(roles_before_.size()) + " roles");
  }
  if (p.method == UpgradeMethod::kDump) SKYDB_RETURN_IF_ERROR(Dump(databases));
  SKYDB_RETURN_IF_ERROR(StopServer(p.old_bin, layout_.pgdata));
  Step("initializing PostgreSQL " + p.new_bin.version.text + " in " + new_);
  SKYDB_RETURN_IF_ERROR(Initdb());
  if (p.method == UpgradeMethod::kPgUpgrade) {
    Step("pg_upgrade --check");
    SKYDB_RETURN_IF_ERROR(PgUpgrade(true));
    Step(std::string("pg_upgrade") +
         (p.transfer == UpgradeTransfer::kLink
              ? " --link"
              : (os_.can_clone(layout_.root) ? " --clone" : " --copy")));
    SKYDB_RETURN_IF_ERROR(PgUpgrade(false));
  } else {
    Step("starting PostgreSQL " + p.new_bin.version.text + " to restore into");
    SKYDB_RETURN_IF_ERROR(StartServer(p.new_bin, new_, kNewSettings, work_ + "/new.log"));
    SKYDB_RETURN_IF_ERROR(Restore(databases));
    SKYDB_RETURN_IF_ERROR(StopServer(p.new_bin, new_));
    Step("syncing the new cluster to disk");
    SKYDB_RETURN_IF_ERROR(
        ToolOk("initdb --sync-only", {p.new_bin.dir + "/initdb", "--sync-only", "-D", new_}));
  }
  Step("checking the new cluster: row counts of " + std::to_string(before_.size()) +
       " tables and the roles");
  return CheckNew(new_, "built");
}

Status Upgrader::Run() {
  Step("checking " + layout_.pgdata + " (PostgreSQL " + o_.plan.old_bin.version.text + ")");
  SKYDB_RETURN_IF_ERROR(Prepare());
  Status status = Build();
  if (status.ok()) status = Switch();
  if (status.ok()) {
    Step("starting PostgreSQL " + o_.plan.new_bin.version.text + " where it now lies");
    status = CheckNew(layout_.pgdata, "switched");
  }
  if (status.ok()) status = MoveBackups();
  if (status.ok()) status = env_.fs->Rename(new_, old_kept_);
  if (!status.ok()) return Fail(std::move(status));
  (void)os_.remove_tree(dump_);
  (void)os_.remove_tree(run_);
  return Ok();
}

// Undoes what was done, newest first, and says where things are.
Status Upgrader::Fail(Status failed) {
  Error error = std::move(failed).error();
  std::vector<std::string> problems;
  if (running_) {
    auto ran = Tool({running_->first.dir + "/pg_ctl", "stop", "-w", "-t", "60", "-m", "fast", "-D",
                     running_->second},
                    std::chrono::seconds(90));
    (void)ran;  // it may be gone already (a killed server is what failed)
  }
  if (!moved_backups_.empty()) {
    const std::string& repo = o_.backup_repository;
    for (const std::string& entry :
         {std::string("base"), std::string("wal"), std::string("skydb-backup.json")}) {
      if (env_.fs->Exists(moved_backups_ + "/" + entry)) {
        Status back = env_.fs->Rename(moved_backups_ + "/" + entry, repo + "/" + entry);
        if (!back.ok()) problems.push_back(back.error().message);
      }
    }
  }
  if (switched_) {
    Status back = os_.exchange(layout_.pgdata, new_);
    if (!back.ok()) {
      error.message += "; switching back failed too (" + back.error().message +
                       "): the new cluster is in " + layout_.pgdata + " and the old one in " +
                       new_ + "; exchange them by hand before starting skydb";
      return error;
    }
    (void)os_.sync_dir(layout_.root);
  }
  Status removed = os_.remove_tree(work_);
  if (!removed.ok()) problems.push_back(removed.error().message);
  std::string state = "nothing was changed: the PostgreSQL " +
                      std::to_string(o_.plan.old_bin.version.major) + " cluster in " +
                      layout_.pgdata + " is as it was";
  if (o_.plan.transfer == UpgradeTransfer::kLink && switched_) {
    state = "the PostgreSQL " + std::to_string(o_.plan.old_bin.version.major) +
            " cluster is back in " + layout_.pgdata +
            ", but with --link the new cluster shared its files and has run: "
            "restore it from a backup";
  }
  if (!problems.empty()) state += " (but " + Join(problems, "; ") + ")";
  error.message += "; " + state;
  return error;
}

}  // namespace

Status CheckNoKeptCluster(const FileSystem& fs, const std::string& data_dir) {
  std::string work = data_dir + "/upgrade";
  auto entries = fs.ListDir(work);
  if (!entries.ok()) return Ok();
  for (const auto& e : *entries) {
    if (StartsWith(e, "old-")) {
      return Error::Conflict(work + "/" + e +
                             " holds the cluster kept by an earlier upgrade; remove it (rm -r " +
                             work + ") once you no longer need it, then upgrade again");
    }
  }
  return Ok();
}

Status RunUpgrade(const UpgradeOptions& options, Env& env, const UpgradeOs& os) {
  return Upgrader(options, env, os).Run();
}

}  // namespace skydb
