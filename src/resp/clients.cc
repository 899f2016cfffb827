// Client descriptions for CLIENT LIST / INFO and the filters of LIST and KILL.
#include "resp/clients.h"

#include <algorithm>

#include "resp/commands.h"

namespace skydb::resp {

ClientInfo InfoFromState(const ClientState& client) {
  ClientInfo info;
  info.id = client.id;
  info.name = client.name;
  info.addr = client.peer;
  info.user = client.user_name;
  info.sub = client.pubsub.channels.size();
  info.psub = client.pubsub.patterns.size();
  info.resp = static_cast<int>(client.proto);
  info.lib_name = client.lib_name;
  info.lib_ver = client.lib_ver;
  return info;
}

std::string FormatClientLine(const ClientInfo& i) {
  std::string flags;
  if (i.sub + i.psub > 0) flags += 'P';
  if (i.unix_socket) flags += 'U';
  if (flags.empty()) flags = "N";
  auto n = [](auto v) { return std::to_string(v); };
  return "id=" + n(i.id) + " addr=" + i.addr + " laddr=" + i.laddr + " fd=" + n(i.fd) +
         " name=" + i.name + " age=" + n(i.age_seconds) + " idle=" + n(i.idle_seconds) +
         " flags=" + flags + " db=0 sub=" + n(i.sub) + " psub=" + n(i.psub) +
         " ssub=0 multi=-1 qbuf=" + n(i.qbuf) +
         " qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=" + n(i.obl) + " oll=" + n(i.oll) +
         " omem=" + n(i.omem) + " tot-mem=" + n(i.omem + i.qbuf) +
         " events=" + (i.writing ? "rw" : "r") + " cmd=" + (i.cmd.empty() ? "NULL" : i.cmd) +
         " user=" + i.user + " redir=-1 resp=" + n(i.resp) + " lib-name=" + i.lib_name +
         " lib-ver=" + i.lib_ver;
}

bool ClientFilter::Matches(const ClientInfo& info) const {
  if (!ids.empty() && std::find(ids.begin(), ids.end(), info.id) == ids.end()) return false;
  if (addr && *addr != info.addr) return false;
  if (skip_id && *skip_id == info.id) return false;
  bool pubsub = info.sub + info.psub > 0;
  if (type == ClientType::kNormal && pubsub) return false;
  if (type == ClientType::kPubSub && !pubsub) return false;
  return true;
}

}  // namespace skydb::resp
