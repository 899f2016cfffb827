// Result<T>: a value or an Error, the way skydb reports failure on its main paths.
//
// skydb does not throw across module boundaries. Every fallible function returns a Result<T>
// (or Status = Result<void>) whose Error carries a category and one sentence that says what
// happened and, where the user can act, what to do. Library exceptions (toml++, std::filesystem)
// are caught at the adapter that calls the library and turned into an Error there.
//
// Thread-safety: value types; no shared state.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace skydb {

// What kind of failure this is; the CLI maps it to an exit status, the log shows its name.
enum class ErrorCode {
  kInvalidArgument,  // the caller (user, config, client) asked for something malformed
  kNotFound,         // a file, binary, key or user that should exist does not
  kPermission,       // the OS or a policy refused (ownership, mode, privileges)
  kIo,               // an I/O call failed for another reason
  kConflict,         // something else already holds the resource (lock, port, directory)
  kVersionMismatch,  // binaries, cluster or schema versions disagree
  kUnavailable,      // a dependency (PostgreSQL, disk) is not there right now
  kTimeout,          // a bounded wait ran out
  kInternal,         // a bug: an invariant did not hold
};

const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  static Error InvalidArgument(std::string m) {
    return {ErrorCode::kInvalidArgument, std::move(m)};
  }
  static Error NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Error Permission(std::string m) { return {ErrorCode::kPermission, std::move(m)}; }
  static Error Io(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
  static Error Conflict(std::string m) { return {ErrorCode::kConflict, std::move(m)}; }
  static Error VersionMismatch(std::string m) {
    return {ErrorCode::kVersionMismatch, std::move(m)};
  }
  static Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }
  static Error Timeout(std::string m) { return {ErrorCode::kTimeout, std::move(m)}; }
  static Error Internal(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

  // "what went wrong: context" — prefixes this error with where it happened.
  Error Within(const std::string& context) && {
    message = context + ": " + message;
    return std::move(*this);
  }
};

// Error from errno after a failed system call: "<what>: <strerror(errno)>".
Error ErrnoError(const std::string& what, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(state_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(state_));
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error)
      : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return error_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status Ok() { return {}; }

}  // namespace skydb

// Propagates a failed Status/Result from the enclosing function.
#define SKYDB_RETURN_IF_ERROR(expr)            \
  do {                                         \
    auto skydb_status_ = (expr);               \
    if (!skydb_status_.ok()) {                 \
      return std::move(skydb_status_).error(); \
    }                                          \
  } while (false)

#define SKYDB_CONCAT_INNER_(a, b) a##b
#define SKYDB_CONCAT_(a, b) SKYDB_CONCAT_INNER_(a, b)

// `SKYDB_ASSIGN_OR_RETURN(auto x, Compute());` binds the value or returns the error.
#define SKYDB_ASSIGN_OR_RETURN(lhs, expr) \
  SKYDB_ASSIGN_OR_RETURN_IMPL_(SKYDB_CONCAT_(skydb_result_, __LINE__), lhs, expr)
#define SKYDB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) {                                   \
    return std::move(tmp).error();                   \
  }                                                  \
  lhs = std::move(tmp).value()
