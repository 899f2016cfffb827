// From configuration to an open store: the one place StoreConfig becomes TieredOptions.
#include <algorithm>

#include "skydb/durable.h"
#include "skydb/store.h"

namespace skydb {

MemoryTierOptions MemoryOptionsFrom(const StoreConfig& config) {
  MemoryTierOptions o;
  o.default_ttl = config.default_ttl;
  o.max_value_bytes = config.max_value_bytes;
  o.idle_evict = config.idle_evict;
  o.max_memory_bytes = config.max_memory;
  return o;
}

bool SharedCoherence(const StoreConfig& config) {
  return config.coherence == Coherence::kShared ||
         (config.coherence == Coherence::kAuto && !config.database_url.empty());
}

TieredOptions TieredOptionsFrom(const StoreConfig& config, int store_pool, int store_writers,
                                bool shared) {
  TieredOptions o;
  o.memory = MemoryOptionsFrom(config);
  o.durability = config.durability;
  o.flush_interval = config.flush_interval;
  o.async_max_lag = config.async_max_lag;
  o.write_timeout = config.write_timeout;
  o.queue_max_writes = static_cast<size_t>(config.queue_max_writes);
  o.batch_max_rows = static_cast<size_t>(config.batch_max_rows);
  o.ttl_persist_slack = config.ttl_persist_slack;
  // The store pool: one loader, one sweeper, and up to the rest as writers (at least one).
  // One loader (shared coherence reads every key through it, in order: tiered_store.cc), and
  // with shared coherence exact deadlines (other daemons read the persisted one).
  o.shared = shared;
  o.readers = 1;
  o.writers = std::max(1, store_pool - 1 - o.readers);
  if (store_writers > 0) o.writers = std::min(o.writers, store_writers);
  if (shared) o.ttl_persist_slack = std::chrono::milliseconds(0);
  return o;
}

Result<std::unique_ptr<SessionStore>> OpenSessionStore(const StoreOpenRequest& request,
                                                       Clock& clock) {
  if (request.config.kind == StoreKind::kMemory) {
    return NewMemoryStore(MemoryOptionsFrom(request.config), clock);
  }
  TieredOptions options =
      TieredOptionsFrom(request.config, request.store_pool, request.store_writers, request.shared);
  // Under transaction pooling the sweeper's session lock needs the direct connection that
  // pub/sub's LISTEN uses.
  auto durable = NewPostgresDurable(request.conninfo, request.description, options.writers,
                                    options.readers, request.config.pooler == Pooler::kTransaction,
                                    request.config.pubsub_database_url);
  auto store = NewTieredStore(options, clock, std::move(durable));
  if (!store.ok()) {
    return std::move(store).error().Within("cannot open the PostgreSQL session store (" +
                                           request.description + ")");
  }
  return store;
}

}  // namespace skydb
