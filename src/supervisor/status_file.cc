#include "supervisor/status_file.h"

#include <nlohmann/json.hpp>

namespace skydb::supervisor {

std::string RenderStatusJson(const StatusRecord& r) {
  nlohmann::json j = {
      {"state", r.state},           {"daemon_pid", r.daemon_pid},
      {"started_at", r.started_at}, {"ready_since", r.ready_since},
      {"updated_at", r.updated_at}, {"postgres_pid", r.postgres_pid},
      {"restarts", r.restarts},     {"last_exit", r.last_exit},
      {"data_dir", r.data_dir},     {"socket_dir", r.socket_dir},
      {"port", r.port},             {"bin_dir", r.bin_dir},
      {"server_version", r.server_version}, {"superuser", r.superuser},
      {"database", r.database},     {"error", r.error},
  };
  return j.dump(2) + "\n";
}

Result<StatusRecord> ParseStatusJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::InvalidArgument("status file is not a JSON object");
  StatusRecord r;
  auto str = [&](const char* key) { return j.value(key, std::string()); };
  auto num = [&](const char* key) { return j.value(key, int64_t{0}); };
  // value() throws on a type mismatch; a corrupt file is reported, not thrown through.
  try {
    r.state = str("state");
    r.daemon_pid = static_cast<pid_t>(num("daemon_pid"));
    r.started_at = num("started_at");
    r.ready_since = num("ready_since");
    r.updated_at = num("updated_at");
    r.postgres_pid = static_cast<pid_t>(num("postgres_pid"));
    r.restarts = static_cast<int>(num("restarts"));
    r.last_exit = str("last_exit");
    r.data_dir = str("data_dir");
    r.socket_dir = str("socket_dir");
    r.port = static_cast<int>(num("port"));
    r.bin_dir = str("bin_dir");
    r.server_version = str("server_version");
    r.superuser = str("superuser");
    r.database = str("database");
    r.error = str("error");
  } catch (const nlohmann::json::exception& e) {
    return Error::InvalidArgument(std::string("status file: ") + e.what());
  }
  return r;
}

}  // namespace skydb::supervisor
