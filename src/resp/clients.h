// CLIENT LIST / INFO / KILL: what one connection reports about itself, the line Redis 7
// writes for it, and the server's control over connections that live on other loop threads.
//
// Thread-safety: ClientInfo and ClientFilter are values. A ClientControl may be called from any
// thread; its callbacks run on any thread (a loop's), exactly once each, unless the server is
// shutting down (the request's connection is then being closed too).
// Ownership: the server owns its ClientControl and outlives every request that uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace skydb::resp {

struct ClientState;

// One client as CLIENT LIST shows it. Counts are bytes unless named otherwise.
struct ClientInfo {
  uint64_t id = 0;
  std::string addr;   // "ip:port", or "<socket path>:0" for a unix socket client (Redis's form)
  std::string laddr;  // the server's end, same forms
  int fd = -1;
  bool unix_socket = false;
  std::string name;
  std::string user = "default";  // its ACL user
  int64_t age_seconds = 0;
  int64_t idle_seconds = 0;
  size_t sub = 0;   // channels subscribed
  size_t psub = 0;  // patterns subscribed
  size_t qbuf = 0;  // request bytes received, not yet run
  size_t obl = 0;   // reply bytes in the output buffer, unsent
  size_t oll = 0;   // replies waiting behind it (slots)
  size_t omem = 0;  // every reply byte the connection holds (its budget)
  std::string cmd;  // the last command, "client|list" for container commands, "NULL" before one
  int resp = 2;
  std::string lib_name;
  std::string lib_ver;
  bool writing = false;  // output pending: events=rw
};

// What the command layer knows of its client (id, name, subscriptions, protocol, library).
ClientInfo InfoFromState(const ClientState& client);

// Redis 7's CLIENT LIST line (without the newline), field names in Redis's order. Fields skydb
// has no counterpart for (qbuf-free, argv-mem, multi-mem, rbs, rbp) are 0; multi is -1 (no
// transactions), db 0, redir -1.
std::string FormatClientLine(const ClientInfo& info);

enum class ClientType : uint8_t {
  kAny,     // no TYPE given
  kNormal,  // not subscribed
  kPubSub,  // at least one subscription
};

// Which clients a CLIENT LIST or KILL names; every condition given must hold.
struct ClientFilter {
  std::vector<uint64_t> ids;        // empty: any id
  std::optional<std::string> addr;  // "ip:port" or "<socket path>:0"
  ClientType type = ClientType::kAny;
  std::optional<uint64_t> skip_id;  // KILL's SKIPME yes: the requesting client is spared

  bool Matches(const ClientInfo& info) const;
};

class ClientControl {
 public:
  virtual ~ClientControl() = default;
  // The matching clients of every loop, by id.
  virtual void List(ClientFilter filter, std::function<void(std::vector<ClientInfo>)> done) = 0;
  // Closes the matching clients, each on its own loop thread; client `requester` (if it
  // matches) is closed after its earlier replies and this one instead. `done` gets how many.
  virtual void Kill(ClientFilter filter, uint64_t requester, std::function<void(size_t)> done) = 0;
};

}  // namespace skydb::resp
