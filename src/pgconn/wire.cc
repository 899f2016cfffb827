// PostgreSQL's binary wire format, both ways: parameters out (int8, arrays), values in
// (QueryResult's accessors). Network byte order throughout.
#include <arpa/inet.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>

#include "pgconn/pgconn.h"

namespace skydb::pg {
namespace {

void PutInt32(std::string& buf, int32_t v) {
  uint32_t n = htonl(static_cast<uint32_t>(v));
  buf.append(reinterpret_cast<const char*>(&n), 4);
}

void PutInt64(std::string& buf, int64_t v) {
  uint32_t hi = htonl(static_cast<uint32_t>(static_cast<uint64_t>(v) >> 32));
  uint32_t lo = htonl(static_cast<uint32_t>(static_cast<uint64_t>(v) & 0xffffffffu));
  buf.append(reinterpret_cast<const char*>(&hi), 4);
  buf.append(reinterpret_cast<const char*>(&lo), 4);
}

constexpr size_t kArrayHeaderBytes = 20;  // dimensions, NULL flag, OID, length, lower bound
constexpr size_t kArrayCountOffset = 12;  // where the length is

void SetArrayCount(std::string& encoded, int32_t count) {
  uint32_t n = htonl(static_cast<uint32_t>(count));
  std::memcpy(encoded.data() + kArrayCountOffset, &n, 4);
}

}  // namespace

std::string Int8Param(int64_t v) {
  std::string s;
  PutInt64(s, v);
  return s;
}

BinaryArray::BinaryArray(unsigned element_oid) : oid_(element_oid) {}

void BinaryArray::Reserve(size_t elements, size_t bytes) {
  encoded_.reserve((count_ == 0 ? kArrayHeaderBytes : encoded_.size()) + 4 * elements + bytes);
}

void BinaryArray::Reuse(std::string buffer) {
  if (count_ != 0) return;
  encoded_ = std::move(buffer);
  encoded_.clear();
}

void BinaryArray::StartElement(int32_t length) {
  if (count_ == 0) {  // the header comes with the first element
    encoded_.clear();
    PutInt32(encoded_, 1);  // dimensions
    PutInt32(encoded_, 0);  // no NULLs
    PutInt32(encoded_, static_cast<int32_t>(oid_));
    PutInt32(encoded_, 0);  // elements in the one dimension: kept current below
    PutInt32(encoded_, 1);  // its lower bound
  }
  SetArrayCount(encoded_, ++count_);
  PutInt32(encoded_, length);
}

void BinaryArray::Add(std::string_view bytes) {
  StartElement(static_cast<int32_t>(bytes.size()));
  encoded_.append(bytes);
}

void BinaryArray::AddInt64(int64_t v) {
  StartElement(8);
  PutInt64(encoded_, v);
}

std::string BinaryArray::Encode() const& { return BinaryArray(*this).Encode(); }

std::string BinaryArray::Encode() && {
  std::string out;
  if (count_ == 0) {  // no dimension
    PutInt32(out, 0);
    PutInt32(out, 0);
    PutInt32(out, static_cast<int32_t>(oid_));
  } else {
    out = std::move(encoded_);
  }
  count_ = 0;  // left empty, ready for reuse
  encoded_.clear();
  return out;
}

QueryResult::QueryResult(pg_result* res) : res_(res) {}
void QueryResult::Free::operator()(pg_result* r) const { PQclear(r); }
int QueryResult::rows() const { return PQntuples(res_.get()); }
int QueryResult::columns() const { return PQnfields(res_.get()); }
bool QueryResult::IsNull(int row, int col) const { return PQgetisnull(res_.get(), row, col); }
std::string QueryResult::Get(int row, int col) const {
  return IsNull(row, col) ? "" : std::string(PQgetvalue(res_.get(), row, col));
}

std::string_view QueryResult::Bytes(int row, int col) const {
  return std::string_view(PQgetvalue(res_.get(), row, col),
                          static_cast<size_t>(PQgetlength(res_.get(), row, col)));
}

int64_t QueryResult::Int8(int row, int col) const {
  std::string_view v = Bytes(row, col);
  if (v.size() != 8) return 0;
  uint32_t hi, lo;
  std::memcpy(&hi, v.data(), 4);
  std::memcpy(&lo, v.data() + 4, 4);
  return static_cast<int64_t>((static_cast<uint64_t>(ntohl(hi)) << 32) | ntohl(lo));
}

int32_t QueryResult::Int4(int row, int col) const {
  std::string_view v = Bytes(row, col);
  if (v.size() != 4) return 0;
  uint32_t n;
  std::memcpy(&n, v.data(), 4);
  return static_cast<int32_t>(ntohl(n));
}

bool QueryResult::Bool(int row, int col) const {
  std::string_view v = Bytes(row, col);
  return v.size() == 1 && v[0] != 0;
}

long QueryResult::AffectedRows() const {
  const char* n = PQcmdTuples(res_.get());
  return (n != nullptr && *n != '\0') ? std::strtol(n, nullptr, 10) : 0;
}

}  // namespace skydb::pg
