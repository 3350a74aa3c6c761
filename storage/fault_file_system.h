// A rocksdb::FileSystem wrapper for tests that makes the Nth append or sync of the database's
// files fail (FaultInjector in store.h is its handle). Internal to storage/.
//
// Thread-safe.
#ifndef STATEWATCH_STORAGE_FAULT_FILE_SYSTEM_H_
#define STATEWATCH_STORAGE_FAULT_FILE_SYSTEM_H_

#include <rocksdb/file_system.h>

#include <memory>

#include "storage/store.h"

namespace statewatch::storage {

// The file system `base` with `faults` (from NewFaultInjector) applied to every writable file.
std::shared_ptr<rocksdb::FileSystem> NewFaultyFileSystem(std::shared_ptr<rocksdb::FileSystem> base,
                                                         std::shared_ptr<FaultInjector> faults);

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_FAULT_FILE_SYSTEM_H_
