// The pure parts of `skydb upgrade`: which method and tools, the downtime estimate, pg_control's
// state, the globals to restore, the row-count comparison.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/strings.h"
#include "skydb/upgrade.h"

namespace skydb {
namespace {

// Measured in docs/upgrade.md ("Downtime"): 1.5 GiB of databases moved by the dump path in
// 77.5 s on a loaded 2-vCPU host, about 10 s of it starts, stops, initdb and checks. The copy
// rate is `cp -r` of the same base/ and a sync on that disk (270 MiB/s), which pg_upgrade
// --copy amounts to; the pg_upgrade path itself was not measured (docs/upgrade.md).
constexpr double kDumpBytesPerSecond = 20.0 * (1 << 20);   // dump + restore + count, per byte
constexpr double kCopyBytesPerSecond = 250.0 * (1 << 20);  // pg_upgrade --copy
constexpr int kFixedSeconds = 10;                          // starts, stops, initdb, checks

// What pg_upgrade runs from each side (its check_bin_dir).
constexpr const char* kPgUpgradeNeedsOld[] = {"postgres", "pg_controldata", "pg_ctl",
                                              "pg_resetwal"};
constexpr const char* kPgUpgradeNeedsNew[] = {
    "pg_upgrade", "postgres",   "pg_controldata", "pg_ctl", "pg_resetwal", "initdb",
    "pg_dump",    "pg_dumpall", "pg_restore",     "psql",   "vacuumdb"};

std::vector<std::string> Missing(const std::string& dir, const auto& names,
                                 const std::function<bool(const std::string&)>& executable) {
  std::vector<std::string> missing;
  for (const char* name : names) {
    if (!executable(dir + "/" + name)) missing.emplace_back(name);
  }
  return missing;
}

bool SimpleIdentifier(const std::string& name) {
  return !name.empty() && (std::islower(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '_';
         });
}

}  // namespace

const char* UpgradeMethodName(UpgradeMethod m) {
  switch (m) {
    case UpgradeMethod::kAuto:
      return "auto";
    case UpgradeMethod::kPgUpgrade:
      return "pg_upgrade";
    case UpgradeMethod::kDump:
      return "dump";
  }
  return "?";
}

Result<UpgradePlan> PlanUpgrade(int cluster_major, const UpgradeBinaries& old_bin,
                                const UpgradeBinaries& new_bin, UpgradeMethod method,
                                UpgradeTransfer transfer,
                                const std::function<bool(const std::string&)>& executable) {
  const std::string cluster = "PostgreSQL " + std::to_string(cluster_major);
  if (new_bin.version.major == cluster_major) {
    return Error::InvalidArgument(
        "the new binaries (" + new_bin.dir + ") are " + cluster +
        " too, the cluster's major: nothing to upgrade; give --to-bin-dir, or point "
        "SKY_POSTGRES_BIN, postgres.bundle or postgres.version at the new major");
  }
  if (new_bin.version.major < cluster_major) {
    return Error::InvalidArgument("the new binaries (" + new_bin.dir + ") are PostgreSQL " +
                                  new_bin.version.text + ", older than the cluster's " + cluster +
                                  "; PostgreSQL cannot move a cluster to an older major");
  }
  if (std::string why = UnsupportedMajorReason(new_bin.version); !why.empty()) {
    return Error::VersionMismatch(why + "; upgrade to a supported major");
  }
  if (old_bin.version.major != cluster_major) {
    return Error::VersionMismatch("the old binaries (" + old_bin.dir + ") are PostgreSQL " +
                                  old_bin.version.text + ", not the cluster's " + cluster +
                                  "; give --from-bin-dir a " + cluster + " bin dir");
  }
  UpgradePlan plan;
  plan.old_bin = old_bin;
  plan.new_bin = new_bin;
  plan.transfer = transfer;
  auto old_missing = Missing(old_bin.dir, kPgUpgradeNeedsOld, executable);
  auto new_missing = Missing(new_bin.dir, kPgUpgradeNeedsNew, executable);
  bool pg_upgrade_ok = old_missing.empty() && new_missing.empty();
  std::string pg_upgrade_lacks;
  if (!new_missing.empty()) pg_upgrade_lacks = new_bin.dir + " lacks " + Join(new_missing, ", ");
  if (!old_missing.empty()) {
    pg_upgrade_lacks +=
        (pg_upgrade_lacks.empty() ? "" : "; ") + old_bin.dir + " lacks " + Join(old_missing, ", ");
  }
  if (method == UpgradeMethod::kPgUpgrade && !pg_upgrade_ok) {
    return Error::NotFound("--method pg_upgrade cannot run: " + pg_upgrade_lacks +
                           "; use --method dump (or auto)");
  }
  if (transfer == UpgradeTransfer::kLink && (method == UpgradeMethod::kDump || !pg_upgrade_ok)) {
    return Error::InvalidArgument(
        "--link needs pg_upgrade, which cannot run here (" +
        (pg_upgrade_ok ? std::string("--method dump was given") : pg_upgrade_lacks) + ")");
  }
  if (method != UpgradeMethod::kDump && pg_upgrade_ok) {
    plan.method = UpgradeMethod::kPgUpgrade;
    plan.why = "the new binaries have pg_upgrade";
    return plan;
  }
  plan.method = UpgradeMethod::kDump;
  plan.why = method == UpgradeMethod::kDump ? "--method dump was given"
                                            : "pg_upgrade cannot run: " + pg_upgrade_lacks;
  // pg_restore reads archives of its own major and older, so pg_dump and pg_restore come from
  // one directory, the newest that has both; pg_dumpall (plain SQL) from the newest that has it.
  for (const auto* bin : {&new_bin, &old_bin}) {
    if (executable(bin->dir + "/pg_dump") && executable(bin->dir + "/pg_restore")) {
      plan.pg_dump = bin->dir + "/pg_dump";
      plan.pg_restore = bin->dir + "/pg_restore";
      break;
    }
  }
  for (const auto* bin : {&new_bin, &old_bin}) {
    if (executable(bin->dir + "/pg_dumpall")) {
      plan.pg_dumpall = bin->dir + "/pg_dumpall";
      break;
    }
  }
  if (plan.pg_dump.empty() || plan.pg_dumpall.empty()) {
    std::string old_major = std::to_string(cluster_major);
    return Error::NotFound(
        "the dump path needs pg_dump and pg_restore (from one directory) and pg_dumpall, of "
        "PostgreSQL " +
        old_major + " or newer, and neither " + new_bin.dir + " nor " + old_bin.dir +
        " has them; install postgresql-client-" + old_major +
        " (Debian), or stage the old or new bundle from an installation that has them");
  }
  return plan;
}

std::chrono::seconds EstimateDowntime(const UpgradePlan& plan, uint64_t database_bytes,
                                      bool can_clone) {
  double seconds = kFixedSeconds;
  if (plan.method == UpgradeMethod::kDump) {
    seconds += static_cast<double>(database_bytes) / kDumpBytesPerSecond;
  } else if (plan.transfer != UpgradeTransfer::kLink && !can_clone) {
    seconds += static_cast<double>(database_bytes) / kCopyBytesPerSecond;
  }
  return std::chrono::seconds(static_cast<int64_t>(seconds + 0.5));
}

Result<ControlState> ParseControlFile(const std::string& bytes) {
  if (bytes.size() < 20) return Error::InvalidArgument("pg_control is shorter than 20 bytes");
  ControlState state;
  std::memcpy(&state.system_identifier, bytes.data(), 8);
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  int32_t db_state = 0;
  std::memcpy(&db_state, bytes.data() + 16, 4);
  // pg_control_version: 1300 for 13 to 16, 1700 for 17, 1800 for 18.
  if (version < 1300 || version >= 2000) {
    return Error::InvalidArgument("pg_control has version " + std::to_string(version) +
                                  ", which this skydb does not read");
  }
  state.state = db_state;
  return state;
}

std::vector<std::string> GlobalsStatements(const std::string& globals_sql,
                                           const std::string& superuser) {
  std::string quoted = SimpleIdentifier(superuser) ? superuser : "\"" + superuser + "\"";
  std::string create = "CREATE ROLE " + quoted + ";";
  std::vector<std::string> statements;
  std::string current;
  bool in_quote = false;  // inside a '…' literal that spans lines
  for (const auto& line : Split(globals_sql, '\n')) {
    if (!in_quote && current.empty()) {
      // psql's meta-commands (\restrict, \unrestrict in current minors) and comments.
      if (line.empty() || StartsWith(line, "--") || StartsWith(line, "\\")) continue;
    }
    current += current.empty() ? line : "\n" + line;
    for (char c : line) {
      if (c == '\'') in_quote = !in_quote;
    }
    if (!in_quote && !line.empty() && line.back() == ';') {
      if (current != create) statements.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) statements.push_back(current);
  return statements;
}

std::vector<std::string> CountDifferences(const RowCounts& before, const RowCounts& after) {
  std::vector<std::string> out;
  for (const auto& [table, rows] : before) {
    auto found = after.find(table);
    if (found == after.end()) {
      out.push_back(table + ": " + std::to_string(rows) + " rows before, missing after");
    } else if (found->second != rows) {
      out.push_back(table + ": " + std::to_string(rows) + " rows before, " +
                    std::to_string(found->second) + " after");
    }
  }
  for (const auto& [table, rows] : after) {
    if (before.count(table) == 0) {
      out.push_back(table + ": not there before, " + std::to_string(rows) + " rows after");
    }
  }
  return out;
}

}  // namespace skydb
