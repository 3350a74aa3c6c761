// Status and Result<T>: errors as values. No statewatch call throws.
//
// A Status is either OK or carries a code and a message that says what was wrong and with
// what value, e.g. `changesSince must be a non-negative integer (got "-1")`.
// "Not found" and "end of stream" are outcomes (std::optional), not errors.
//
// Thread-safe: values, freely copied.
#ifndef STATEWATCH_STATUS_H_
#define STATEWATCH_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace statewatch {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument = 1,  // the caller's input is wrong; nothing was changed
    kNotFound = 2,         // a named thing does not exist
    kIOError = 3,          // the storage layer failed
    kCorruption = 4,       // persisted data failed verification
    kFailedPrecondition = 5,  // e.g. writes refused after an earlier durable-write failure
    kPermissionDenied = 6,    // visibility / profile refusals
    kBusy = 7,                // a resource is locked (e.g. another process owns the database)
    kNoSpace = 8,             // the disk is full: nothing was written; retry once space is freed
    kMisdirected = 9,  // cluster mode: the session belongs to another partition; nothing changed
    kResourceExhausted = 10,  // a loop or cost guard refused the call; nothing changed (retry
                              // later, or change what is sent)
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {Code::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status IOError(std::string msg) { return {Code::kIOError, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {Code::kCorruption, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) {
    return {Code::kFailedPrecondition, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) {
    return {Code::kPermissionDenied, std::move(msg)};
  }
  static Status Busy(std::string msg) { return {Code::kBusy, std::move(msg)}; }
  static Status NoSpace(std::string msg) { return {Code::kNoSpace, std::move(msg)}; }
  static Status Misdirected(std::string msg) { return {Code::kMisdirected, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) {
    return {Code::kResourceExhausted, std::move(msg)};
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  const std::string& message() const { return message_; }
  // "OK" or "<code name>: <message>".
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Result<T> holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: ok()
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  // OK when ok(), otherwise the error.
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace statewatch

// Propagate a non-OK Status from an expression returning Status.
#define SW_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::statewatch::Status _sw_st = (expr);     \
    if (!_sw_st.ok()) return _sw_st;          \
  } while (0)

#endif  // STATEWATCH_STATUS_H_
