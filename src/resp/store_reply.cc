// StoreReply (include/skydb/store.h) in RESP2 or RESP3, and the bytes it may take.
#include "resp/store_reply.h"

#include "resp/reply.h"

namespace skydb::resp {

void AppendStoreReply(std::string& out, const StoreReply& r, Proto proto) {
  switch (r.type) {
    case StoreReply::Type::kInteger:
      return AppendInteger(out, r.integer);
    case StoreReply::Type::kBulk:
      return AppendBulk(out, r.bulk);
    case StoreReply::Type::kNull:
      return AppendNull(out, proto);
    case StoreReply::Type::kStatus:
      return AppendSimple(out, r.bulk);
    case StoreReply::Type::kMap:
      AppendMapHeader(out, r.elements.size() / 2, proto);
      break;
    case StoreReply::Type::kSet:
      AppendSetHeader(out, r.elements.size(), proto);
      break;
    case StoreReply::Type::kArray:
      AppendArrayHeader(out, r.elements.size());
      break;
    case StoreReply::Type::kPairs:
      if (proto == Proto::kResp2) {
        AppendArrayHeader(out, r.elements.size());
        break;
      }
      AppendArrayHeader(out, r.elements.size() / 2);
      for (size_t i = 0; i + 1 < r.elements.size(); i += 2) {
        AppendArrayHeader(out, 2);
        AppendStoreReply(out, r.elements[i], proto);
        AppendStoreReply(out, r.elements[i + 1], proto);
      }
      return;
  }
  for (const auto& e : r.elements) AppendStoreReply(out, e, proto);
}

std::string EncodeStoreReply(const StoreReply& r, Proto proto) {
  std::string out;
  AppendStoreReply(out, r, proto);
  return out;
}

size_t StoreReplyBytes(const StoreReply& r) {
  size_t bytes = BulkReplySize(r.bulk.size());
  if (r.type == StoreReply::Type::kPairs) bytes += r.elements.size() * 2;  // the pairs' "*2\r\n"
  for (const auto& e : r.elements) bytes += StoreReplyBytes(e);
  return bytes;
}

}  // namespace skydb::resp
