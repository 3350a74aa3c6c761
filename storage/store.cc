#include "storage/store.h"

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <filesystem>

namespace statewatch::storage {

namespace {

// The only place a rocksdb::Status becomes a statewatch::Status.
Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  std::string msg = std::string(what) + ": " + s.ToString();
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  if (s.IsNoSpace()) return Status::NoSpace(std::move(msg));
  if (s.IsNotFound()) return Status::NotFound(std::move(msg));
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Status::Busy(std::move(msg));
  }
  if (s.IsInvalidArgument()) return Status::InvalidArgument(std::move(msg));
  return Status::IOError(std::move(msg));
}

rocksdb::Slice ToSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

// ---- fault injection ------------------------------------------------------------------

class FaultState final : public FaultInjector {
 public:
  void FailWritesAfter(uint64_t n) override { writes_left_.store(static_cast<int64_t>(n)); }
  void FailSyncsAfter(uint64_t n) override { syncs_left_.store(static_cast<int64_t>(n)); }
  void Heal() override {
    writes_left_.store(-1);
    syncs_left_.store(-1);
  }
  // True when this operation must fail. -1 means "never fail".
  bool TakeWrite() { return Take(writes_left_); }
  bool TakeSync() { return Take(syncs_left_); }

 private:
  static bool Take(std::atomic<int64_t>& left) {
    int64_t cur = left.load();
    while (cur > 0) {
      if (left.compare_exchange_weak(cur, cur - 1)) return false;
    }
    return cur == 0;
  }
  std::atomic<int64_t> writes_left_{-1};
  std::atomic<int64_t> syncs_left_{-1};
};

class FaultyWritableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyWritableFile(std::unique_ptr<rocksdb::FSWritableFile> f, std::shared_ptr<FaultState> s)
      : FSWritableFileOwnerWrapper(std::move(f)), state_(std::move(s)) {}
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    if (state_->TakeWrite()) return rocksdb::IOStatus::IOError("injected write fault");
    return FSWritableFileOwnerWrapper::Append(data, o, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v,
                           rocksdb::IODebugContext* dbg) override {
    if (state_->TakeWrite()) return rocksdb::IOStatus::IOError("injected write fault");
    return FSWritableFileOwnerWrapper::Append(data, o, v, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (state_->TakeSync()) return rocksdb::IOStatus::IOError("injected sync fault");
    return FSWritableFileOwnerWrapper::Sync(o, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (state_->TakeSync()) return rocksdb::IOStatus::IOError("injected sync fault");
    return FSWritableFileOwnerWrapper::Fsync(o, dbg);
  }

 private:
  std::shared_ptr<FaultState> state_;
};

class FaultyFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  FaultyFileSystem(std::shared_ptr<rocksdb::FileSystem> base, std::shared_ptr<FaultState> s)
      : FileSystemWrapper(std::move(base)), state_(std::move(s)) {}
  const char* Name() const override { return "StatewatchFaultyFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSWritableFile> base;
    rocksdb::IOStatus s = target()->NewWritableFile(f, o, &base, dbg);
    if (s.ok()) *r = std::make_unique<FaultyWritableFile>(std::move(base), state_);
    return s;
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSWritableFile> base;
    rocksdb::IOStatus s = target()->ReopenWritableFile(f, o, &base, dbg);
    if (s.ok()) *r = std::make_unique<FaultyWritableFile>(std::move(base), state_);
    return s;
  }

 private:
  std::shared_ptr<FaultState> state_;
};

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

class RocksIterator final : public Iterator {
 public:
  RocksIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string lower,
                std::string upper)
      : lower_(std::move(lower)), upper_(std::move(upper)) {
    rocksdb::ReadOptions ro;
    if (!lower_.empty()) {
      lower_slice_ = rocksdb::Slice(lower_);
      ro.iterate_lower_bound = &lower_slice_;
    }
    if (!upper_.empty()) {
      upper_slice_ = rocksdb::Slice(upper_);
      ro.iterate_upper_bound = &upper_slice_;
    }
    it_.reset(db->NewIterator(ro, cf));
  }
  bool Valid() const override { return it_->Valid(); }
  void SeekToFirst() override { it_->SeekToFirst(); }
  void SeekToLast() override { it_->SeekToLast(); }
  void Prev() override { it_->Prev(); }
  void Seek(std::string_view t) override { it_->Seek(ToSlice(t)); }
  void Next() override { it_->Next(); }
  std::string_view key() const override {
    rocksdb::Slice k = it_->key();
    return {k.data(), k.size()};
  }
  std::string_view value() const override {
    rocksdb::Slice v = it_->value();
    return {v.data(), v.size()};
  }
  Status status() const override { return FromRocks(it_->status(), "iterator"); }

 private:
  // The bounds must outlive the iterator: ReadOptions keeps pointers to them.
  std::string lower_, upper_;
  rocksdb::Slice lower_slice_, upper_slice_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace

