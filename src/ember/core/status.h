// Status and StatusOr: how a user's mistake travels up from a shape function or kernel to the Python
// exception (ember.errors.*). Codes follow TensorFlow's error codes so the Python classes map one to one.
// EMBER_DCHECK is for ember's own invariants (a bug), never for user input.
#pragma once

#include <cassert>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace ember {

enum class Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status OK() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  /// Prefixes context ("MatMul: ") as the error travels up.
  Status with_prefix(const std::string& prefix) const {
    return ok() ? *this : Status(code_, prefix + message_);
  }
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& value() const& { return *value_; }
  T* operator->() { return &*value_; }
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

namespace internal {
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace internal

template <typename... Args>
Status invalid_argument(const Args&... args) {
  return Status(Code::kInvalidArgument, internal::str_cat(args...));
}
template <typename... Args>
Status make_error(Code code, const Args&... args) {
  return Status(code, internal::str_cat(args...));
}

/// Thrown only by the C++ façade (ember.h), whose operators cannot return a Status.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)), what_(status_.to_string()) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  Status status_;
  std::string what_;
};

}  // namespace ember

#define EMBER_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::ember::Status _ember_status = (expr);        \
    if (!_ember_status.ok()) return _ember_status; \
  } while (0)

/// A user-facing check inside a function returning Status: fails with InvalidArgument and the message.
#define EMBER_CHECK(cond, ...)                                  \
  do {                                                          \
    if (!(cond)) return ::ember::invalid_argument(__VA_ARGS__); \
  } while (0)

#define EMBER_DCHECK(cond) assert(cond)
