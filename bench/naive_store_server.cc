// naive_store_server: Sky.Live's own session store, served over RESP so the load generator
// drives it exactly as it drives skydb and redis-server. Every SET is one INSERT ... ON
// CONFLICT in its own transaction (autocommit: one COMMIT, one WAL flush), every GET one SELECT,
// over a pool of 6 connections — no memory tier, no batching. It reuses skydb's RESP server so
// the only difference from skydb's arms is the store behind the protocol.
//
//   naive_store_server --socket PATH --conninfo STR [--pool 6]
//
// INFO reports store_kind naive, store_durability sync. Prints "ready" once listening; SIGTERM
// or SIGINT shuts it down. GET, SET and EXPIRE only (an EXPIRE is one UPDATE in its own
// transaction, as the runtime's cold read): other commands answer an error saying so.
#include <libpq-fe.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "skydb/mutex.h"
#include "skydb/resp.h"
#include "skydb/store.h"

namespace {

using skydb::Error;
using skydb::Result;

const char* const kUpsert =
    "INSERT INTO sky_sessions (id, data, expires_at, expiry_bucket)"
    " VALUES ($1, $2, $3::bigint, $3::bigint / 3600000)"
    " ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at,"
    " expiry_bucket = excluded.expiry_bucket";
// EXPIRE of a live key (the runtime's cold read): one UPDATE in its own transaction.
const char* const kExpire =
    "UPDATE sky_sessions SET expires_at = $2::bigint, expiry_bucket = $2::bigint / 3600000"
    " WHERE id = $1 AND (expires_at IS NULL OR expires_at > $3::bigint)";
const char* const kSelect =
    "SELECT data FROM sky_sessions WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Error Unsupported(const char* what) {
  return Error::InvalidArgument(std::string(what) +
                                " is not supported by the naive bench store "
                                "(GET, SET and EXPIRE only)");
}

class NaiveStore final : public skydb::SessionStore {
 public:
  static Result<std::unique_ptr<NaiveStore>> Open(const std::string& conninfo, int pool) {
    auto store = std::unique_ptr<NaiveStore>(new NaiveStore());
    for (int i = 0; i < pool; ++i) {
      PGconn* c = PQconnectdb(conninfo.c_str());
      if (PQstatus(c) != CONNECTION_OK) {
        std::string why = PQerrorMessage(c);
        PQfinish(c);
        return Error::Unavailable("cannot connect to PostgreSQL (" + conninfo + "): " + why);
      }
      store->threads_.emplace_back([s = store.get(), c] { s->Work(c); });
    }
    return store;
  }
  ~NaiveStore() override { (void)Close(std::chrono::seconds(5)); }

