// MemLog: a LogBackend in memory, for the fast test tier. It keeps the contract of
// log_backend.h exactly — compare-and-set on expected_last, dedupe by id within a window,
// dense positions, PurgeBelow — and can misbehave the way a replicated log does, from a seed:
//
//   - an error whose append did NOT happen (the request was lost on the way);
//   - an error whose append DID happen (the acknowledgement was lost on the way back);
//   - a duplicate delivery: a request the log already saw arrives again before the next
//     one (a transport retry), and must be absorbed by the dedupe window or the CAS;
//   - a full log (capacity_bytes): NoSpace, nothing appended.
//
// Every injected error is an IOError whose message says which fault it was; a caller that
// follows the contract (retry with the same dedupe id, or read Tail) never loses an
// acknowledged record and never appends one twice — tests/log/mem_log_test.cc shows it.
//
// Thread-safe.
#ifndef STATEWATCH_LOG_MEM_LOG_H_
#define STATEWATCH_LOG_MEM_LOG_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "log/log_backend.h"
#include "statewatch/clock.h"

namespace statewatch::log {

struct MemLogFaults {
  uint64_t seed = 1;
  // Each a probability per Append, in [0, 1].
  double lose_request = 0;  // IOError; nothing appended
  double lose_ack = 0;      // IOError; the record WAS appended
  double redeliver = 0;     // after the append, the same request is applied once more later
};

struct MemLogOptions {
  // An id appended again within this many milliseconds of its first append returns the
  // first position (JetStream's duplicate window; 10 minutes in cluster mode).
  int64_t dedupe_window_ms = 10 * 60 * 1000;
  // Time for the dedupe window. Null: a steady clock of its own.
  std::shared_ptr<Clock> clock;
  // Bytes of record data the log holds; an append past it fails with NoSpace and appends
  // nothing (JetStream's Discard=New). 0: unlimited.
  uint64_t capacity_bytes = 0;
  MemLogFaults faults;
};

class MemLog final : public LogBackend {
 public:
  explicit MemLog(MemLogOptions options = {});

  Result<LogPosition> Append(std::string_view data, const AppendOptions& options) override;
  Result<std::vector<LogRecord>> ReadFrom(LogPosition from, std::size_t max_records) override;
  Result<LogPosition> Tail() override;
  Status PurgeBelow(LogPosition position) override;

  // Turns fault injection on or off (e.g. off to read back what a faulty run left).
  void SetFaults(const MemLogFaults& faults);

  struct Counters {
    uint64_t appended = 0;       // records appended (including ones whose ack was lost)
    uint64_t deduplicated = 0;   // appends answered from the dedupe window
    uint64_t cas_rejected = 0;   // FailedPrecondition answers
    uint64_t lost_requests = 0;  // injected: not appended
    uint64_t lost_acks = 0;      // injected: appended, error returned
    uint64_t redelivered = 0;    // injected duplicate deliveries applied
  };
  Counters counters() const;

 private:
  struct Request {
    std::string data;
    std::string writes;     // AppendOptions::writes, serialised (the pointer is not kept)
    AppendOptions options;  // with writes == nullptr
  };
  int64_t NowMs() const;
  bool Roll(double probability);
  Result<LogPosition> ApplyLocked(const Request& request);
  void ExpireDedupeLocked(int64_t now_ms);
  void RedeliverPendingLocked();

  const MemLogOptions options_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  MemLogFaults faults_;
  LogPosition first_ = 1;            // the first retained position
  std::deque<std::string> records_;  // positions first_ .. first_ + size - 1
  std::deque<std::string> writes_;   // each record's serialised keyed writes
  uint64_t bytes_ = 0;
  // dedupe id -> (position, appended at); and appended-at order for expiry.
  std::map<std::string, std::pair<LogPosition, int64_t>> dedupe_;
  std::deque<std::pair<int64_t, std::string>> dedupe_order_;
  std::optional<Request> pending_redelivery_;
  Counters counters_;
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_MEM_LOG_H_
