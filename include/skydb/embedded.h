// The embedding API: a C++ app runs skydb inside its own process — a private, tuned PostgreSQL
// for the app's own data (or an external PostgreSQL it names) and the durable session store,
// reached over the Redis protocol on DATA_DIR/run/skydb.sock — with the same lifecycle that
// `skydb serve` runs, and gets the connection contract (skydb/app_env.h) to reach both.
//
//   skydb::EmbeddedOptions options;
//   options.data_dir = "/var/lib/myapp";
//   auto skydb = skydb::Embedded::Start(std::move(options));
//   if (!skydb.ok()) { fprintf(stderr, "%s\n", skydb.error().message.c_str()); return 1; }
//   if (auto ready = (*skydb)->WaitReady(std::chrono::minutes(2)); !ready.ok()) ...
//   pqxx::connection db((*skydb)->database_url());   // the app's own database
//   ... connect to (*skydb)->store_socket() with any Redis client ...
//   (*skydb)->Stop();                                // or let the destructor do it
//
// What it does not do: it installs no signal handler (the app turns SIGTERM into Stop()), and
// it does not drop root. Started as root it refuses, because PostgreSQL refuses to run as
// root; run the app as an unprivileged user, or let `skydb run` start it. It replaces spdlog's
// process-wide default logger (skydb logs through spdlog) and raises the soft open-file limit
// to the hard one (every store client is a descriptor). One Embedded per data directory: the
// directory is locked while it runs.
//
// Thread-safety: an Embedded's methods may be called from any thread. skydb runs on a thread
// the Embedded owns, which lives until Stop() returns: the postmaster follows that thread
// (parent-death signal), so PostgreSQL never outlives it. Signals are blocked on that thread
// and on the threads it starts, so they reach the app's own threads.
// Ownership: the app owns the Embedded; destroying it stops skydb in order first.
// Failure: Start refuses root and a configuration the table rejects with one sentence
// (Result's Error); what fails later — an unusable or locked data directory, a PostgreSQL that
// does not start — is WaitReady's Unavailable, with the line skydb logged about it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skydb/app_env.h"
#include "skydb/config.h"
#include "skydb/result.h"

namespace skydb {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError };

// Receives each of skydb's log lines (the message, without time or level) on the thread that
// logged it; it must be quick and must not call back into the Embedded.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

struct EmbeddedOptions {
  // Where skydb keeps its state (PGDATA under it, sockets in DIR/run); created when missing.
  // Required; made absolute against the current directory.
  std::string data_dir;
  // Empty: a private PostgreSQL cluster under data_dir (what `skydb serve --embed` runs), with
  // the app's role and database (app.role, app.database). Else an external PostgreSQL (libpq
  // URI or keyword string): the store keeps its table there and DATABASE_URL is this URL.
  std::string database_url;
  // A skydb.toml to read first (docs/configuration.md); "" reads none.
  std::string config_file;
  // "key=value" for any key of the configuration table, e.g. "store.durability=async",
  // "resp.tcp_port=6380"; applied in order, over the file. The process environment (SKYDB_*)
  // is not read: it belongs to the app.
  std::vector<std::string> settings;
  // log.level: trace|debug|info|warn|error (a "log.level=" setting wins).
  std::string log_level = "info";
  // Null: lines go to stderr in log.format (text, json, or journal under systemd).
  LogSink log_sink;
};

class Embedded {
 public:
  // Checks the options, then starts skydb on its own thread and returns at once; WaitReady
  // tells when the store and the database accept connections. The HTTP endpoints (/metrics,
  // /status) are off unless the file or settings set http.port or http.listen.
  static Result<std::unique_ptr<Embedded>> Start(EmbeddedOptions options);

  ~Embedded();  // Stop()
  Embedded(const Embedded&) = delete;
  Embedded& operator=(const Embedded&) = delete;

  // Ok once PostgreSQL is ready, the session store open and its socket listening. Timeout when
  // `timeout` passes first (skydb goes on starting); Unavailable, with the reason, when skydb
  // stopped or failed before it was ready.
  Status WaitReady(std::chrono::milliseconds timeout);
  // The ordered stop: no new store clients, queued writes committed, then PostgreSQL's fast
  // shutdown (immediate after supervisor.stop_timeout). Blocks until done; idempotent. The
  // Status says whether skydb had failed on its own before.
  Status Stop();

  // The connection contract (skydb/app_env.h): DATABASE_URL, PGHOST…, REDIS_URL.
  const AppEnvironment& environment() const { return environment_; }
  // DATABASE_URL: postgresql:///app?host=DIR/run&user=app, or the external URL as given.
  std::string database_url() const;
  // The store's unix socket (resp.socket, else DATA_DIR/run/skydb.sock).
  std::string store_socket() const;
  // The effective configuration.
  const Config& config() const { return config_; }

 private:
  class Impl;
  Embedded(Config config, AppEnvironment environment, std::unique_ptr<Impl> impl);

  Config config_;
  AppEnvironment environment_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skydb
