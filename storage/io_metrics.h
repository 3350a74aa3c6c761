// IoMetrics: what the store measures of RocksDB's I/O, for metrics (EngineStats): the
// latency of every write-ahead-log sync, timed by a file-system wrapper around the WAL files,
// and write stalls, from RocksDB's stall notifications. Internal to storage/.
//
// Thread-safe: RocksDB calls the wrapper and the listener from its writer and background
// threads while Stalls() and the histogram are read by anyone.
#ifndef STATEWATCH_STORAGE_IO_METRICS_H_
#define STATEWATCH_STORAGE_IO_METRICS_H_

#include <rocksdb/file_system.h>
#include <rocksdb/listener.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/histogram.h"
#include "statewatch/types.h"

namespace statewatch::storage {

class IoMetrics {
 public:
  // One Sync or Fsync of a WAL file, in seconds.
  Histogram wal_sync{kLatencyBounds};

  // A column family's stall condition changed (RocksDB's OnStallConditionsChanged).
  void StallChanged(const std::string& family, rocksdb::WriteStallCondition now);
  // Fills the stall fields of `out` (counts, and the seconds including a stall going on).
  void FillStalls(RocksDbStats* out) const;

 private:
  using SteadyClock = std::chrono::steady_clock;
  mutable std::mutex mu_;
  std::map<std::string, rocksdb::WriteStallCondition> stalled_;  // families not normal
  SteadyClock::time_point stalled_since_;  // valid while stalled_ is not empty
  double stalled_seconds_ = 0;             // completed stalls
  uint64_t delayed_ = 0, stopped_ = 0;
};

// `base` with the Sync and Fsync of every WAL file ("*.log") timed into `metrics`.
std::shared_ptr<rocksdb::FileSystem> NewWalSyncTimingFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, std::shared_ptr<IoMetrics> metrics);

// A listener that reports RocksDB's stall notifications to `metrics`.
std::shared_ptr<rocksdb::EventListener> NewStallListener(std::shared_ptr<IoMetrics> metrics);

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_IO_METRICS_H_
