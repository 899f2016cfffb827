// The carrier's statements: binary parameters, named with their schema, prepared once per
// connection.
#include "pgconn/pubsub_sql.h"

namespace skydb::pg::pubsub {
namespace {

constexpr unsigned kTextOid = 25;
constexpr unsigned kTextArrayOid = 1009;

#define SKYDB_ALIVE(ms) "d.heartbeat_at > now() - " ms "::float8 * interval '1 millisecond'"
#define SKYDB_DIGEST_IN(names) \
  "s.digest = ANY (ARRAY(SELECT sha256(c) FROM unnest(" names "::bytea[]) AS c))"
#define SKYDB_REMOTE                                                                              \
  " FROM public.skydb_pubsub_subscriptions s"                                                     \
  " JOIN public.skydb_pubsub_daemons d ON d.id = s.daemon WHERE s.daemon <> $1 AND " SKYDB_ALIVE( \
      "$2")

const Statement kTouch{"skydb_pubsub_touch",
                       "UPDATE public.skydb_pubsub_daemons SET heartbeat_at = now() WHERE id = $1",
                       {kInt8Oid}};
const Statement kUpsertDaemon{
    "skydb_pubsub_upsert_daemon",
    "INSERT INTO public.skydb_pubsub_daemons (id, heartbeat_at, description)"
    " VALUES ($1, now(), $2) ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()",
    {kInt8Oid, kTextOid}};
const Statement kForgetSubscriptions{
    "skydb_pubsub_forget",
    "DELETE FROM public.skydb_pubsub_subscriptions WHERE daemon = $1",
    {kInt8Oid}};
const Statement kForgetDaemon{"skydb_pubsub_forget_daemon",
                              "DELETE FROM public.skydb_pubsub_daemons WHERE id = $1",
                              {kInt8Oid}};
// Counts: a 0 deletes its name, any other count is upserted.
const Statement kRecord{
    "skydb_pubsub_record",
    "WITH t AS (SELECT p <> 0 AS pattern, n AS name, c AS subscribers"
    "   FROM unnest($2::int8[], $3::bytea[], $4::int8[]) AS t(p, n, c)),"
    " gone AS (DELETE FROM public.skydb_pubsub_subscriptions s USING t"
    "   WHERE s.daemon = $1 AND s.pattern = t.pattern AND s.digest = sha256(t.name)"
    "   AND t.subscribers = 0)"
    " INSERT INTO public.skydb_pubsub_subscriptions (daemon, pattern, name, subscribers)"
    " SELECT $1, pattern, name, subscribers FROM t WHERE subscribers > 0"
    " ON CONFLICT (daemon, pattern, digest) DO UPDATE SET subscribers = EXCLUDED.subscribers",
    {kInt8Oid, kInt8ArrayOid, kByteaArrayOid, kInt8ArrayOid}};
const Statement kReach{
    "skydb_pubsub_reach",
    "SELECT s.daemon, s.pattern, s.name, s.subscribers" SKYDB_REMOTE
    " AND NOT s.pattern AND " SKYDB_DIGEST_IN(
        "$3") " UNION ALL SELECT s.daemon, s.pattern, s.name, s.subscribers" SKYDB_REMOTE
              " AND s.pattern",
    {kInt8Oid, kInt8Oid, kByteaArrayOid}};
const Statement kSend{
    "skydb_pubsub_send",
    "SELECT public.skydb_pubsub_publish($1, $2, $3, $4, $5, $6)",
    {kInt8Oid, kInt8ArrayOid, kInt8ArrayOid, kByteaArrayOid, kByteaArrayOid, kTextArrayOid}};
const Statement kRemoteAll{"skydb_pubsub_remote_all",
                           "SELECT s.name, sum(s.subscribers)::int8" SKYDB_REMOTE
                           " AND s.pattern = ($3 <> 0) GROUP BY s.name",
                           {kInt8Oid, kInt8Oid, kInt8Oid}};
const Statement kRemoteNames{
    "skydb_pubsub_remote_names",
    "SELECT s.name, sum(s.subscribers)::int8" SKYDB_REMOTE
    " AND s.pattern = ($3 <> 0) AND " SKYDB_DIGEST_IN("$4") " GROUP BY s.name",
    {kInt8Oid, kInt8Oid, kInt8Oid, kByteaArrayOid}};
const Statement kTake{"skydb_pubsub_take",
                      "SELECT out_publisher, out_seq, out_channel, out_message"
                      " FROM public.skydb_pubsub_take($1, $2)",
                      {kInt8ArrayOid, kInt8ArrayOid}};
const Statement kSweepMessages{"skydb_pubsub_sweep_messages",
                               "DELETE FROM public.skydb_pubsub_messages"
                               " WHERE created_at < now() - $1::float8 * interval '1 millisecond'",
                               {kInt8Oid}};
// Silent daemons, with their subscriptions; and subscriptions left without a daemon row.
const Statement kSweepDaemons{
    "skydb_pubsub_sweep_daemons",
    "WITH dead AS (DELETE FROM public.skydb_pubsub_daemons"
    "   WHERE heartbeat_at < now() - $1::float8 * interval '1 millisecond' RETURNING id)"
    " DELETE FROM public.skydb_pubsub_subscriptions s WHERE s.daemon IN (SELECT id FROM dead)"
    " OR NOT EXISTS (SELECT 1 FROM public.skydb_pubsub_daemons d WHERE d.id = s.daemon)",
    {kInt8Oid}};

#undef SKYDB_REMOTE
#undef SKYDB_DIGEST_IN
#undef SKYDB_ALIVE

Status Ran(Result<QueryResult> result) {
  if (!result.ok()) return std::move(result).error();
  return Ok();
}

std::string Id(uint64_t id) { return Int8Param(static_cast<int64_t>(id)); }
std::string Millis(milliseconds ms) { return Int8Param(ms.count()); }

// The three arrays of a set of counts: pattern (0/1), name, subscribers.
std::vector<std::string> CountArrays(const std::vector<SubscriptionCount>& counts) {
  BinaryArray patterns(kInt8Oid), names(kByteaOid), subscribers(kInt8Oid);
  for (const auto& c : counts) {
    patterns.AddInt64(c.pattern ? 1 : 0);
    names.Add(c.name);
    subscribers.AddInt64(static_cast<int64_t>(c.subscribers));
  }
  return {std::move(patterns).Encode(), std::move(names).Encode(), std::move(subscribers).Encode()};
}

std::string ByteaArray(const std::vector<std::string>& values) {
  BinaryArray array(kByteaOid);
  for (const auto& v : values) array.Add(v);
  return std::move(array).Encode();
}

}  // namespace

Status PrepareSession(Connection& conn) { return conn.Run("SET synchronous_commit = off"); }

Result<bool> Heartbeat(Connection& conn, uint64_t me, const std::string& description) {
  SKYDB_ASSIGN_OR_RETURN(auto touched, conn.ExecBinary(kTouch, {Id(me)}));
  if (touched.AffectedRows() > 0) return false;
  SKYDB_RETURN_IF_ERROR(conn.ExecBinary(kUpsertDaemon, {Id(me), description}));
  return true;
}

Status Register(Connection& conn, uint64_t me, const std::string& description,
                const std::vector<SubscriptionCount>& all) {
  return conn.InTransaction([&](Connection& c) -> Status {
    SKYDB_RETURN_IF_ERROR(c.ExecBinary(kUpsertDaemon, {Id(me), description}));
    SKYDB_RETURN_IF_ERROR(c.ExecBinary(kForgetSubscriptions, {Id(me)}));
    if (all.empty()) return Ok();
    auto arrays = CountArrays(all);
    return Ran(c.ExecBinary(kRecord, {Id(me), arrays[0], arrays[1], arrays[2]}));
  });
}

Status Deregister(Connection& conn, uint64_t me) {
  return conn.InTransaction([&](Connection& c) -> Status {
    SKYDB_RETURN_IF_ERROR(c.ExecBinary(kForgetSubscriptions, {Id(me)}));
    return Ran(c.ExecBinary(kForgetDaemon, {Id(me)}));
  });
}

Status RecordCounts(Connection& conn, uint64_t me, const std::vector<SubscriptionCount>& counts) {
  if (counts.empty()) return Ok();
  auto arrays = CountArrays(counts);
  return Ran(conn.ExecBinary(kRecord, {Id(me), arrays[0], arrays[1], arrays[2]}));
}

Result<std::vector<RegistryRow>> ReadReach(Connection& conn, uint64_t me, milliseconds alive,
                                           const std::vector<std::string_view>& channels) {
  BinaryArray names(kByteaOid);
  for (std::string_view c : channels) names.Add(c);
  SKYDB_ASSIGN_OR_RETURN(
      auto rows, conn.ExecBinary(kReach, {Id(me), Millis(alive), std::move(names).Encode()}));
  std::vector<RegistryRow> out;
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int r = 0; r < rows.rows(); ++r) {
    out.push_back({static_cast<uint64_t>(rows.Int8(r, 0)), rows.Bool(r, 1),
                   std::string(rows.Bytes(r, 2)), static_cast<uint64_t>(rows.Int8(r, 3))});
  }
  return out;
}