  void Get(std::string key, skydb::StoreCallback<std::optional<std::string>> done) override {
    Submit([key = std::move(key), done = std::move(done)](PGconn* c) {
      std::string now = std::to_string(NowMs());
      const char* values[] = {key.data(), now.c_str()};
      int lengths[] = {static_cast<int>(key.size()), 0};
      int formats[] = {1, 0};
      PGresult* r = PQexecParams(c, kSelect, 2, nullptr, values, lengths, formats, 1);
      if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        done(Error::Unavailable(std::string("SELECT failed: ") + PQerrorMessage(c)));
      } else if (PQntuples(r) == 0) {
        done(std::optional<std::string>());
      } else {
        done(std::optional<std::string>(
            std::string(PQgetvalue(r, 0, 0), static_cast<size_t>(PQgetlength(r, 0, 0)))));
      }
      PQclear(r);
    });
  }

  void Set(skydb::SetRequest request, skydb::StoreCallback<skydb::SetReply> done) override {
    if (request.condition != skydb::SetCondition::kAlways || request.return_old ||
        request.expiry.kind == skydb::Expiry::Kind::kKeep) {
      done(Unsupported("SET with NX, XX, GET or KEEPTTL"));
      return;
    }
    ++writes_;
    Submit([this, req = std::move(request), done = std::move(done)](PGconn* c) {
      std::string expires;
      if (req.expiry.kind == skydb::Expiry::Kind::kAt) expires = std::to_string(req.expiry.at);
      if (req.expiry.kind == skydb::Expiry::Kind::kDefault)
        expires = std::to_string(NowMs() + 1800000);
      const char* values[] = {req.key.data(), req.value.data(),
                              expires.empty() ? nullptr : expires.c_str()};
      int lengths[] = {static_cast<int>(req.key.size()), static_cast<int>(req.value.size()), 0};
      int formats[] = {1, 1, 0};
      auto rows = Write(c, kUpsert, values, lengths, formats, "upsert");
      if (!rows.ok()) return done(rows.error());
      done(skydb::SetReply{true, std::nullopt});
    });
  }

  void GetEx(std::string, std::optional<skydb::Expiry>,
             skydb::StoreCallback<std::optional<std::string>> done) override {
    done(Unsupported("GETEX"));
  }
  void GetDel(std::string, skydb::StoreCallback<std::optional<std::string>> done) override {
    done(Unsupported("GETDEL"));
  }
  void Delete(std::vector<std::string>, skydb::StoreCallback<int64_t> done) override {
    done(Unsupported("DEL"));
  }
  void Exists(std::vector<std::string>, skydb::StoreCallback<int64_t> done) override {
    done(Unsupported("EXISTS"));
  }
  void Expire(std::string key, skydb::Expiry expiry, skydb::ExpireCondition condition,
              skydb::StoreCallback<bool> done) override {
    if (expiry.kind != skydb::Expiry::Kind::kAt || condition.if_none || condition.if_any ||
        condition.if_later || condition.if_earlier) {
      done(Unsupported("PERSIST, or EXPIRE with NX, XX, GT or LT"));
      return;
    }
    ++writes_;
    Submit([this, key = std::move(key), at = expiry.at, done = std::move(done)](PGconn* c) {
      std::string deadline = std::to_string(at), now = std::to_string(NowMs());
      const char* values[] = {key.data(), deadline.c_str(), now.c_str()};
      int lengths[] = {static_cast<int>(key.size()), 0, 0};
      int formats[] = {1, 0, 0};
      auto rows = Write(c, kExpire, values, lengths, formats, "expire");
      if (!rows.ok()) return done(rows.error());
      done(*rows == 1);
    });
  }
  void Increment(skydb::IncrRequest, skydb::StoreCallback<skydb::IncrReply> done) override {
    done(Unsupported("INCR"));
  }
  void DeleteAll(skydb::StoreCallback<int64_t> done) override { done(Unsupported("FLUSHALL")); }
  void Ttl(std::string, skydb::StoreCallback<skydb::TtlReply> done) override {
    done(Unsupported("TTL"));
  }
  void Scan(uint64_t, std::string, size_t, std::optional<skydb::ValueType>,
            skydb::StoreCallback<skydb::ScanReply> done) override {
    done(Unsupported("SCAN"));
  }
  int64_t Count() const override { return 0; }
  skydb::StoreStats Stats() const override {
    skydb::StoreStats s;
    s.kind = "naive";
    s.durability = "sync";
    s.writes = writes_.load();
    s.commits = commits_.load();
    s.committed_rows = commits_.load();
    s.failed_commits = failed_.load();
    return s;
  }
  skydb::Status Close(std::chrono::milliseconds) override {
    {
      skydb::MutexLock lock(mu_);
      if (closing_) return {};
      closing_ = true;
    }
    cv_.NotifyAll();
    for (auto& t : threads_) t.join();
    return {};
  }

 private:
  NaiveStore() = default;
  void Submit(std::function<void(PGconn*)> job) {
    {
      skydb::MutexLock lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.NotifyOne();
  }
  void Work(PGconn* conn) {
    while (true) {
      std::function<void(PGconn*)> job;
      {
        skydb::MutexLock lock(mu_);
        while (!closing_ && jobs_.empty()) cv_.Wait(mu_);
        if (jobs_.empty()) break;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(conn);
    }
    PQfinish(conn);
  }

  skydb::Mutex mu_;
  skydb::CondVar cv_;
  std::deque<std::function<void(PGconn*)>> jobs_ GUARDED_BY(mu_);
  bool closing_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
  // One write statement of three parameters in its own transaction, counted: the rows it changed.
  Result<int> Write(PGconn* c, const char* sql, const char* const* values, const int* lengths,
                    const int* formats, const char* what) {
    PGresult* r = PQexecParams(c, sql, 3, nullptr, values, lengths, formats, 0);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    int rows = ok ? std::atoi(PQcmdTuples(r)) : 0;
    PQclear(r);
    if (!ok) {
      ++failed_;
      return Error::Unavailable(std::string(what) + " failed: " + PQerrorMessage(c));
    }
    ++commits_;
    return rows;
  }

  std::atomic<uint64_t> writes_{0}, commits_{0}, failed_{0};
};

}  // namespace

int main(int argc, char** argv) {
  std::string socket, conninfo;
  int pool = 6;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--socket")
      socket = argv[i + 1];
    else if (flag == "--conninfo")
      conninfo = argv[i + 1];
    else if (flag == "--pool")
      pool = std::atoi(argv[i + 1]);
    else
      socket.clear(), i = argc;
  }
  if (socket.empty() || conninfo.empty() || pool < 1) {
    std::fprintf(stderr, "usage: naive_store_server --socket PATH --conninfo STR [--pool 6]\n");
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
  spdlog::set_default_logger(spdlog::stderr_color_mt("naive_store_server"));
  auto clock = skydb::NewRealClock();
  auto store = NaiveStore::Open(conninfo, pool);
  if (!store.ok()) {
    std::fprintf(stderr, "naive_store_server: %s\n", store.error().message.c_str());
    return 1;
  }
  skydb::RespServerOptions options;
  options.unix_path = socket;
  options.store_description =
      "naive: one INSERT ... ON CONFLICT per write, " + std::to_string(pool) + "-connection pool";
  auto server = skydb::NewRespServer(options, **store, *clock);
  if (!server.ok()) {
    std::fprintf(stderr, "naive_store_server: %s\n", server.error().message.c_str());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  (*server)->Shutdown(std::chrono::seconds(5));
  (void)(*store)->Close(std::chrono::seconds(5));
  return 0;
}
