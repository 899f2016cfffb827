// What skydb::Embedded (include/skydb/embedded.h) decides before anything starts, as pure
// functions: the configuration its options name, and the refusal to run as root.
//
// Thread-safety: pure functions (EmbeddedConfig reads the named config file).
// Failure: one sentence naming the option or key that is wrong and what to do.
#pragma once

#include <sys/types.h>

#include "skydb/config.h"
#include "skydb/embedded.h"
#include "skydb/result.h"

namespace skydb::embed {

// Defaults < config_file < data_dir, database_url, log_level < settings, validated by the
// configuration table like every other source. The HTTP endpoints stay off (http.port = 0)
// unless the file or a setting names http.port or http.listen: an app embedding skydb must not
// take port 9733 from a `skydb serve` on the same host.
Result<Config> EmbeddedConfig(const EmbeddedOptions& options);

// Permission error when `effective_uid` is root: PostgreSQL refuses to run as root, and the
// library, which shares its process with the app, cannot drop root for it.
Status RefuseRoot(uid_t effective_uid);

}  // namespace skydb::embed
