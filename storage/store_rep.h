// storage/store.cc's and storage/batch.cc's shared insides: the RocksDB handles behind a
// Store and a Batch. Not part of storage's interface (storage/store.h is).
#ifndef STATEWATCH_STORAGE_STORE_REP_H_
#define STATEWATCH_STORAGE_STORE_REP_H_

#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/io_metrics.h"
#include "storage/store.h"

namespace statewatch::storage {

// The only place a rocksdb::Status becomes a statewatch::Status (store.cc).
Status FromRocks(const rocksdb::Status& s, std::string_view what);

inline rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

// Adapts a DropFilter to RocksDB. Never throws (RocksDB calls it from its own threads).
class DropCompactionFilter final : public rocksdb::CompactionFilter {
 public:
  explicit DropCompactionFilter(DropFilter f) : filter_(std::move(f)) {}
  bool Filter(int /*level*/, const rocksdb::Slice& key, const rocksdb::Slice& value,
              std::string* /*new_value*/, bool* /*value_changed*/) const noexcept override {
    return filter_(std::string_view(key.data(), key.size()),
                   std::string_view(value.data(), value.size()));
  }
  const char* Name() const override { return "StatewatchDropFilter"; }

 private:
  DropFilter filter_;
};

struct Store::Rep {
  std::string path;
  // Compaction filters are handed to RocksDB as raw pointers: they must outlive the DB,
  // so they are declared before `db` (members are destroyed in reverse order).
  std::vector<std::unique_ptr<DropCompactionFilter>> filters;
  // Declared before `db`: RocksDB's files and listeners refer to both until it closes.
  std::shared_ptr<IoMetrics> io = std::make_shared<IoMetrics>();
  std::unique_ptr<rocksdb::Env> env;  // the timing (and, in tests, faulty) file system
  // handles[Family + 1] for each family (handles[0]: the default family, which also stands
  // in for a family a read-only open could not find); owned_handles are the ones to destroy.
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::vector<rocksdb::ColumnFamilyHandle*> owned_handles;
  std::unique_ptr<rocksdb::DB> db;
  std::atomic<uint64_t> wal_bytes{0};
  bool read_only = false;
  ~Rep() {
    if (db) {
      for (auto* h : owned_handles) db->DestroyColumnFamilyHandle(h);
      db->Close().PermitUncheckedError();
    }
  }
};

struct Batch::Rep {
  rocksdb::WriteBatch wb;
  const std::vector<rocksdb::ColumnFamilyHandle*>* handles = nullptr;
  rocksdb::Status first_error;
  rocksdb::ColumnFamilyHandle* cf(Family f) const { return (*handles)[static_cast<int>(f) + 1]; }
  void Note(const rocksdb::Status& s) {
    if (!s.ok() && first_error.ok()) first_error = s;
  }
};

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_STORE_REP_H_
