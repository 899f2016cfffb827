#include "skydb/result.h"

#include <cstring>

namespace skydb {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kPermission:
      return "permission";
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kVersionMismatch:
      return "version_mismatch";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

Error ErrnoError(const std::string& what, int err) {
  std::string message = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return Error::NotFound(message);
    case EACCES:
    case EPERM:
      return Error::Permission(message);
    case EEXIST:
    case EBUSY:
    case EWOULDBLOCK:
      return Error::Conflict(message);
    case ETIMEDOUT:
      return Error::Timeout(message);
    default:
      return Error::Io(message);
  }
}

}  // namespace skydb
