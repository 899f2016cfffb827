// The configuration files skydb writes into DIR/pgdata: skydb.conf (derived settings plus the
// lines the supervisor owns), the include line in postgresql.conf, pg_hba.conf and pg_ident.conf.
//
// Authentication: local (unix socket) connections, peer authentication through the map "skydb":
// the OS users root and the cluster user may connect as the cluster's superuser role; each
// app's OS users as its role (or with its scram-sha-256 password when it has one), to the apps'
// databases only, where the CONNECT privilege admits it to its own; no one else may connect at
// all. TCP is off (listen_addresses = '') unless postgres.tcp_bind asks for it, and then only
// TLS with scram-sha-256, for apps with a password. The socket and its directory are the cluster
// user's alone (0700), or also the app group's (socket 0660) when there is one.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace skydb::supervisor {

inline constexpr char kSkydbConfName[] = "skydb.conf";
inline constexpr char kIdentMapName[] = "skydb";

// Quotes a postgresql.conf string value: 'it''s'.
std::string QuoteConfValue(const std::string& value);

// skydb.conf: a header, skydb's defaults that an operator may override (log_line_prefix), the
// derived settings (pins already applied), then the lines the supervisor needs and owns (socket
// directory, no TCP, port, log to stderr). recovery_init_sync_method = syncfs (PostgreSQL
// 14+) is a default an operator may pin otherwise. so that nothing can override them.
// `major` is the binaries' major version (settings that older servers lack are left out).
// `socket_group` "" keeps the socket the cluster user's alone (0700); a group name gives it to
// that group as well (0660).
// `tcp.bind` non-empty (postgres.tcp_bind): PostgreSQL also listens there, with TLS from the two
// files (names relative to pgdata) and scram-sha-256 for every password it stores.
struct TcpListen {
  std::string bind;
  std::string cert_file = "skydb_server.crt";
  std::string key_file = "skydb_server.key";
};
std::string RenderSkydbConf(const std::string& settings_conf, const std::string& socket_dir,
                            int port, int major, const std::string& socket_group = "",
                            const TcpListen& tcp = {});

// postgresql.conf with `include = 'skydb.conf'` appended, or nullopt if it is already there.
std::optional<std::string> WithIncludeLine(const std::string& postgresql_conf);

// PostgreSQL's reasons in the stderr of `postgres -C` over files it rejects: each message with
// its log prefix dropped ("invalid value for parameter \"shared_buffers\": \"bogus\""), joined
// with "; "; the closing "configuration file ... contains errors" only when nothing else is
// there; the trimmed text itself when no line has a severity.
std::string ConfigCheckReasons(const std::string& postgres_stderr);

// One app's lines in pg_hba.conf and pg_ident.conf: its role may ask for any app's database
// (the CONNECT privilege, closed to PUBLIC, keeps it to its own: another's answers SQLSTATE
// 42501), never skydb's own; by peer authentication through the map (its OS users) or, with a
// password, by scram-sha-256.
struct AccessApp {
  std::string role;
  std::string database;
  bool scram = false;
  std::vector<std::string> os_users;  // peer: mapped to `role` in pg_ident.conf
};

// `superuser` may connect to every database and replicate, over the socket, by peer
// authentication; each app as above. `tcp` (postgres.tcp_bind): the apps with a password may
// also connect over TCP with TLS (hostssl) and scram-sha-256; every other TCP connection, and
// every one without TLS, is rejected.
struct HbaRoles {
  std::string superuser;
  std::vector<AccessApp> apps;
  bool tcp = false;
};
std::string RenderHba(const HbaRoles& roles);

// One line of the map: an OS user allowed to connect as a role.
struct IdentEntry {
  std::string os_user;
  std::string role;
};
std::string RenderIdent(const std::vector<IdentEntry>& entries);

// pg_hba.conf and pg_ident.conf, rendered whole.
struct AccessFiles {
  std::string hba;
  std::string ident;
  bool operator==(const AccessFiles&) const = default;
};
// Both files for `roles`: the map lets root and the superuser's OS user in as the superuser
// role, and each app's OS users in as its role.
AccessFiles RenderAccessFiles(const HbaRoles& roles);

}  // namespace skydb::supervisor
