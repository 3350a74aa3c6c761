// A check of RocksDB's write-ahead log files before the database is opened: damage followed
// by valid records is Corruption.
//
// Why our own check: RocksDB 7.8's recovery modes cannot tell an unacknowledged torn tail
// (expected after kill -9 or power loss; safe to drop under sync durability, since nothing
// acknowledged was unsynced) from a damaged record in the middle (acknowledged writes after
// it). kPointInTimeRecovery stops at either and silently drops what follows;
// kAbsoluteConsistency refuses both (so a kill -9 could make the database unopenable); and a
// zeroed record header is skipped silently by every mode, together with the rest of its
// 32 KiB block. This check walks the log format (32 KiB blocks of CRC32C-checked physical
// records, each logical record a WriteBatch whose header holds its first sequence number and
// entry count) and refuses when
//   - a damaged region of a file is followed by a valid record in the same file, or
//   - a file's first batch does not continue the previous file's sequence numbers.
// A damaged tail with nothing valid after it is accepted, and the store opens with
// kPointInTimeRecovery, which drops exactly that tail.
//
// Thread-safe: reads files only.
#ifndef STATEWATCH_STORAGE_WAL_CHECK_H_
#define STATEWATCH_STORAGE_WAL_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::storage {

// A log that ends in a torn tail: the bytes from `offset` on (`dropped` of them) are what a
// crash cut off, and point-in-time recovery drops them.
struct TornTail {
  std::string file;
  std::size_t offset = 0;
  std::size_t dropped = 0;
};

// Checks `wal_files` (full paths, oldest first). Corruption names the file, the byte offset
// and what is wrong. A file that vanished meanwhile (a live database deleting an obsolete
// log) is skipped. With `torn`, each accepted torn tail is appended to it.
Status CheckWriteAheadLogs(const std::vector<std::string>& wal_files,
                           std::vector<TornTail>* torn = nullptr);

// CRC-32C (Castagnoli) of `data`, as RocksDB checksums its log records. Exposed for tests.
uint32_t Crc32c(std::string_view data);

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_WAL_CHECK_H_
