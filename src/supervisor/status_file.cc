#include "skydb/status_file.h"

#include <nlohmann/json.hpp>

#include "base/json_text.h"

namespace skydb::supervisor {
namespace {

using nlohmann::json;

// A text field: a JSON string, or the array of its bytes when it is not UTF-8 (JsonBytes).
// Missing is "". False when the field has another shape.
bool ReadText(const json& j, const char* key, std::string& out) {
  out.clear();
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (it->is_string()) {
    out = it->get<std::string>();
    return true;
  }
  if (!it->is_array()) return false;
  for (const auto& byte : *it) {
    if (!byte.is_number_unsigned() || byte.get<unsigned>() > 255) return false;
    out.push_back(static_cast<char>(byte.get<unsigned>()));
  }
  return true;
}

}  // namespace

std::string RenderStatusJson(const StatusRecord& r) {
  // Paths come from --data-dir and the binaries' location, which may be any bytes: written with
  // JsonBytes so that `skydb psql` gets the exact socket_dir back.
  auto text = [](const std::string& s) { return JsonBytes<json>(s); };
  json j = {
      {"state", r.state},
      {"daemon_pid", r.daemon_pid},
      {"started_at", r.started_at},
      {"ready_since", r.ready_since},
      {"updated_at", r.updated_at},
      {"postgres_pid", r.postgres_pid},
      {"restarts", r.restarts},
      {"last_exit", text(r.last_exit)},
      {"data_dir", text(r.data_dir)},
      {"socket_dir", text(r.socket_dir)},
      {"port", r.port},
      {"bin_dir", text(r.bin_dir)},
      {"server_version", text(r.server_version)},
      {"superuser", text(r.superuser)},
      {"database", text(r.database)},
      {"error", text(r.error)},
  };
  return JsonText(j, 2) + "\n";
}

Result<StatusRecord> ParseStatusJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::InvalidArgument("status file is not a JSON object");
  StatusRecord r;
  struct TextField {
    const char* key;
    std::string* out;
  };
  for (const TextField& f :
       {TextField{"state", &r.state}, TextField{"last_exit", &r.last_exit},
        TextField{"data_dir", &r.data_dir}, TextField{"socket_dir", &r.socket_dir},
        TextField{"bin_dir", &r.bin_dir}, TextField{"server_version", &r.server_version},
        TextField{"superuser", &r.superuser}, TextField{"database", &r.database},
        TextField{"error", &r.error}}) {
    if (!ReadText(j, f.key, *f.out)) {
      return Error::InvalidArgument(std::string("status file: ") + f.key +
                                    " is neither a string nor an array of bytes");
    }
  }
  auto num = [&](const char* key) { return j.value(key, int64_t{0}); };
  // value() throws on a type mismatch; a corrupt file is reported, not thrown through.
  try {
    r.daemon_pid = static_cast<pid_t>(num("daemon_pid"));
    r.started_at = num("started_at");
    r.ready_since = num("ready_since");
    r.updated_at = num("updated_at");
    r.postgres_pid = static_cast<pid_t>(num("postgres_pid"));
    r.restarts = static_cast<int>(num("restarts"));
    r.port = static_cast<int>(num("port"));
  } catch (const json::exception& e) {
    return Error::InvalidArgument(std::string("status file: ") + e.what());
  }
  return r;
}

}  // namespace skydb::supervisor
