// Offline looks at a RocksDB database that statewatch (or the raw floor) wrote, for the
// benchmarks: how many bytes a column family's rows take, compacting a closed database fully,
// and how many flushes and compactions RocksDB ran while it was open.
//
// These work on any RocksDB directory and know nothing of statewatch's key or value format;
// a family is named as RocksDB lists it (`journal`). `dir` may be the database directory
// itself or a directory above it (the first directory holding a CURRENT file, searched two
// levels deep).
//
// Thread-safe (every call opens its own handle); MeasureFamily and CompactDatabase need the
// database closed by every other user, as RocksDB's lock requires.
#ifndef STATEWATCH_BENCH_ROCKSDB_INSPECT_H_
#define STATEWATCH_BENCH_ROCKSDB_INSPECT_H_

#include <cstdint>
#include <string>

#include "statewatch/status.h"

namespace statewatch::bench {

// The RocksDB directory under `dir` (NotFound when there is none).
Result<std::string> FindDatabaseDir(const std::string& dir);

struct FamilyBytes {
  uint64_t rows = 0;
  uint64_t key_bytes = 0;    // user keys, summed
  uint64_t value_bytes = 0;  // values, summed
};

// Reads every row of `family` (read-only open). NotFound when the family does not exist.
Result<FamilyBytes> MeasureFamily(const std::string& dir, const std::string& family);

// Opens the database with all its column families, flushes every memtable (the WAL is
// replayed first, as at any open), compacts every family down to one sorted run, and closes
// it: afterwards every row is in an SST and no read meets a memtable or an overlapping L0
// file. Runs no compaction filter and changes no row.
Status CompactDatabase(const std::string& dir);

// Flushes and compactions that finished since the database was last opened, counted from the
// `"event": "flush_finished"` / `"compaction_finished"` lines RocksDB writes to its info log
// (the file LOG). -1 for both when there is no readable LOG. Read it after the database is
// closed: RocksDB buffers the log.
struct BackgroundWork {
  int64_t flushes = -1;
  int64_t compactions = -1;
};
BackgroundWork CountBackgroundWork(const std::string& dir);

}  // namespace statewatch::bench

#endif  // STATEWATCH_BENCH_ROCKSDB_INSPECT_H_
