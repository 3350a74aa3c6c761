// What a data directory holds, looked at before RocksDB touches it.
//
// RocksDB's create_if_missing creates a new, empty database whenever CURRENT is missing —
// over the SST files of an existing one, which it then deletes as obsolete. So the store
// decides itself: a database is created only in a missing or empty directory, and only by a
// caller that writes; a directory with database files but no readable CURRENT or MANIFEST
// is refused with Corruption, untouched.
//
// Thread-safe: reads the file system only.
#ifndef STATEWATCH_STORAGE_DB_DIRECTORY_H_
#define STATEWATCH_STORAGE_DB_DIRECTORY_H_

#include <string>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::storage {

enum class DirectoryState {
  kMissing,   // no such directory
  kEmpty,     // a directory with nothing in it (a `lost+found` alone counts as nothing)
  kDatabase,  // CURRENT names a MANIFEST that exists
};

struct DirectoryInspection {
  DirectoryState state = DirectoryState::kMissing;
  std::vector<std::string> wal_files;  // full paths of the *.log files, oldest first
};

// Corruption when the directory holds database files (SSTs, WALs, MANIFESTs, OPTIONS) but
// no CURRENT, an unreadable CURRENT, or a CURRENT naming a missing MANIFEST — the message
// names what is missing. FailedPrecondition when it holds other files only (not a database).
// InvalidArgument when `path` is not a directory.
Result<DirectoryInspection> InspectDirectory(const std::string& path);

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_DB_DIRECTORY_H_
