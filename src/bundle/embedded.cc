// The bundle linked in by -DSKYDB_EMBED_BUNDLE (embedded_bundle.S). The symbols are weak, so
// a binary built without one links and sees an empty span.
#include "skydb/bundle.h"

extern "C" {
extern const unsigned char skydb_embedded_bundle_begin[] __attribute__((weak));
extern const unsigned char skydb_embedded_bundle_end[] __attribute__((weak));
}

namespace skydb {

std::span<const unsigned char> EmbeddedBundle() {
  if (skydb_embedded_bundle_begin == nullptr || skydb_embedded_bundle_end == nullptr) return {};
  return {skydb_embedded_bundle_begin, skydb_embedded_bundle_end};
}

}  // namespace skydb
