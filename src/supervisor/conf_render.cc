#include "supervisor/conf_render.h"

#include "base/strings.h"

namespace skydb::supervisor {
namespace {

constexpr char kIncludeLine[] = "include = 'skydb.conf'";
constexpr char kManagedHeader[] =
    "# Written by skydb on every start; edits here are overwritten.\n";

}  // namespace

std::string QuoteConfValue(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string RenderSkydbConf(const std::string& settings_conf, const std::string& socket_dir,
                            int port, int major, const std::string& socket_group,
                            const TcpListen& tcp) {
  std::string out = kManagedHeader;
  out += "# Pin a setting with [postgres.settings] in skydb's config, not here.\n\n";
  // skydb's logger adds its own timestamp; keep PostgreSQL's prefix short (pins may change it).
  out += "log_line_prefix = '[%p] '\n";
  if (major >= 14) {
    // After a crash, one syncfs() of the file system instead of an fsync per file in pgdata:
    // seconds off every crash restart (PostgreSQL's own fsync default is the slow, safe-on-
    // every-file-system choice; syncfs is Linux-only, which skydb is).
    out += "recovery_init_sync_method = syncfs\n";
  }
  out += "\n";
  out += settings_conf;
  if (!settings_conf.empty() && settings_conf.back() != '\n') out += '\n';
  out += "\n# Owned by the supervisor (after the settings so that they always win):\n";
  if (tcp.bind.empty()) {
    out += "listen_addresses = ''\n";
  } else {
    // pg_hba.conf admits TCP only as hostssl with scram-sha-256 (RenderHba).
    out += "listen_addresses = " + QuoteConfValue(tcp.bind) + "\n";
    out += "ssl = on\n";
    out += "ssl_cert_file = " + QuoteConfValue(tcp.cert_file) + "\n";
    out += "ssl_key_file = " + QuoteConfValue(tcp.key_file) + "\n";
    out += "ssl_min_protocol_version = 'TLSv1.2'\n";
    out += "password_encryption = 'scram-sha-256'\n";
  }
  out += "unix_socket_directories = " + QuoteConfValue(socket_dir) + "\n";
  if (socket_group.empty()) {
    out += "unix_socket_permissions = 0700\n";
  } else {
    out += "unix_socket_group = " + QuoteConfValue(socket_group) + "\n";
    out += "unix_socket_permissions = 0660\n";
  }
  out += "port = " + std::to_string(port) + "\n";
  out += "logging_collector = off\n";
  out += "log_destination = 'stderr'\n";
  return out;
}

std::optional<std::string> WithIncludeLine(const std::string& postgresql_conf) {
  for (const auto& line : Split(postgresql_conf, '\n')) {
    if (Trim(line) == kIncludeLine) return std::nullopt;
  }
  std::string out = postgresql_conf;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "\n# Added once by skydb: the derived settings, re-rendered on every start.\n";
  out += kIncludeLine;
  out += '\n';
  return out;
}

std::string ConfigCheckReasons(const std::string& postgres_stderr) {
  std::vector<std::string> reasons;
  std::string summary;
  for (const auto& line : Split(postgres_stderr, '\n')) {
    for (const char* severity : {"LOG:  ", "FATAL:  ", "ERROR:  ", "DETAIL:  "}) {
      auto at = line.find(severity);
      if (at == std::string::npos) continue;
      std::string message(Trim(line.substr(at + std::string_view(severity).size())));
      if (message.find("contains errors") != std::string::npos) {
        summary = message;
      } else if (!message.empty()) {
        reasons.push_back(message);
      }
      break;
    }
  }
  if (!reasons.empty()) return Join(reasons, "; ");
  return summary.empty() ? std::string(Trim(postgres_stderr)) : summary;
}

std::string RenderHba(const HbaRoles& roles) {
  const std::string peer = "peer map=" + std::string(kIdentMapName);
  std::vector<std::string> databases;
  for (const AccessApp& app : roles.apps) databases.push_back(app.database);
  const std::string app_databases = Join(databases, ",");
  std::string out = kManagedHeader;
  out += "# Unix-socket connections: skydb's own role by peer authentication through the map in\n";
  out += "# pg_ident.conf; each app's role to the apps' databases only, where the CONNECT\n";
  out += "# privilege (closed to PUBLIC) admits it to its own.\n";
  out += "# TYPE  DATABASE  USER  METHOD\n";
  out += "local   all  " + roles.superuser + "  " + peer + "\n";
  for (const AccessApp& app : roles.apps) {
    out += "local   " + app_databases + "  " + app.role + "  " +
           (app.scram ? std::string("scram-sha-256") : peer) + "\n";
  }
  out += "local   replication  " + roles.superuser + "  " + peer + "\n";
  if (!roles.tcp) return out;
  out += "# TCP (postgres.tcp_bind): TLS and scram-sha-256 only, apps with a password only.\n";
  out += "# TYPE  DATABASE  USER  ADDRESS  METHOD\n";
  for (const AccessApp& app : roles.apps) {
    if (app.scram) out += "hostssl " + app_databases + "  " + app.role + "  all  scram-sha-256\n";
  }
  out += "host    all  all  all  reject\n";
  out += "host    replication  all  all  reject\n";
  return out;
}

std::string RenderIdent(const std::vector<IdentEntry>& entries) {
  std::string out = kManagedHeader;
  out += "# MAPNAME  SYSTEM-USERNAME  PG-USERNAME\n";
  for (const auto& entry : entries) {
    out += std::string(kIdentMapName) + "  " + entry.os_user + "  " + entry.role + "\n";
  }
  return out;
}

AccessFiles RenderAccessFiles(const HbaRoles& roles) {
  // root as well: `skydb psql` run by root connects as it (root can become the role anyway).
  std::vector<IdentEntry> ident = {{"root", roles.superuser}, {roles.superuser, roles.superuser}};
  for (const AccessApp& app : roles.apps) {
    if (app.scram) continue;
    for (const std::string& os_user : app.os_users) {
      if (os_user != "root") ident.push_back({os_user, app.role});
    }
  }
  return {RenderHba(roles), RenderIdent(ident)};
}

}  // namespace skydb::supervisor
