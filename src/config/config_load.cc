// Merging: defaults, then the file, then the environment, then flags — each value checked the
// same way whichever source it came from, and its origin recorded for `config show`.
#include <algorithm>
#include <cctype>
#include <set>

#include "base/strings.h"
#include "config/config_value.h"
#include "config/toml_file.h"
#include "skydb/config.h"

namespace skydb {
namespace {

using namespace config_internal;  // NOLINT(google-build-using-namespace): our own internals

using Entries = std::map<std::string, std::string>;

// Environment variables with the SKYDB_ prefix that are not configuration keys on purpose.
// SKYDB_PARENT_PID is child mode's parent (`skydb serve --parent-pid`), not a setting.
bool IsReservedVariable(const std::string& name) {
  return name == "SKYDB_CONFIG" || name == "SKYDB_PARENT_PID" || StartsWith(name, "SKYDB_TEST_");
}

bool IsConfigVariable(const std::string& name) {
  return StartsWith(name, "SKYDB_") || name == "SKY_POSTGRES_BIN" ||
         name == "SKY_DB_MAX_OPEN_CONNS";
}

// SKYDB_LOG_LEVEL → log.level; SKYDB_POSTGRES_SETTINGS_WORK_MEM → postgres.settings, work_mem.
KeyRef KeyForVariable(const std::string& variable) {
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.env == variable) return {&key, ""};
  }
  for (const ConfigKey& key : ConfigKeys()) {
    size_t placeholder = key.env.find('<');
    if (placeholder == std::string::npos) continue;
    std::string prefix = key.env.substr(0, placeholder);
    if (StartsWith(variable, prefix) && variable.size() > prefix.size()) {
      return {&key, ToLower(variable.substr(prefix.size()))};
    }
  }
  return {};
}

std::vector<std::string> KnownVariables() {
  std::vector<std::string> names;
  for (const ConfigKey& key : ConfigKeys()) names.push_back(key.env);
  return names;
}

Error UnknownVariable(const std::string& variable) {
  std::string message = "environment variable " + variable + " is not a skydb setting (";
  std::string guess = ClosestName(variable, KnownVariables());
  if (!guess.empty()) message += "did you mean " + guess + "? ";
  message +=
      "SKYDB_CONFIG names the file, SKYDB_PARENT_PID child mode's parent, SKYDB_TEST_* "
      "is reserved); accepted: " +
      Join(KnownVariables(), ", ");
  return Error::InvalidArgument(std::move(message));
}

std::vector<std::string> KnownKeyNames() {
  std::vector<std::string> names;
  for (const ConfigKey& key : ConfigKeys()) {
    names.push_back(key.type == ConfigType::kStringMap ? key.name + ".<name>" : key.name);
  }
  return names;
}

Error UnknownFlagKey(const std::string& name, const std::string& text) {
  std::string guess = ClosestName(name, KnownKeyNames());
  // A misspelt secret key ("--set resp.requirepas=...") still carries the secret.
  const ConfigKey* meant = FindConfigKey(guess);
  std::string shown = meant != nullptr ? ShownValue(*meant, text) : text;
  std::string message = "--set " + name + "=" + shown + ": unknown key '" + name + "' (";
  if (!guess.empty()) message += "did you mean '" + guess + "'? ";
  message += "see `skydb config keys`); accepted: " + Join(KnownKeyNames(), ", ");
  return Error::InvalidArgument(std::move(message));
}

