#include "skydb/store.h"

#include "store/engine.h"

namespace skydb {

std::unique_ptr<SessionStore> NewMemoryStore(const MemoryTierOptions& options, Clock& clock) {
  TieredOptions tiered;
  tiered.memory = options;
  auto engine = std::make_unique<store::Engine>(tiered, clock, nullptr);
  (void)engine->Start();  // memory-only start cannot fail: there is nothing to load
  return engine;
}

Result<std::unique_ptr<SessionStore>> NewTieredStore(const TieredOptions& options, Clock& clock,
                                                     std::unique_ptr<DurableBackend> durable) {
  if (durable == nullptr) return Error::InvalidArgument("a tiered store needs a durable backend");
  auto engine = std::make_unique<store::Engine>(options, clock, std::move(durable));
  SKYDB_RETURN_IF_ERROR(engine->Start());
  return std::unique_ptr<SessionStore>(std::move(engine));
}

}  // namespace skydb