const char* FamilyName(Family f) {
  switch (f) {
    case Family::kJournal: return "journal";
    case Family::kBySeq: return "by_seq";
    case Family::kLog: return "log";
    case Family::kHeads: return "heads";
    case Family::kCursors: return "cursors";
    case Family::kBase: return "base";
    case Family::kDedupe: return "dedupe";
    case Family::kRefs: return "refs";
    case Family::kSessions: return "sessions";
    case Family::kMeta: return "meta";
    case Family::kTranscripts: return "transcripts";
    case Family::kRuns: return "runs";
    case Family::kDeliveries: return "deliveries";
    case Family::kUpstream: return "upstream";
    case Family::kCount: break;
  }
  return "?";
}

std::shared_ptr<FaultInjector> NewFaultInjector() { return std::make_shared<FaultState>(); }

struct Store::Rep {
  std::string path;
  // Compaction filters are handed to RocksDB as raw pointers: they must outlive the DB,
  // so they are declared before `db` (members are destroyed in reverse order).
  std::vector<std::unique_ptr<DropCompactionFilter>> filters;
  std::unique_ptr<rocksdb::Env> env;  // only with fault injection
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::unique_ptr<rocksdb::DB> db;
  std::atomic<uint64_t> wal_bytes{0};
  ~Rep() {
    if (db) {
      for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
      db->Close().PermitUncheckedError();
    }
  }
};

// ---- Batch ------------------------------------------------------------------------------

struct Batch::Rep {
  rocksdb::WriteBatch wb;
  const std::vector<rocksdb::ColumnFamilyHandle*>* handles = nullptr;
  rocksdb::Status first_error;
  rocksdb::ColumnFamilyHandle* cf(Family f) const { return (*handles)[static_cast<int>(f) + 1]; }
  void Note(const rocksdb::Status& s) {
    if (!s.ok() && first_error.ok()) first_error = s;
  }
};

Batch::Batch(const Store& store) : rep_(std::make_unique<Rep>()) {
  rep_->handles = &store.rep_->handles;
}
Batch::~Batch() = default;
void Batch::Put(Family f, std::string_view k, std::string_view v) {
  rep_->Note(rep_->wb.Put(rep_->cf(f), ToSlice(k), ToSlice(v)));
}
void Batch::Delete(Family f, std::string_view k) {
  rep_->Note(rep_->wb.Delete(rep_->cf(f), ToSlice(k)));
}
void Batch::DeleteRange(Family f, std::string_view b, std::string_view e) {
  rep_->Note(rep_->wb.DeleteRange(rep_->cf(f), ToSlice(b), ToSlice(e)));
}
std::size_t Batch::Count() const { return rep_->wb.Count(); }
std::size_t Batch::ByteSize() const { return rep_->wb.GetDataSize(); }
void Batch::Clear() {
  rep_->wb.Clear();
  rep_->first_error = rocksdb::Status::OK();
}

// ---- Store ------------------------------------------------------------------------------