class Merger {
 public:
  // Every error of the file, the walk's and the values', one per line in the file's order.
  Status ApplyFile(const ConfigFile& file) {
    loaded_.file = file.path;
    std::vector<std::pair<int, std::string>> errors = file.errors;
    for (const FileValue& v : file.values) {
      auto stored = Assign(v.ref, v.name, v.value, {ConfigSource::kFile, file.Where(v.line)});
      if (!stored.ok()) {
        errors.emplace_back(v.line, ValueError(file.Where(v.line), v.name, v.shown,
                                               stored.error().message, v.ref.key->accepted)
                                        .message);
      }
    }
    if (errors.empty()) return Ok();
    std::stable_sort(errors.begin(), errors.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> lines;
    for (auto& [line, message] : errors) lines.push_back(std::move(message));
    return Error::InvalidArgument(Join(lines, "\n"));
  }

  // std::map iterates in name order, so the first error reported does not depend on the
  // order of the process environment.
  Status ApplyEnvironment(const std::map<std::string, std::string>& environment) {
    for (const auto& [variable, text] : environment) {
      if (text.empty() || !IsConfigVariable(variable) || IsReservedVariable(variable)) continue;
      KeyRef ref = KeyForVariable(variable);
      if (ref.key == nullptr) return UnknownVariable(variable);
      std::string where = variable + "=" + ShownValue(*ref.key, text);
      SKYDB_RETURN_IF_ERROR(ApplyText(ref, where, text, {ConfigSource::kEnvironment, variable}));
    }
    return Ok();
  }

  Status ApplyFlags(const std::vector<std::pair<std::string, std::string>>& flags) {
    for (const auto& [name, text] : flags) {
      KeyRef ref = ResolveKey(name);
      if (ref.key == nullptr) return UnknownFlagKey(name, text);
      // Command flags (--data-dir) arrive as key names too, so every flag is shown as --set.
      SKYDB_RETURN_IF_ERROR(ApplyText(ref, "--set " + name + "=" + ShownValue(*ref.key, text), text,
                                      {ConfigSource::kFlag, "--set " + name}));
    }
    return Ok();
  }

  Status CheckAcrossKeys() const;
  Status CheckTls() const;

  LoadedConfig Take() && { return std::move(loaded_); }

 private:
  static std::string NameOf(const KeyRef& ref) {
    return ref.entry.empty() ? ref.key->name : ref.key->name + "." + ref.entry;
  }

  // Text from the environment or a flag; a table entry's text is its value as is.
  Status ApplyText(const KeyRef& ref, const std::string& where, const std::string& text,
                   ConfigOrigin origin) {
    std::string name = NameOf(ref);
    Result<ConfigValue> value =
        ref.entry.empty() ? ParseValueText(*ref.key, text) : Result<ConfigValue>(ConfigValue{text});
    Status stored = value.ok() ? Assign(ref, name, *value, std::move(origin))
                               : Status(std::move(value).error());
    if (!stored.ok()) {
      return ValueError(where, name, "", stored.error().message, ref.key->accepted);
    }
    return Ok();
  }

  // Checks one value and stores it; a table entry is merged into the table, not replacing it.
  Status Assign(const KeyRef& ref, const std::string& name, const ConfigValue& value,
                ConfigOrigin origin) {
    const ConfigKey& key = *ref.key;
    if (ref.entry.empty()) {
      SKYDB_RETURN_IF_ERROR(CheckValue(key, value));
      key.set(loaded_.config, value);
    } else {
      if (!IsSettingName(ref.entry)) {
        return Error::InvalidArgument("has an invalid setting name '" + ref.entry + "'");
      }
      auto entries = std::get<Entries>(key.get(loaded_.config));
      entries[ref.entry] = std::get<std::string>(value);
      key.set(loaded_.config, ConfigValue{std::move(entries)});
    }
    loaded_.origins[name] = std::move(origin);
    return Ok();
  }

  LoadedConfig loaded_;
};

// `supervisor.backoff_max = "1s" (env SKYDB_...)`, for messages about two keys at once.
std::string Described(const LoadedConfig& loaded, const std::string& name) {
  const ConfigKey& key = *FindConfigKey(name);
  ConfigOrigin origin = loaded.OriginOf(name);
  std::string from = ConfigSourceName(origin.source);
  if (!origin.detail.empty()) from += " " + origin.detail;
  return name + " = " + RenderValueToml(key, key.get(loaded.config)) + " (" + from + ")";
}

// Rules that involve more than one key; each row's own rules were checked as values arrived.
Status Merger::CheckAcrossKeys() const {
  const SupervisorConfig& s = loaded_.config.supervisor;
  if (s.backoff_max < s.backoff_initial) {
    ConfigOrigin origin = loaded_.OriginOf("supervisor.backoff_max");
    if (origin.source == ConfigSource::kDefault) {
      origin = loaded_.OriginOf("supervisor.backoff_initial");
    }
    return Error::InvalidArgument(
        origin.detail + ": " + Described(loaded_, "supervisor.backoff_max") + " is below " +
        Described(loaded_, "supervisor.backoff_initial") +
        "; accepted: supervisor.backoff_max >= supervisor.backoff_initial");
  }
  return CheckTls();
}

// A TLS listener needs the certificate and key; client certificates need the CAs to check them.
Status Merger::CheckTls() const {
  const Config& c = loaded_.config;
  std::vector<std::string> users;
  if (c.resp.tls) users.push_back("resp.tls");
  if (c.http.tls) users.push_back("http.tls");
  if (!c.postgres.tcp_bind.empty()) users.push_back("postgres.tcp_bind");
  if (c.resp.tls && c.resp.tcp_port == 0) {
    return Error::InvalidArgument(Described(loaded_, "resp.tls") +
                                  " needs a TCP listener: set resp.tcp_port (the unix socket "
                                  "stays plain)");
  }
  if (c.http.tls && c.http.listen != "tcp") {
    return Error::InvalidArgument(Described(loaded_, "http.tls") +
                                  " applies to http.listen = \"tcp\"; a unix socket stays plain");
  }
  if (!users.empty() && (c.tls.cert_file.empty() || c.tls.key_file.empty())) {
    return Error::InvalidArgument(Join(users, " and ") +
                                  " need tls.cert_file and tls.key_file (PEM files the service "
                                  "user can read)");
  }
  if (c.tls.client_certs != TlsClientCerts::kNone && c.tls.ca_file.empty()) {
    return Error::InvalidArgument(Described(loaded_, "tls.client_certs") +
                                  " needs tls.ca_file: the CAs a client certificate must chain to");
  }
  return Ok();
}

void DiffEntries(const ConfigKey& key, const Config& before, const Config& after,
                 ConfigChange& change) {
  auto old_entries = std::get<Entries>(key.get(before));
  auto new_entries = std::get<Entries>(key.get(after));
  std::set<std::string> names;
  for (const auto& [name, value] : old_entries) names.insert(name);
  for (const auto& [name, value] : new_entries) names.insert(name);
  for (const std::string& name : names) {
    auto old_it = old_entries.find(name);
    auto new_it = new_entries.find(name);
    bool same = old_it != old_entries.end() && new_it != new_entries.end() &&
                old_it->second == new_it->second;
    if (same) continue;
    change.changed.push_back(key.name + "." + name);
    if (!key.reloadable) change.need_restart.push_back(key.name + "." + name);
  }
}

}  // namespace

