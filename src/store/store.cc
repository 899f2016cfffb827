#include "skydb/store.h"

#include "store/tiered_store.h"

namespace skydb {

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kString:
      return "string";
    case ValueType::kHash:
      return "hash";
    case ValueType::kSet:
      return "set";
  }
  return "none";
}

std::unique_ptr<SessionStore> NewMemoryStore(const MemoryTierOptions& options, Clock& clock) {
  TieredOptions tiered;
  tiered.memory = options;
  auto store = std::make_unique<store::TieredStore>(tiered, clock, nullptr);
  (void)store->Start();  // memory-only start cannot fail: there is nothing to load
  return store;
}

Result<std::unique_ptr<SessionStore>> NewTieredStore(const TieredOptions& options, Clock& clock,
                                                     std::unique_ptr<DurableBackend> durable) {
  if (durable == nullptr) return Error::InvalidArgument("a tiered store needs a durable backend");
  auto store = std::make_unique<store::TieredStore>(options, clock, std::move(durable));
  SKYDB_RETURN_IF_ERROR(store->Start());
  return std::unique_ptr<SessionStore>(std::move(store));
}

}  // namespace skydb