Store::Store(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Store::~Store() = default;
const std::string& Store::path() const { return rep_->path; }

namespace {

// Memtable insert hints: journal rows of one session arrive in sequence order, and heads,
// cursors and meta are the same keys rewritten over and over. With a hint per key prefix the
// skiplist insert starts next to the previous one of that prefix instead of searching from
// the top, which matters when many sessions' appends interleave.
//
// RocksDB 7.8 keeps one hint map per memtable and also consults it for range tombstones,
// whose skiplist is a different one: a DeleteRange whose begin key is in the extractor's
// domain (the extractor sees the internal key: user key + 8 bytes) trips assertions in
// InlineSkipList. So families that take DeleteRange (transcripts, log, base) get no hints,
// and the hinted families are never range-deleted (Rebuild deletes their keys one by one).
rocksdb::ColumnFamilyOptions FamilyOptions(Family f, const rocksdb::ColumnFamilyOptions& base) {
  rocksdb::ColumnFamilyOptions o = base;
  std::size_t prefix = 0;
  switch (f) {
    case Family::kJournal:  // 'J' session
    case Family::kHeads:    // 'H' session: the whole key
    case Family::kCursors:  // 'C' target: a fan-out writes one target's cursors
    case Family::kRefs:
    case Family::kUpstream:
    case Family::kSessions:
      prefix = 9;
      break;
    case Family::kMeta:  // 'M' "engine": the whole key
      prefix = 7;
      break;
    default:
      break;  // by_seq, log, deliveries: keys already arrive in order
  }
  if (prefix > 0) {
    o.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(prefix));
  }
  return o;
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, const StoreOptions& options) {
  auto rep = std::make_unique<Rep>();
  rep->path = path;
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = options.create_if_missing;
  db_opts.create_missing_column_families = true;
  // Many families share one WAL; cap it so a rarely written family cannot pin old logs.
  db_opts.max_total_wal_size = 64u << 20;
  db_opts.keep_log_file_num = 4;
  // One writer (the engine's commit leader) at a time: concurrent memtable writes buy
  // nothing, and insert hints (FamilyOptions) require them off.
  db_opts.allow_concurrent_memtable_write = false;
  if (options.faults) {
    auto state = std::static_pointer_cast<FaultState>(options.faults);
    auto fs = std::make_shared<FaultyFileSystem>(rocksdb::FileSystem::Default(), state);
    rep->env = rocksdb::NewCompositeEnv(fs);
    db_opts.env = rep->env.get();
  }
  if (options.create_if_missing) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
  }

  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  rocksdb::ColumnFamilyOptions cf_opts;
  cf_opts.write_buffer_size = options.write_buffer_bytes;
  cf_opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  descs.emplace_back(rocksdb::kDefaultColumnFamilyName, cf_opts);
  for (int i = 0; i < static_cast<int>(Family::kCount); ++i) {
    Family f = static_cast<Family>(i);
    rocksdb::ColumnFamilyOptions o = FamilyOptions(f, cf_opts);
    if (auto it = options.drop_filters.find(f); it != options.drop_filters.end()) {
      rep->filters.push_back(std::make_unique<DropCompactionFilter>(it->second));
      o.compaction_filter = rep->filters.back().get();
    }
    descs.emplace_back(FamilyName(f), o);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_opts, path, descs, &handles, &raw);
  if (!s.ok()) return FromRocks(s, "opening database \"" + path + "\"");
  rep->db.reset(raw);
  rep->handles = std::move(handles);
  return std::unique_ptr<Store>(new Store(std::move(rep)));
}

Status Store::Write(Batch& batch, bool sync) {
  if (!batch.rep_->first_error.ok()) return FromRocks(batch.rep_->first_error, "building batch");
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  Status st = FromRocks(rep_->db->Write(wo, &batch.rep_->wb), "writing batch");
  if (st.ok()) rep_->wal_bytes.fetch_add(batch.rep_->wb.GetDataSize(), std::memory_order_relaxed);
  return st;
}

uint64_t Store::WalBytesWritten() const { return rep_->wal_bytes.load(std::memory_order_relaxed); }

Result<std::optional<std::string>> Store::Get(Family f, std::string_view key) const {
  std::string value;
  rocksdb::Status s = rep_->db->Get(rocksdb::ReadOptions(),
                                    rep_->handles[static_cast<int>(f) + 1], ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, std::string("reading ") + FamilyName(f));
  return std::optional<std::string>(std::move(value));
}

std::unique_ptr<Iterator> Store::NewIterator(Family f, std::string lower, std::string upper) const {
  return std::make_unique<RocksIterator>(rep_->db.get(), rep_->handles[static_cast<int>(f) + 1],
                                         std::move(lower), std::move(upper));
}

uint64_t Store::BytesOnDisk() const {
  return IntProperty("rocksdb.live-sst-files-size") + IntProperty("rocksdb.cur-size-all-mem-tables");
}

uint64_t Store::IntProperty(const std::string& name) const {
  uint64_t total = 0;
  for (auto* h : rep_->handles) {
    uint64_t v = 0;
    if (rep_->db->GetIntProperty(h, name, &v)) total += v;
  }
  return total;
}

}  // namespace statewatch::storage
