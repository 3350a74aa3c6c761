// LogBackend: where a partition's commit groups become durable — one record per commit
// group, in order. This is the seam between the engine and what makes its writes durable:
//
//   - the local RocksDB log (a single node; the default),
//   - MemLog, an in-memory log with compare-and-set, dedupe and fault injection (tests),
//   - JetStreamLog, a NATS JetStream stream replicated across machines (cluster mode).
//
// A record is opaque bytes to the backend (the engine's encoded commit group). Positions are
// dense: the first record of a log is 1 and each append takes the next one; 0 means "empty".
// Nothing here names RocksDB, NATS or the engine's record format.
//
// Thread contract: one appender at a time (the owner's commit leader); ReadFrom and Tail may
// run concurrently with an append.
#ifndef STATEWATCH_LOG_LOG_BACKEND_H_
#define STATEWATCH_LOG_LOG_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::log {

// A record's place in its log: 1, 2, 3, ... (0: none).
using LogPosition = uint64_t;

struct LogRecord {
  LogPosition position = 0;
  std::string data;
  // The record's keyed writes (AppendOptions::writes), serialised, for a backend that ships
  // them with the record; empty for one that applied them in place (the local log).
  std::string writes;
};

// The framing "compact record + keyed writes": a commit group is a small record (what the
// projections fold) plus the writes it makes to keyed state (journal rows, side tables).
// The backend makes both durable atomically — the local log writes them in the same
// RocksDB batch as the record, a replicated backend ships the serialised form in the same
// message so that a standby applies the writes and folds the record. Opaque to `log/`.
class KeyedWrites {
 public:
  virtual ~KeyedWrites() = default;
  virtual std::size_t Count() const = 0;
  // The writes as bytes that the owner's storage can apply again (a standby's copy).
  virtual std::string_view Serialized() const = 0;
};

struct AppendOptions {
  // Compare-and-set: the append succeeds only while the log's last position is this. A
  // writer that lost ownership (another writer appended, e.g. a Fence record) is refused.
  LogPosition expected_last = 0;
  // Idempotency key ("<partition>/<epoch>/<batchNo>" in cluster mode): appending the same id
  // again within the backend's dedupe window returns the first append's position and
  // appends nothing. Empty: no dedupe.
  std::string dedupe_id;
  // Local backends: fsync before returning. Replicated backends return once a quorum holds
  // the record, whatever this says.
  bool sync = true;
  // Keyed writes that belong to the record (see KeyedWrites): durable together with it or
  // not at all. Null: none. (Additive — backends that ship records
  // store Serialized() beside the data; one that cannot carry them refuses the append with
  // InvalidArgument rather than drop them.) The backend may add its own entries to a
  // local batch it is handed (the local log adds the record itself).
  KeyedWrites* writes = nullptr;
  // How many counter values (sequences) the record uses; a replicated backend seals it
  // into the frame header so the hash chain's verifier sees a gap or a repeat. Additive.
  uint32_t counter_values = 0;
  // The counter value n of the record's first sequence (n * P + p, log/partition.h); a
  // replicated backend refuses a record whose counters are not its chain's next ones. 0:
  // not given. Additive.
  uint64_t first_counter = 0;
};

// One record of AppendPipelined.
struct PendingAppend {
  std::string_view data;
  std::string dedupe_id;  // as AppendOptions::dedupe_id
};

class LogBackend {
 public:
  virtual ~LogBackend() = default;

  // Appends `data` after `options.expected_last`; returns the new record's position.
  // Errors:
  //   FailedPrecondition — the tail is not expected_last: this writer is fenced and must
  //                        stop appending (the message names both positions);
  //   IOError            — the outcome is unknown (timeout, lost connection): read Tail()
  //                        (or retry with the same dedupe_id) before anything else;
  //   NoSpace            — nothing was appended; retry once space is freed.
  virtual Result<LogPosition> Append(std::string_view data, const AppendOptions& options) = 0;

  // Up to `max_records` records with position >= `from`, in order; fewer (or none) near the
  // tail. NotFound when `from` is below the first retained position (purged).
  virtual Result<std::vector<LogRecord>> ReadFrom(LogPosition from, std::size_t max_records) = 0;

  // The last position (0 for an empty log).
  virtual Result<LogPosition> Tail() = 0;

  // Discards every record below `position` (a checkpoint covers them); records at or above
  // it stay readable. Purging below an already purged position does nothing.
  virtual Status PurgeBelow(LogPosition position) = 0;

  // Appends records[i] after expected_last + i, for every i in order, as Append would one at
  // a time — but a backend may keep them in flight together (JetStreamLog pipelines them).
  // Returns one result per record, with Append's errors. Record i expects record i-1's
  // position, so a record that landed proves every earlier one landed: acknowledge up to the
  // LAST success, and settle the records after it (e.g. AppendResolved, in order) —
  // an earlier error only means its answer was lost.
  // (Additive: the default appends one at a time and fails the rest after the first error.)
  virtual std::vector<Result<LogPosition>> AppendPipelined(std::span<const PendingAppend> records,
                                                           LogPosition expected_last,
                                                           bool sync = true) {
    std::vector<Result<LogPosition>> results;
    results.reserve(records.size());
    Status failed;
    for (const PendingAppend& record : records) {
      if (!failed.ok()) {
        results.push_back(failed);
        continue;
      }
      AppendOptions options;
      options.expected_last = expected_last + results.size();
      options.dedupe_id = record.dedupe_id;
      options.sync = sync;
      Result<LogPosition> r = Append(record.data, options);
      if (!r.ok()) failed = r.status();
      results.push_back(std::move(r));
    }
    return results;
  }
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_LOG_BACKEND_H_
