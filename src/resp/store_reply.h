// A StoreReply (the hash and set commands' results, include/skydb/store.h) encoded in the
// client's protocol, and an upper bound on its bytes (claimed from the reply budget before it is
// built). Thread-safety: pure functions.
#pragma once

#include <string>

#include "resp/encoder.h"
#include "skydb/store.h"

namespace skydb::resp {

void AppendStoreReply(std::string& out, const StoreReply& r, Proto proto);
std::string EncodeStoreReply(const StoreReply& r, Proto proto);
size_t StoreReplyBytes(const StoreReply& r);

}  // namespace skydb::resp
