#include "skydb/result.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace skydb {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Error::InvalidArgument(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  SKYDB_ASSIGN_OR_RETURN(int half, Half(x));
  return Half(half);
}

Status CheckEven(int x) {
  SKYDB_RETURN_IF_ERROR(Half(x));
  return Ok();
}

TEST(ResultTest, CarriesValueOrError) {
  auto ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  auto bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "3 is odd");
}

TEST(ResultTest, MacrosPropagateTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).error().message, "3 is odd");
  EXPECT_TRUE(CheckEven(2).ok());
  EXPECT_EQ(CheckEven(5).error().message, "5 is odd");
}

TEST(ResultTest, WithinPrefixesContext) {
  Error e = Error::Io("disk on fire").Within("writing settings");
  EXPECT_EQ(e.message, "writing settings: disk on fire");
}

TEST(ResultTest, ErrnoErrorMapsCommonCodes) {
  EXPECT_EQ(ErrnoError("open x", ENOENT).code, ErrorCode::kNotFound);
  EXPECT_EQ(ErrnoError("open x", EACCES).code, ErrorCode::kPermission);
  EXPECT_EQ(ErrnoError("lock x", EWOULDBLOCK).code, ErrorCode::kConflict);
  EXPECT_EQ(ErrnoError("write x", ENOSPC).code, ErrorCode::kIo);
  EXPECT_NE(ErrnoError("open x", ENOENT).message.find("open x: "), std::string::npos);
}

}  // namespace
}  // namespace skydb
