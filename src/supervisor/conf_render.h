// The configuration files skydb writes into DIR/pgdata: skydb.conf (derived settings plus the
// lines the supervisor owns), the include line in postgresql.conf, pg_hba.conf and pg_ident.conf.
//
// Authentication: local (unix socket) connections only, peer authentication through the map
// "skydb": the OS users root and the cluster user may connect as the cluster's superuser role,
// no one else may connect at all; TCP is off (listen_addresses = ''). The socket directory is
// 0700 as well, so another local user cannot even reach the socket.
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
std::string RenderSkydbConf(const std::string& settings_conf, const std::string& socket_dir,
                            int port, int major);

// postgresql.conf with `include = 'skydb.conf'` appended, or nullopt if it is already there.
std::optional<std::string> WithIncludeLine(const std::string& postgresql_conf);

// PostgreSQL's reasons in the stderr of `postgres -C` over files it rejects: each message with
// its log prefix dropped ("invalid value for parameter \"shared_buffers\": \"bogus\""), joined
// with "; "; the closing "configuration file ... contains errors" only when nothing else is
// there; the trimmed text itself when no line has a severity.
std::string ConfigCheckReasons(const std::string& postgres_stderr);

std::string RenderHba();
// Maps each OS user in `os_users` to `role`.
std::string RenderIdent(const std::vector<std::string>& os_users, const std::string& role);

}  // namespace skydb::supervisor
