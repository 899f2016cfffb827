#include "skydb/app_env.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "base/strings.h"
#include "skydb/data_dir_layout.h"

namespace skydb {
namespace {

bool Unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
}

std::string PercentEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (Unreserved(c)) {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// data_dir absolute and normalised, without trailing slashes.
Config WithAbsoluteDataDir(const Config& config) {
  Config c = config;
  std::error_code ec;
  auto abs = std::filesystem::absolute(c.data_dir, ec);
  if (!ec) c.data_dir = abs.lexically_normal().string();
  while (c.data_dir.size() > 1 && c.data_dir.back() == '/') c.data_dir.pop_back();
  return c;
}

}  // namespace

const std::string* AppEnvironment::Find(const std::string& name) const {
  for (const auto& [n, v] : vars) {
    if (n == name) return &v;
  }
  return nullptr;
}

std::string StoreSocketPath(const Config& config) {
  return config.resp.socket.empty() ? DataDirLayout::For(config.data_dir).store_socket
                                    : config.resp.socket;
}

std::vector<std::string> SocketPathProblems(const Config& config, bool embedded) {
  struct Socket {
    std::string what;
    std::string path;
    std::string fix;
  };
  const std::string dir_fix = "choose a --data-dir (data_dir) of at most ";
  const DataDirLayout layout = DataDirLayout::For(config.data_dir);
  std::vector<Socket> sockets;
  if (embedded) sockets.push_back({"PostgreSQL's socket", layout.postgres_socket, dir_fix});
  sockets.push_back({"the store socket", StoreSocketPath(config),
                     config.resp.socket.empty() ? dir_fix : "set resp.socket to a shorter path"});
  if (!config.http.listen.empty() && config.http.listen != "tcp") {
    const std::string& listen = config.http.listen;
    bool relative = listen.front() != '/';
    sockets.push_back({"the HTTP socket (http.listen)", layout.InRun(listen),
                       relative ? dir_fix : "set http.listen to a shorter path"});
  }
  std::vector<std::string> problems;
  for (const Socket& s : sockets) {
    if (s.path.size() <= kMaxSocketPathBytes) continue;
    std::string fix = s.fix;
    if (fix == dir_fix) {
      size_t over = s.path.size() - kMaxSocketPathBytes;
      size_t most = config.data_dir.size() > over ? config.data_dir.size() - over : 0;
      fix +=
          std::to_string(most) + " bytes (it has " + std::to_string(config.data_dir.size()) + ")";
    }
    problems.push_back(s.what + " " + s.path + " is " + std::to_string(s.path.size()) +
                       " bytes, over the " + std::to_string(kMaxSocketPathBytes) +
                       " a unix socket path may have: " + fix);
  }
  return problems;
}

std::string EmbeddedDatabaseUrl(const std::string& socket_dir, const std::string& database,
                                const std::string& role) {
  return "postgresql:///" + PercentEncode(database) + "?host=" + PercentEncode(socket_dir) +
         "&user=" + PercentEncode(role);
}

std::string EmbeddedDatabaseUrl(const std::string& socket_dir, const std::string& database,
                                const std::string& role, const std::string& password) {
  return "postgresql://" + PercentEncode(role) + ":" + PercentEncode(password) + "@/" +
         PercentEncode(database) + "?host=" + PercentEncode(socket_dir);
}

std::string RedactedDatabaseUrl(const std::string& url) {
  std::string out = url;
  // A URI's userinfo: scheme://user:password@host...
  if (auto scheme = out.find("://"); scheme != std::string::npos) {
    size_t start = scheme + 3;
    size_t host_end = std::min(out.find_first_of("/?", start), out.size());
    size_t at = out.rfind('@', host_end);
    size_t colon = out.find(':', start);
    if (at != std::string::npos && at >= start && colon < at) {
      out.replace(colon + 1, at - colon - 1, "<redacted>");
    }
  }
  // password=... as a URI parameter or a keyword (possibly quoted).
  constexpr std::string_view kKey = "password=";
  for (size_t at = out.find(kKey); at != std::string::npos; at = out.find(kKey, at + 1)) {
    if (at > 0 && out[at - 1] != ' ' && out[at - 1] != '?' && out[at - 1] != '&') continue;
    size_t value = at + kKey.size();
    size_t end = std::min(out.find_first_of(" &", value), out.size());
    if (value < out.size() && out[value] == '\'') {
      size_t close = out.find('\'', value + 1);
      end = close == std::string::npos ? out.size() : close + 1;
    }
    out.replace(value, end - value, "<redacted>");
  }
  return out;
}

Result<AppEnvironment> AppEnvironmentFor(const AppDatabaseAddress& database,
                                         const std::string& store_socket) {
  AppEnvironment env;
  if (!database.url.empty()) {
    env.vars.emplace_back("DATABASE_URL", database.url);
    env.vars.emplace_back("SKY_DB_PATH", database.url);
  } else if (!database.socket_dir.empty()) {
    std::string url = EmbeddedDatabaseUrl(database.socket_dir, database.database, database.role);
    env.vars.emplace_back("DATABASE_URL", url);
    env.vars.emplace_back("SKY_DB_PATH", url);
    env.vars.emplace_back("PGHOST", database.socket_dir);
    env.vars.emplace_back("PGPORT", "5432");
    env.vars.emplace_back("PGDATABASE", database.database);
    env.vars.emplace_back("PGUSER", database.role);
  }
  env.vars.emplace_back("SKY_LIVE_STORE", "redis");
  env.vars.emplace_back("SKY_LIVE_STORE_PATH", store_socket);
  env.vars.emplace_back("REDIS_URL", "unix://" + store_socket);
  for (const auto& [name, value] : env.vars) {
    if (!IsValidUtf8(value) || value.find('\n') != std::string::npos) {
      return Error::InvalidArgument(name + " would not be valid UTF-8 on one line; choose a " +
                                    "data_dir and socket path in UTF-8");
    }
  }
  return env;
}

AppDatabaseAddress ConfiguredAppDatabase(const Config& config) {
  if (config.store.kind == StoreKind::kMemory) return {};
  if (!config.store.database_url.empty()) return {config.store.database_url, "", "", ""};
  return {"", DataDirLayout::For(WithAbsoluteDataDir(config).data_dir).run, config.app.database,
          config.app.role};
}

Result<AppEnvironment> AppEnvironmentFor(const Config& config) {
  Config c = WithAbsoluteDataDir(config);
  return AppEnvironmentFor(ConfiguredAppDatabase(c), StoreSocketPath(c));
}

std::string RenderShellEnvironment(const AppEnvironment& env) {
  std::string out;
  for (const auto& [name, value] : env.vars) {
    out += "export " + name + "='";
    for (char c : value) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += "'\n";
  }
  return out;
}

std::string RenderSystemdEnvironment(const AppEnvironment& env) {
  std::string out;
  for (const auto& [name, value] : env.vars) {
    out += name + "=\"";
    for (char c : value) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += "\"\n";
  }
  return out;
}

std::string RenderJsonEnvironment(const AppEnvironment& env) {
  std::string out = "{";
  for (const auto& [name, value] : env.vars) {
    if (out.size() > 1) out += ",";
    out += JsonString(name) + ":" + JsonString(value);
  }
  return out + "}\n";
}

}  // namespace skydb
