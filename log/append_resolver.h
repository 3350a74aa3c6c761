// AppendResolved: one append that settles an unknown outcome before it returns, as the
// owner's commit path must (docs/cluster-internals.md, "The owner: append, then apply"):
//
//   - IOError (timeout, lost connection, leader election): retry the same bytes with the
//     same dedupe id and the same expected_last. Within the dedupe window a retry of an
//     append that landed returns its first position; otherwise the CAS decides.
//   - FailedPrecondition: the tail is not expected_last. Under one writer per position, the
//     only record that can sit at expected_last + 1 without this writer being fenced is its
//     own earlier attempt (landed, acknowledgement lost, dedupe window passed): read it back
//     and compare the bytes.
//
// Returns the position when the record is in the log exactly once, at expected_last + 1.
// FailedPrecondition when another writer's record is there (this writer is fenced), IOError
// when the attempts ran out (the outcome is still unknown: stop acknowledging, resolve
// later by reading position expected_last + 1), NoSpace as the backend reports it.
//
// Thread-safe as far as `log` is; one call per appender at a time.
#ifndef STATEWATCH_LOG_APPEND_RESOLVER_H_
#define STATEWATCH_LOG_APPEND_RESOLVER_H_

#include <functional>
#include <string_view>

#include "log/log_backend.h"
#include "statewatch/status.h"

namespace statewatch::log {

struct RetryPolicy {
  // Attempts in all, the first included (>= 1).
  int max_attempts = 20;
  // Called before retry number `attempt` (1, 2, ...); sleeps in production (Backoff()), is
  // a no-op or advances a manual clock in tests. Null: retry at once.
  std::function<void(int attempt)> before_retry;

  // 50 ms doubling to 1 s per wait: 20 attempts span ~15 s, longer than a JetStream stream
  // leader election (~6 s measured on loopback).
  static std::function<void(int)> Backoff();
};

Result<LogPosition> AppendResolved(LogBackend& log, std::string_view data,
                                   const AppendOptions& options, const RetryPolicy& policy);

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_APPEND_RESOLVER_H_
