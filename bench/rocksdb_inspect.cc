// Benchmarks may include <rocksdb/...> (see bench/CMakeLists.txt): these helpers look at the
// databases the benchmarks wrote, not through statewatch's storage layer.
#include "bench/rocksdb_inspect.h"

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/options_util.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

namespace statewatch::bench {
namespace {

namespace fs = std::filesystem;

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  return s.ok() ? Status::OK() : Status::IOError(what + ": " + s.ToString());
}

// The descriptors of every family, with the options the database was written with (its
// OPTIONS file), so that a compaction writes SSTs as the engine itself would (block size,
// filters, compression). Options RocksDB cannot rebuild from text (the engine's compaction
// filters) are left out.
Status LoadOptions(const std::string& db, rocksdb::DBOptions* db_options,
                   std::vector<rocksdb::ColumnFamilyDescriptor>* descs) {
  rocksdb::ConfigOptions config;
  config.ignore_unknown_options = true;
  config.ignore_unsupported_options = true;
  config.input_strings_escaped = true;
  config.env = rocksdb::Env::Default();
  rocksdb::Status s = rocksdb::LoadLatestOptions(config, db, db_options, descs);
  if (s.ok()) return Status::OK();
  // No OPTIONS file: default options for every family RocksDB lists.
  std::vector<std::string> names;
  SW_RETURN_IF_ERROR(FromRocks(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), db, &names),
                               "listing the column families of \"" + db + "\""));
  *db_options = rocksdb::DBOptions();
  descs->clear();
  for (const std::string& name : names) descs->emplace_back(name, rocksdb::ColumnFamilyOptions());
  return Status::OK();
}

// An open database with every family; closes on destruction.
struct OpenDb {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::vector<std::string> names;
  ~OpenDb() {
    if (!db) return;
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
    db->Close().PermitUncheckedError();
  }
};

Status Open(const std::string& db_dir, bool read_only, OpenDb* out) {
  rocksdb::DBOptions db_options;
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  SW_RETURN_IF_ERROR(LoadOptions(db_dir, &db_options, &descs));
  db_options.create_if_missing = false;
  db_options.create_missing_column_families = false;
  for (const auto& d : descs) out->names.push_back(d.name);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      read_only ? rocksdb::DB::OpenForReadOnly(db_options, db_dir, descs, &out->handles, &raw)
                : rocksdb::DB::Open(db_options, db_dir, descs, &out->handles, &raw);
  SW_RETURN_IF_ERROR(FromRocks(s, "opening \"" + db_dir + "\""));
  out->db.reset(raw);
  return Status::OK();
}

}  // namespace

Result<std::string> FindDatabaseDir(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "CURRENT", ec)) return dir;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().filename() == "CURRENT")
      return entry.path().parent_path().string();
  }
  return Status::NotFound("no RocksDB database (a CURRENT file) under \"" + dir + "\"");
}

Result<FamilyBytes> MeasureFamily(const std::string& dir, const std::string& family) {
  auto db_dir = FindDatabaseDir(dir);
  if (!db_dir.ok()) return db_dir.status();
  OpenDb db;
  SW_RETURN_IF_ERROR(Open(*db_dir, /*read_only=*/true, &db));
  for (std::size_t i = 0; i < db.names.size(); ++i) {
    if (db.names[i] != family) continue;
    FamilyBytes out;
    std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(rocksdb::ReadOptions(), db.handles[i]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++out.rows;
      out.key_bytes += it->key().size();
      out.value_bytes += it->value().size();
    }
    SW_RETURN_IF_ERROR(FromRocks(it->status(), "reading family \"" + family + "\""));
    return out;
  }
  return Status::NotFound("no column family \"" + family + "\" in \"" + *db_dir + "\"");
}

Status CompactDatabase(const std::string& dir) {
  auto db_dir = FindDatabaseDir(dir);
  if (!db_dir.ok()) return db_dir.status();
  OpenDb db;
  SW_RETURN_IF_ERROR(Open(*db_dir, /*read_only=*/false, &db));
  SW_RETURN_IF_ERROR(
      FromRocks(db.db->Flush(rocksdb::FlushOptions(), db.handles), "flushing \"" + *db_dir + "\""));
  rocksdb::CompactRangeOptions compact;
  compact.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (std::size_t i = 0; i < db.handles.size(); ++i) {
    SW_RETURN_IF_ERROR(FromRocks(db.db->CompactRange(compact, db.handles[i], nullptr, nullptr),
                                 "compacting family \"" + db.names[i] + "\""));
  }
  return Status::OK();
}

BackgroundWork CountBackgroundWork(const std::string& dir) {
  BackgroundWork out;
  auto db_dir = FindDatabaseDir(dir);
  if (!db_dir.ok()) return out;
  std::ifstream log(fs::path(*db_dir) / "LOG");
  if (!log) return out;
  out.flushes = out.compactions = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"event\": \"flush_finished\"") != std::string::npos) ++out.flushes;
    if (line.find("\"event\": \"compaction_finished\"") != std::string::npos) ++out.compactions;
  }
  return out;
}

}  // namespace statewatch::bench
