// LocalLog: the single-node log::LogBackend — a commit group's record lives in the `log`
// family of the engine's own RocksDB database (key 'L' position), written in the same
// WriteBatch as the group's keyed writes (journal rows, side tables). One WAL record and one
// fsync make the record and its rows durable together; the rows are never stored twice.
//
// Positions are dense from 1. The tail is read from the family at open and then kept in
// memory (one appender). dedupe_id is not needed here: a local append has no unknown outcome
// that a retry could duplicate (a failed write makes the engine refuse writes until it is
// reopened, and the reopened log's tail says what landed).
//
// Thread contract: one appender at a time; ReadFrom and Tail may run concurrently with it.
#ifndef STATEWATCH_STORAGE_LOCAL_LOG_H_
#define STATEWATCH_STORAGE_LOCAL_LOG_H_

#include <atomic>
#include <memory>

#include "log/log_backend.h"
#include "storage/store.h"

namespace statewatch::storage {

class LocalLog final : public log::LogBackend {
 public:
  // Reads the first and last positions from `store`'s log family. A purged log keeps no
  // record, so the owner passes the last position it knows was appended (its checkpoint's):
  // the tail is the larger of the two. `store` must outlive the log.
  static Result<std::unique_ptr<LocalLog>> Open(Store* store, log::LogPosition known_tail);

  // Reads the first and last positions again, as Open does, after something other than this
  // log replaced the family's contents (a cluster restore writes a checkpoint's whole state,
  // cluster/replicated_log.h). REQUIRES: no concurrent Append. On error nothing changes.
  Status Reload(log::LogPosition known_tail);

  // options.writes, when given, must be a storage::Batch of this store: the record is added
  // to it and the batch written (then cleared of nothing: the caller owns and reuses it).
  // options.sync: fsync the WAL before returning. Errors: FailedPrecondition when the tail
  // is not expected_last or the writes are not a Batch; NoSpace; IOError from RocksDB.
  Result<log::LogPosition> Append(std::string_view data,
                                  const log::AppendOptions& options) override;
  Result<std::vector<log::LogRecord>> ReadFrom(log::LogPosition from,
                                               std::size_t max_records) override;
  Result<log::LogPosition> Tail() override;
  // Deletes [first, position) with one range tombstone, without fsync: it is written after
  // the checkpoint that covers those records, so the WAL's order keeps it behind it.
  Status PurgeBelow(log::LogPosition position) override;

 private:
  LocalLog(Store* store, log::LogPosition first, log::LogPosition tail);

  Store* store_;
  std::atomic<log::LogPosition> first_;  // the first retained position (tail + 1 when empty)
  std::atomic<log::LogPosition> tail_;
  Batch own_batch_;  // for appends without keyed writes
};

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_LOCAL_LOG_H_
