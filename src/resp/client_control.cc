// The server's ClientControl: CLIENT LIST and KILL visit every loop on its own thread (a posted
// task each) and answer when the last loop has.
#include <algorithm>
#include <memory>

#include "resp/server_internal.h"
#include "skydb/log.h"

namespace skydb::resp {
namespace {

// Collects one result per loop; the last loop to report calls `done`.
template <typename T>
struct Gather {
  Gather(size_t loops, std::function<void(T)> d) : remaining(loops), done(std::move(d)) {}
  void Add(T part, const std::function<void(T&, T&&)>& merge) {
    T all;
    {
      MutexLock lock(mu);
      merge(result, std::move(part));
      if (--remaining > 0) return;
      all = std::move(result);
    }
    done(std::move(all));
  }
  Mutex mu;
  size_t remaining GUARDED_BY(mu);
  T result GUARDED_BY(mu){};
  std::function<void(T)> done;
};

}  // namespace

void LoopClientControl::List(ClientFilter filter,
                             std::function<void(std::vector<ClientInfo>)> done) {
  using Infos = std::vector<ClientInfo>;
  auto gather = std::make_shared<Gather<Infos>>(shared_.loops.size(), std::move(done));
  for (auto& loop : shared_.loops) {
    loop->Post([loop = loop.get(), filter, gather, clock = shared_.clock] {
      Infos part;
      auto now = clock->Now();
      loop->ForEachConnection([&](Connection& conn) {
        ClientInfo info = conn.Info(now);
        if (filter.Matches(info)) part.push_back(std::move(info));
      });
      gather->Add(std::move(part), [](Infos& all, Infos&& more) {
        all.insert(all.end(), std::make_move_iterator(more.begin()),
                   std::make_move_iterator(more.end()));
        std::sort(all.begin(), all.end(),
                  [](const ClientInfo& a, const ClientInfo& b) { return a.id < b.id; });
      });
    });
  }
}

void LoopClientControl::Kill(ClientFilter filter, uint64_t requester,
                             std::function<void(size_t)> done) {
  auto gather = std::make_shared<Gather<size_t>>(shared_.loops.size(), std::move(done));
  for (auto& loop : shared_.loops) {
    loop->Post([loop = loop.get(), filter, requester, gather, clock = shared_.clock] {
      size_t killed = 0;
      auto now = clock->Now();
      loop->ForEachConnection([&](Connection& conn) {
        if (conn.closed() || !filter.Matches(conn.Info(now))) return;
        ++killed;
        spdlog::info("resp: client id={} killed by CLIENT KILL from client id={}", conn.id(),
                     requester);
        if (conn.id() == requester) return conn.BeginDrain();  // its reply first, as Redis
        conn.Close("killed by CLIENT KILL");
      });
      gather->Add(killed, [](size_t& all, size_t&& more) { all += more; });
    });
  }
}

}  // namespace skydb::resp