Status Send(Connection& conn, uint64_t me, const EncodedBatch& batch) {
  BinaryArray seqs(kInt8Oid), readers(kInt8Oid), channels(kByteaOid), messages(kByteaOid);
  size_t bytes = 0;
  for (const auto& row : batch.rows) bytes += row.channel.size() + row.message.size();
  messages.Reserve(batch.rows.size(), bytes);
  for (const auto& row : batch.rows) {
    seqs.AddInt64(static_cast<int64_t>(row.seq));
    readers.AddInt64(static_cast<int64_t>(row.readers));
    channels.Add(row.channel);
    messages.Add(row.message);
  }
  BinaryArray payloads(kTextOid);
  for (const auto& p : batch.payloads) payloads.Add(p);
  return Ran(conn.ExecBinary(kSend, {Id(me), std::move(seqs).Encode(), std::move(readers).Encode(),
                                     std::move(channels).Encode(), std::move(messages).Encode(),
                                     std::move(payloads).Encode()}));
}

Result<std::vector<SubscriptionCount>> ReadRemote(
    Connection& conn, uint64_t me, milliseconds alive, bool patterns,
    const std::optional<std::vector<std::string>>& names) {
  std::vector<std::string> params = {Id(me), Millis(alive), Int8Param(patterns ? 1 : 0)};
  if (names) params.push_back(ByteaArray(*names));
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.ExecBinary(names ? kRemoteNames : kRemoteAll, params));
  std::vector<SubscriptionCount> out;
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int r = 0; r < rows.rows(); ++r) {
    out.push_back(
        {patterns, std::string(rows.Bytes(r, 0)), static_cast<uint64_t>(rows.Int8(r, 1))});
  }
  return out;
}

