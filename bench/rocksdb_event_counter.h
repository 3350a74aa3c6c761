// RocksdbEventCounter: how many flushes and compactions the engines' RocksDB ran, for the
// benchmarks that must show their runs include that background work.
//
// The engine writes no LOG file: it routes RocksDB's info log to spdlog's default logger, at
// debug level (storage/rocks_logger.h). While a counter is alive, that logger runs at debug
// level into a sink that counts RocksDB's `"event": "flush_finished"` and
// `"event": "compaction_finished"` lines, and passes warnings and errors on to stderr.
// Only engines opened while it is alive are counted (the engine picks its RocksDB log level
// at open), and their RocksDB info lines are formatted — so it is only for benchmarks whose
// timed calls are writes, not opens. Counts are process-wide: every engine together.
//
// Thread-safe (RocksDB logs from its background threads); one counter at a time.
#ifndef STATEWATCH_BENCH_ROCKSDB_EVENT_COUNTER_H_
#define STATEWATCH_BENCH_ROCKSDB_EVENT_COUNTER_H_

#include <memory>

#include "bench/rocksdb_inspect.h"

namespace spdlog {
class logger;
}

namespace statewatch::bench {

class RocksdbEventCounter {
 public:
  RocksdbEventCounter();   // installs the counting default logger
  ~RocksdbEventCounter();  // restores the previous default logger
  RocksdbEventCounter(const RocksdbEventCounter&) = delete;
  RocksdbEventCounter& operator=(const RocksdbEventCounter&) = delete;

  // Flushes and compactions finished since construction.
  BackgroundWork Counts() const;

 private:
  class Sink;
  std::shared_ptr<Sink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace statewatch::bench

#endif  // STATEWATCH_BENCH_ROCKSDB_EVENT_COUNTER_H_
