#include "embed/embedded_config.h"

#include <filesystem>
#include <system_error>

namespace skydb::embed {
namespace {

constexpr char kWhat[] = "skydb::Embedded: ";

Result<std::string> AbsoluteDataDir(const std::string& dir) {
  if (dir.empty()) {
    return Error::InvalidArgument(std::string(kWhat) +
                                  "EmbeddedOptions.data_dir is empty; name the directory "
                                  "skydb keeps its state in (created when missing)");
  }
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(dir, ec);
  if (ec) return ErrnoError(std::string(kWhat) + "cannot make " + dir + " absolute", ec.value());
  return absolute.lexically_normal().string();
}

Status AddSettings(const std::vector<std::string>& settings, ConfigInputs& inputs) {
  for (const std::string& setting : settings) {
    auto eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error::InvalidArgument(std::string(kWhat) + "setting \"" + setting +
                                    "\" is not key=value (e.g. store.durability=async)");
    }
    inputs.flags.emplace_back(setting.substr(0, eq), setting.substr(eq + 1));
  }
  return Ok();
}

}  // namespace

Result<Config> EmbeddedConfig(const EmbeddedOptions& options) {
  SKYDB_ASSIGN_OR_RETURN(std::string data_dir, AbsoluteDataDir(options.data_dir));
  ConfigInputs inputs;
  inputs.file = options.config_file;
  inputs.flags.emplace_back("data_dir", data_dir);
  if (!options.database_url.empty()) {
    inputs.flags.emplace_back("store.database_url", options.database_url);
  }
  inputs.flags.emplace_back("log.level", options.log_level);
  SKYDB_RETURN_IF_ERROR(AddSettings(options.settings, inputs));
  Result<LoadedConfig> loaded = LoadConfigWithOrigins(inputs);
  if (!loaded.ok()) return std::move(loaded).error().Within("skydb::Embedded");
  if (loaded->OriginOf("http.port").source == ConfigSource::kDefault &&
      loaded->OriginOf("http.listen").source == ConfigSource::kDefault) {
    loaded->config.http.port = 0;
  }
  return std::move(loaded->config);
}

Status RefuseRoot(uid_t effective_uid) {
  if (effective_uid != 0) return Ok();
  return Error::Permission(std::string(kWhat) +
                           "refusing to start as root: PostgreSQL will not run as root, and a "
                           "library cannot drop root for the app it runs in; run the app as an "
                           "unprivileged user, or start it with `skydb run`, which drops root "
                           "before it starts the app");
}

}  // namespace skydb::embed
