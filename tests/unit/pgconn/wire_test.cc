// PostgreSQL's binary wire format as pgconn writes and reads it, with no server: parameters
// byte for byte, and values decoded from results libpq builds locally.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "pgconn/pgconn.h"

namespace skydb::pg {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out += static_cast<char>(b);
  return out;
}

TEST(WireTest, Int8ParamIsEightBytesInNetworkOrder) {
  EXPECT_EQ(Int8Param(1), Bytes({0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(Int8Param(-2), Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}));
  EXPECT_EQ(Int8Param(0x0102030405060708), Bytes({1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(WireTest, EmptyArrayHasNoDimensions) {
  EXPECT_EQ(BinaryArray(kByteaOid).Encode(), Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 17}));
}

TEST(WireTest, ByteaArrayCarriesEveryByteAsIs) {
  BinaryArray a(kByteaOid);
  a.Add(std::string("\0'", 2));
  a.Add("");
  EXPECT_FALSE(a.empty());
  // clang-format off
  EXPECT_EQ(a.Encode(), Bytes({0, 0, 0, 1,  0, 0, 0, 0,  0, 0, 0, 17,  // 1 dim, no NULLs, bytea
                               0, 0, 0, 2,  0, 0, 0, 1,                // 2 elements from 1
                               0, 0, 0, 2,  0, '\'',                   // "\0'"
                               0, 0, 0, 0}));                          // ""
  // clang-format on
}

TEST(WireTest, Int8ArrayElementsAreEightBytesEach) {
  BinaryArray a(kInt8Oid);
  a.AddInt64(-1);
  EXPECT_EQ(a.Encode(),
            Bytes({0, 0, 0, 1, 0, 0, 0, 0, 0,    0,    0,    20,   0,    0,    0,    1,
                   0, 0, 0, 1, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST(WireTest, AnArrayEncodesAgainAfterMoreElementsAndHandsOverTheSameBytes) {
  BinaryArray a(kByteaOid);
  a.Reserve(2, 2);
  a.Add("x");
  std::string one = a.Encode();
  a.Add("y");
  std::string copied = a.Encode();
  std::string handed_over = std::move(a).Encode();
  EXPECT_EQ(one, Bytes({0, 0, 0, 1, 0,  0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 1, 0, 0, 0, 1,  //
                        0, 0, 0, 1, 'x'}));
  EXPECT_EQ(copied, Bytes({0, 0, 0, 1, 0,   0, 0, 0, 0, 0,  0, 17, 0, 0, 0, 2, 0, 0, 0, 1,  //
                           0, 0, 0, 1, 'x', 0, 0, 0, 1, 'y'}));
  EXPECT_EQ(handed_over, copied);
  EXPECT_TRUE(a.empty());  // handing over leaves an empty array, which may be filled again
  EXPECT_EQ(a.Encode(), BinaryArray(kByteaOid).Encode());
  a.Add("x");
  EXPECT_EQ(std::move(a).Encode(), one);
}

// A one-row result of binary columns, built by libpq without a server.
QueryResult BinaryRow(const std::vector<std::string>& values) {
  PGresult* res = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  std::vector<PGresAttDesc> columns(values.size());
  for (auto& c : columns) {
    c.name = const_cast<char*>("c");
    c.format = 1;
  }
  EXPECT_EQ(PQsetResultAttrs(res, static_cast<int>(columns.size()), columns.data()), 1);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(PQsetvalue(res, 0, static_cast<int>(i), const_cast<char*>(values[i].data()),
                         static_cast<int>(values[i].size())),
              1);
  }
  return QueryResult(res);
}

TEST(WireTest, ValuesDecode) {
  QueryResult r =
      BinaryRow({Int8Param(-5), Bytes({0, 0, 1, 0}), Bytes({1}), std::string("a\0b", 3)});
  EXPECT_EQ(r.rows(), 1);
  EXPECT_EQ(r.Int8(0, 0), -5);
  EXPECT_EQ(r.Int4(0, 1), 256);
  EXPECT_TRUE(r.Bool(0, 2));
  EXPECT_EQ(r.Bytes(0, 3), std::string_view("a\0b", 3));
}

// A value of the wrong size (a column not of the type asked for) reads as 0, never past its end.
TEST(WireTest, ValuesOfTheWrongSizeReadAsZero) {
  QueryResult r = BinaryRow({Bytes({1, 2, 3}), Bytes({1, 2, 3, 4, 5, 6, 7, 8}), ""});
  EXPECT_EQ(r.Int8(0, 0), 0);
  EXPECT_EQ(r.Int4(0, 1), 0);
  EXPECT_FALSE(r.Bool(0, 2));
}

}  // namespace
}  // namespace skydb::pg
