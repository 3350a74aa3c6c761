// RawRocksdbFloor: the storage floor of statewatch's benchmarks (docs/benchmarks.md) — raw
// RocksDB writes of the same bytes as one recorded event, with the same durability, and
// nothing else: no sequencer, no projections, no index, no dedupe.
//
// One key per event (17 bytes: a tag, a 64-bit session, a 64-bit sequence, big-endian, the
// shape of a journal key) and a value as large as a stored journal row's (the benchmarks
// pass StandardJournalRow()). How close statewatch's figures come to this one says how much
// of the storage limit it uses.
//
// Thread-safe: Put and PutBatch may be called from many threads at once; RocksDB then
// groups the concurrent writes into one WAL write and one fsync, as it does for any caller.
#ifndef STATEWATCH_BENCH_RAW_ROCKSDB_FLOOR_H_
#define STATEWATCH_BENCH_RAW_ROCKSDB_FLOOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::bench {

inline constexpr std::size_t kFloorKeyBytes = 17;
inline constexpr std::size_t kFloorValueBytes = 200;

class RawRocksdbFloor {
 public:
  // Opens or creates a database with default options (WAL on) and a 16 MiB write buffer,
  // statewatch's default.
  static Result<std::unique_ptr<RawRocksdbFloor>> Open(const std::string& path,
                                                       std::size_t value_bytes = kFloorValueBytes);
  ~RawRocksdbFloor();
  RawRocksdbFloor(const RawRocksdbFloor&) = delete;
  RawRocksdbFloor& operator=(const RawRocksdbFloor&) = delete;

  // One Put of one event's bytes for `session` at the next sequence. With `sync` the WAL is
  // fsynced before returning (Durability::kSync); without, it is written to the OS only.
  Status Put(uint64_t session, bool sync);

  // One WriteBatch of one put per entry of `sessions`, one fsync when `sync`.
  Status PutBatch(const std::vector<uint64_t>& sessions, bool sync);

  uint64_t last_sequence() const { return sequence_.load(std::memory_order_relaxed); }

 private:
  struct Rep;
  explicit RawRocksdbFloor(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace statewatch::bench

#endif  // STATEWATCH_BENCH_RAW_ROCKSDB_FLOOR_H_