Result<std::vector<Taken>> Take(Connection& conn,
                                const std::vector<std::pair<uint64_t, uint64_t>>& keys) {
  BinaryArray publishers(kInt8Oid), seqs(kInt8Oid);
  for (auto [publisher, seq] : keys) {
    publishers.AddInt64(static_cast<int64_t>(publisher));
    seqs.AddInt64(static_cast<int64_t>(seq));
  }
  SKYDB_ASSIGN_OR_RETURN(auto rows, conn.ExecBinary(kTake, {std::move(publishers).Encode(),
                                                            std::move(seqs).Encode()}));
  std::vector<Taken> out;
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int r = 0; r < rows.rows(); ++r) {
    out.push_back({static_cast<uint64_t>(rows.Int8(r, 0)), static_cast<uint64_t>(rows.Int8(r, 1)),
                   std::string(rows.Bytes(r, 2)), std::string(rows.Bytes(r, 3))});
  }
  return out;
}

Status Sweep(Connection& conn, milliseconds retention, milliseconds dead) {
  SKYDB_RETURN_IF_ERROR(conn.ExecBinary(kSweepMessages, {Millis(retention)}));
  return Ran(conn.ExecBinary(kSweepDaemons, {Millis(dead)}));
}

}  // namespace skydb::pg::pubsub
