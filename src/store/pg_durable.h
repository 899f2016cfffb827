// PgDurable: the DurableBackend over PostgreSQL (include/skydb/durable.h). One connection per
// group-commit writer, per loader and for the sweeper, each a pg::LazyConnection (reopened after
// a failure, left when its server turns read-only). A batch of strings is ONE statement
// (data-modifying CTEs over unnest() of binary arrays): one round trip and one COMMIT however
// many rows it carries; a batch with hash fields, a guard or a FLUSHALL is one transaction of a
// few such statements. Keys and values travel as binary bytea: every byte value round-trips.
// pg_durable.cc commits, pg_writes.cc builds the write statements, pg_reads.cc reads.
// Internal to src/store.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pgconn/pgconn.h"
#include "skydb/durable.h"

namespace skydb::store {

class PgDurable final : public DurableBackend {
 public:
  PgDurable(std::string conninfo, std::string description, int writers, int readers,
            bool transaction_pooling, const std::string& direct_conninfo);

  std::string Describe() const override { return description_; }
  DurablePoolStats PoolStats() const override;
  Result<CommitResult> Commit(int writer_index, const CommitRequest& request) override;
  Result<std::optional<DurableValue>> Read(int reader, const std::string& key,
                                           UnixMillis now) override;
  Result<std::vector<std::optional<DurableValue>>> ReadMany(int reader,
                                                            const std::vector<std::string>& keys,
                                                            UnixMillis now) override;
  Result<LiveCount> CountLive(UnixMillis now) override;
  Result<ScanReply> ScanKeys(int reader, uint64_t cursor, size_t count, UnixMillis now,
                             std::optional<ValueType> type) override;
  Status LoadIndex(UnixMillis now, const std::function<void(IndexEntry entry)>& visit) override;
  Result<int64_t> SweepExpired(UnixMillis now, int limit) override;
  Result<std::vector<std::string>> ExpiredBetween(UnixMillis after, UnixMillis upto,
                                                  int limit) override;
  Result<std::vector<ExpiredFields>> FieldsExpiredBetween(UnixMillis after, UnixMillis upto,
                                                          int limit) override;
  void StopAnnouncing(Announcing what) override;

 private:
  pg::LazyConnection& Reader(int reader) {
    return *readers_[static_cast<size_t>(reader) % readers_.size()];
  }
  // The hashes' and sets' fields among `rows` (aligned with `keys`), read on `conn`.
  Status ReadFields(pg::LazyConnection& conn, const std::vector<std::string>& keys,
                    std::vector<std::optional<DurableValue>>& rows, UnixMillis now);

  std::string description_;
  std::vector<std::unique_ptr<pg::LazyConnection>> writers_;
  // Per writer, the memory its last commit's values were sent from: a batch of large values
  // (64 sessions of 37 KB are 2.4 MB) is written into pages already mapped.
  std::vector<std::string> value_buffers_;
  std::vector<std::unique_ptr<pg::LazyConnection>> readers_;
  std::unique_ptr<pg::LazyConnection> index_;
  pg::LazyConnection sweeper_;
  const bool sweeper_lock_;  // false under transaction pooling without a direct connection
  bool holds_sweeper_lock_ = false;
  bool holds_announcer_lock_ = false;         // of expired keys
  bool holds_fields_announcer_lock_ = false;  // of hashes with expired fields
  // Whether this process is the database's sweeper (takes the lock when it is free).
  // Takes advisory lock `key` on the sweeper's session unless `held` says it has it.
  Result<bool> SessionLock(bool& held, int64_t key, const char* what);
  Result<bool> SweeperLock();
  Result<bool> AnnouncerLock(Announcing what);
};

// pg_writes.cc: a request's writes (its guards settled) as statements on `writer`: the rows in
// one statement, then the cleared keys' fields, the field deletes and the field upserts. Writes
// of a key in `left_out` are skipped (a failed guard's).
// `values`: the writer's buffer for the values' array, kept between its commits.
Status ApplyWrites(pg::LazyConnection& writer, std::string& values,
                   const DurableBackend::CommitRequest& request,
                   const std::vector<std::string>& left_out);
// Locks every guarded key's row (placeholders for the absent), checks each guard against them
// (`refused` per guard), and removes the placeholders no kept write replaces.
Status CheckGuards(pg::LazyConnection& writer, const DurableBackend::CommitRequest& request,
                   std::vector<bool>* refused);
// A row of kRead / kReadMany / kLock: data, expires_at, kind, version from column `first` on.
DurableValue RowValueAt(const pg::QueryResult& r, int row, int first);

}  // namespace skydb::store