const char* ConfigSourceName(ConfigSource source) {
  switch (source) {
    case ConfigSource::kDefault:
      return "default";
    case ConfigSource::kFile:
      return "file";
    case ConfigSource::kEnvironment:
      return "env";
    case ConfigSource::kFlag:
      return "flag";
  }
  return "unknown";
}

ConfigOrigin LoadedConfig::OriginOf(const std::string& key) const {
  auto it = origins.find(key);
  return it == origins.end() ? ConfigOrigin{} : it->second;
}

Result<LoadedConfig> LoadConfigWithOrigins(const ConfigInputs& inputs) {
  Merger merger;
  if (!inputs.file.empty()) {
    SKYDB_ASSIGN_OR_RETURN(auto file, ReadConfigFile(inputs.file, inputs.file_must_exist));
    if (file) SKYDB_RETURN_IF_ERROR(merger.ApplyFile(*file));
  }
  SKYDB_RETURN_IF_ERROR(merger.ApplyEnvironment(inputs.environment));
  SKYDB_RETURN_IF_ERROR(merger.ApplyFlags(inputs.flags));
  SKYDB_RETURN_IF_ERROR(merger.CheckAcrossKeys());
  return std::move(merger).Take();
}

Result<Config> LoadConfig(const ConfigInputs& inputs) {
  SKYDB_ASSIGN_OR_RETURN(LoadedConfig loaded, LoadConfigWithOrigins(inputs));
  return std::move(loaded.config);
}

ConfigChange DiffConfig(const Config& before, const Config& after) {
  ConfigChange change;
  for (const ConfigKey& key : ConfigKeys()) {
    if (key.type == ConfigType::kStringMap) {
      DiffEntries(key, before, after, change);
      continue;
    }
    if (key.get(before) == key.get(after)) continue;
    change.changed.push_back(key.name);
    if (!key.reloadable) change.need_restart.push_back(key.name);
  }
  return change;
}

}  // namespace skydb
