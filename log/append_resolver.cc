#include "log/append_resolver.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace statewatch::log {

std::function<void(int)> RetryPolicy::Backoff() {
  return [](int attempt) {
    const int shift = std::min(attempt - 1, 5);
    const auto wait =
        std::min(std::chrono::milliseconds(50 << shift), std::chrono::milliseconds(1000));
    std::this_thread::sleep_for(wait);
  };
}

namespace {

// The tail moved past expected_last. Ours if the record right after expected_last holds
// our bytes; otherwise another writer's, and the refusal stands.
Result<LogPosition> ResolveRefusal(LogBackend& log, std::string_view data,
                                   const AppendOptions& options, const Status& refusal) {
  const LogPosition mine = options.expected_last + 1;
  Result<std::vector<LogRecord>> records = log.ReadFrom(mine, 1);
  if (!records.ok()) {
    if (records.status().code() == Status::Code::kIOError) return records.status();
    return refusal;  // purged: whatever was there, it is not ours to claim now
  }
  if (records->empty()) {
    // The tail is past `mine`, so a record is there; a read that misses it (a replica
    // behind the leader) settles nothing.
    return Status::IOError("log position " + std::to_string(mine) +
                           " not readable although the tail passed it");
  }
  if (records->front().position == mine && records->front().data == data) return mine;
  return refusal;
}

}  // namespace

Result<LogPosition> AppendResolved(LogBackend& log, std::string_view data,
                                   const AppendOptions& options, const RetryPolicy& policy) {
  const int attempts = std::max(policy.max_attempts, 1);
  Status last_error;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0 && policy.before_retry) policy.before_retry(attempt);
    Result<LogPosition> appended = log.Append(data, options);
    if (appended.ok()) return appended;
    last_error = appended.status();
    if (last_error.code() == Status::Code::kFailedPrecondition) {
      Result<LogPosition> resolved = ResolveRefusal(log, data, options, last_error);
      // A read that failed with an unknown outcome is worth another round.
      if (resolved.ok() || resolved.status().code() != Status::Code::kIOError) return resolved;
      last_error = resolved.status();
      continue;
    }
    if (last_error.code() != Status::Code::kIOError) return last_error;
  }
  return Status::IOError("append at position " + std::to_string(options.expected_last + 1) +
                         " unresolved after " + std::to_string(attempts) +
                         " attempts; last error: " + last_error.message());
}

}  // namespace statewatch::log
