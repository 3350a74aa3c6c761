// RocksDB's info log, sent to spdlog instead of a LOG file in the data directory.
//
// Why: RocksDB writes its info log through the same file writer as its data files, and
// Debian's build keeps the assertion that aborts the process when that writer is used again
// after a failed append — so on a full disk the LOG file alone killed every command, even a
// read-only one. A logger of our own writes no file at all. Internal to storage/.
//
// Thread-safe.
#ifndef STATEWATCH_STORAGE_ROCKS_LOGGER_H_
#define STATEWATCH_STORAGE_ROCKS_LOGGER_H_

#include <rocksdb/env.h>

#include <memory>

namespace statewatch::storage {

// A logger that forwards RocksDB's messages to spdlog's default logger: warnings and errors
// as such, RocksDB's chatty info lines (flushes, compactions) only at spdlog's debug level.
std::shared_ptr<rocksdb::Logger> NewSpdlogRocksLogger();

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_ROCKS_LOGGER_H_
