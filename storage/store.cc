#include "storage/store.h"

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "storage/db_directory.h"
#include "storage/fault_file_system.h"
#include "storage/key_codec.h"
#include "storage/io_metrics.h"
#include "storage/rocks_logger.h"
#include "storage/store_rep.h"
#include "storage/wal_check.h"

namespace statewatch::storage {

// Status FromRocks: the only place a rocksdb::Status becomes a statewatch::Status.
Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::OK();
  std::string msg = std::string(what) + ": " + s.ToString();
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  if (s.IsNoSpace()) return Status::NoSpace("no space left on device (" + msg + ")");
  if (s.IsNotFound()) return Status::NotFound(std::move(msg));
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Status::Busy(std::move(msg));
  }
  if (s.IsInvalidArgument()) return Status::InvalidArgument(std::move(msg));
  return Status::IOError(std::move(msg));
}

namespace {

class RocksIterator final : public Iterator {
 public:
  RocksIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string lower,
                std::string upper)
      : lower_(std::move(lower)), upper_(std::move(upper)) {
    rocksdb::ReadOptions ro;
    ro.total_order_seek = true;  // the requests family has a prefix extractor (FamilyOptions)
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
  Status Refresh() override { return FromRocks(it_->Refresh(), "refreshing an iterator"); }

 private:
  // The bounds must outlive the iterator: ReadOptions keeps pointers to them.
  std::string lower_, upper_;
  rocksdb::Slice lower_slice_, upper_slice_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace

// See Open: the column family that keeps builds before format 2 from writing.
constexpr const char* kFormatFenceFamily = "format_2";

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
    case Family::kWebhooks: return "webhooks";
    case Family::kRequests: return "requests";
    case Family::kCount: break;
  }
  return "?";
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
class HintPrefix final : public rocksdb::SliceTransform {
 public:
  explicit HintPrefix(std::size_t prefix) : prefix_(prefix) {}
  const char* Name() const override { return "statewatch.HintPrefix"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), prefix_);
  }
  bool InDomain(const rocksdb::Slice& key) const override { return key.size() >= prefix_; }

 private:
  const std::size_t prefix_;
};

// The requests family holds X-Request-Id records ('Q' <id>): each id is new and random, so
// in a skiplist memtable every record's insert searched from the top with a cache miss a
// level (the largest single cost of a request with an id, ~14 us at 100,000 records). A
// hashed memtable (HashLinkList: a bucket is a linked list, so ~170 bytes a record against
// ~280 for HashSkipList's skiplist a bucket) puts each key in a bucket of its own instead.
// Its buckets are chosen by the family's prefix extractor, which here is the whole key: ids
// are arbitrary (a client's "req-000001", "req-000002", ... share any fixed prefix and would
// pile into one bucket), and a lookup is only ever of a whole key. The cost is paid where order is needed: an
// iterator over the family (the sweep, once a minute) sorts the memtable's records, and
// every iterator of the store is a total-order one (RocksIterator).
class WholeKey final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "statewatch.WholeKey"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override { return key; }
  bool InDomain(const rocksdb::Slice& /*key*/) const override { return true; }
};

// Buckets of the requests family's memtable: about as many as the records a memtable holds
// (a record takes ~170 bytes there), at 8 bytes a bucket from the memtable's own budget.
std::size_t RequestBuckets(std::size_t write_buffer_bytes) {
  return std::max<std::size_t>(1024, write_buffer_bytes / 128);
}

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
    case Family::kRequests:
      o.prefix_extractor = std::make_shared<WholeKey>();
      o.memtable_factory.reset(
          rocksdb::NewHashLinkListRepFactory(RequestBuckets(o.write_buffer_size)));
      // Every request with an X-Request-Id first looks its record up here, and a fresh id
      // is not there: a bloom filter answers that miss without searching the bucket (its
      // SSTs get one too: OpenRocks).
      o.memtable_prefix_bloom_size_ratio = 0.02;
      break;
    default:
      break;  // by_seq, log, deliveries: keys already arrive in order
  }
  if (prefix > 0) {
    o.memtable_insert_with_hint_prefix_extractor = std::make_shared<HintPrefix>(prefix);
  }
  return o;
}

// RocksDB would recover from a full disk on its own, polling for free space in the
// background, and a manual Resume() returns Busy meanwhile. The engine resumes instead, at
// the next write it is asked for, so that a write after space was freed succeeds at once.
class ManualRecovery final : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/, rocksdb::Status /*error*/,
                            bool* auto_recovery) noexcept override {
    *auto_recovery = false;
  }
};

rocksdb::DBOptions DbOptionsFor(const StoreOptions& options, bool create) {
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = create;
  db_opts.create_missing_column_families = !options.read_only;
  // Never an info LOG file (storage/rocks_logger.h).
  db_opts.info_log = NewSpdlogRocksLogger();
  db_opts.listeners.push_back(std::make_shared<ManualRecovery>());
  // Many families share one WAL; cap it so a rarely written family cannot pin old logs.
  db_opts.max_total_wal_size = 64u << 20;
  // The recovered writes stay in the log instead of becoming one tiny SST per family at
  // every open (a one-shot command opens once per write); Open() bounds the logs instead.
  db_opts.avoid_flush_during_recovery = true;
  // Stop at a damaged tail; damage with valid records after it is refused before RocksDB
  // sees it (storage/wal_check.h).
  db_opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  // One writer (the engine's commit leader) at a time: concurrent memtable writes buy
  // nothing, and insert hints (FamilyOptions) require them off.
  db_opts.allow_concurrent_memtable_write = false;
  return db_opts;
}

// The families to open. A read-only open cannot create a family that an older database
// lacks: such a family is served by the default family, which statewatch never writes, so
// reads of it find nothing.
Status OpenRocks(const std::string& path, const StoreOptions& options,
                 const rocksdb::DBOptions& db_opts, Store::Rep* rep) {
  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  rocksdb::ColumnFamilyOptions cf_opts;
  cf_opts.write_buffer_size = options.write_buffer_bytes;
  cf_opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // The requests family's point lookups (X-Request-Id records) mostly miss: a bloom filter per
  // SST lets a miss skip each file's index and data blocks.
  rocksdb::BlockBasedTableOptions filtered = table;
  filtered.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  std::shared_ptr<rocksdb::TableFactory> filtered_tables(
      rocksdb::NewBlockBasedTableFactory(filtered));
  std::vector<std::string> existing;
  if (options.read_only) {
    rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_opts, path, &existing);
    if (!s.ok()) return FromRocks(s, "opening database \"" + path + "\"");
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  std::vector<int> slot;  // descs index -> Family + 1 (0: default, -1: the format fence)
  descs.emplace_back(rocksdb::kDefaultColumnFamilyName, cf_opts);
  slot.push_back(0);
  for (int i = 0; i < static_cast<int>(Family::kCount); ++i) {
    Family f = static_cast<Family>(i);
    if (options.read_only &&
        std::find(existing.begin(), existing.end(), FamilyName(f)) == existing.end()) {
      continue;
    }
    rocksdb::ColumnFamilyOptions o = FamilyOptions(f, cf_opts);
    if (f == Family::kRequests) o.table_factory = filtered_tables;
    if (auto it = options.drop_filters.find(f); it != options.drop_filters.end()) {
      rep->filters.push_back(std::make_unique<DropCompactionFilter>(it->second));
      o.compaction_filter = rep->filters.back().get();
    }
    descs.emplace_back(FamilyName(f), o);
    slot.push_back(i + 1);
  }
  // The fence: builds before format 2 do not know this family, and RocksDB refuses a
  // writable open that does not name every family, so such a build cannot open a format-2
  // database for writing (its projections would be the last checkpoint's and it would hand
  // out sequences again). Never written; a read-only open takes it where it exists.
  if (!options.read_only || std::find(existing.begin(), existing.end(), kFormatFenceFamily) !=
                                existing.end()) {
    descs.emplace_back(kFormatFenceFamily, cf_opts);
    slot.push_back(-1);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      options.read_only
          ? rocksdb::DB::OpenForReadOnly(db_opts, path, descs, &handles, &raw)
          : rocksdb::DB::Open(db_opts, path, descs, &handles, &raw);
  if (!s.ok()) return FromRocks(s, "opening database \"" + path + "\"");
  rep->db.reset(raw);
  rep->owned_handles = handles;
  rep->handles.assign(static_cast<int>(Family::kCount) + 1, handles[0]);
  for (std::size_t i = 0; i < handles.size(); ++i) {
    if (slot[i] >= 0) rep->handles[slot[i]] = handles[i];
  }
  return Status::OK();
}

// Families keyed by sequence (by_seq, log) never overlap older files, so their flushed files
// move down a level unmerged ("trivial move") and pile up. A family holding more than a few
// files that are small on average is merged into one; called only after BoundLogFiles had
// to flush, i.e. about once every max_wal_files_at_open one-shot commands.
Status CompactTinyFiles(Store::Rep* rep) {
  std::vector<rocksdb::LiveFileMetaData> files;
  rep->db->GetLiveFilesMetaData(&files);
  for (auto* h : rep->owned_handles) {
    uint64_t count = 0, bytes = 0;
    for (const auto& f : files) {
      if (f.column_family_name == h->GetName()) {
        ++count;
        bytes += f.size;
      }
    }
    if (count <= 4 || bytes / count > (1u << 20)) continue;
    rocksdb::CompactRangeOptions cro;
    cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    SW_RETURN_IF_ERROR(FromRocks(rep->db->CompactRange(cro, h, nullptr, nullptr),
                                 std::string("compacting ") + h->GetName() + " at open"));
  }
  return Status::OK();
}

// Each open starts a new write-ahead log and, with avoid_flush_during_recovery, keeps the
// old ones; past `max_wal_files` logs the memtables are flushed so the logs can go, and the
// compactions that flush makes due are waited for (bounded), so that a series of one-shot
// commands — each too short-lived for a background compaction to finish — leaves a bounded
// number of SST files too.
Status BoundLogFiles(Store::Rep* rep, std::size_t wal_files, std::size_t max_wal_files) {
  if (wal_files <= max_wal_files) return Status::OK();
  rocksdb::FlushOptions fo;
  fo.wait = true;
  std::vector<rocksdb::ColumnFamilyHandle*> all = rep->owned_handles;
  SW_RETURN_IF_ERROR(FromRocks(rep->db->Flush(fo, all), "flushing at open"));
  for (int i = 0; i < 2000; ++i) {  // at most ~10 s
    uint64_t pending = 0, running = 0;
    rep->db->GetIntProperty("rocksdb.compaction-pending", &pending);
    rep->db->GetIntProperty("rocksdb.num-running-compactions", &running);
    bool any_pending = pending > 0;
    for (auto* h : all) {
      uint64_t p = 0;
      if (rep->db->GetIntProperty(h, "rocksdb.compaction-pending", &p) && p > 0) any_pending = true;
    }
    if (!any_pending && running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return CompactTinyFiles(rep);
}

// A log that ends in a torn tail (a write cut off by a crash: never acknowledged under sync
// durability) is read again by every open that keeps it, and RocksDB would say so each time.
// A writable open flushes what recovery read from it, so the log is obsolete and deleted
// right away, and says so once, here; a read-only open cannot retire it and says that.
Status RetireTornLogs(Store::Rep* rep, const std::vector<TornTail>& torn) {
  if (torn.empty()) return Status::OK();
  if (!rep->read_only) {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    SW_RETURN_IF_ERROR(FromRocks(rep->db->Flush(fo, rep->owned_handles),
                                 "flushing the writes recovered before a torn log tail"));
  }
  for (const TornTail& t : torn) {
    if (rep->read_only) {
      spdlog::info(
          "event=wal_tail_found file={} offset={} bytes={}: a write cut off by a crash; "
          "recovery skips it, and the next writable open retires the log",
          t.file, t.offset, t.dropped);
    } else {
      spdlog::warn(
          "event=wal_tail_dropped file={} offset={} bytes={}: a write cut off by a crash was "
          "dropped (never acknowledged under sync durability); the log is retired",
          t.file, t.offset, t.dropped);
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, const StoreOptions& options) {
  auto dir = InspectDirectory(path);
  if (!dir.ok()) return dir.status();
  bool create = false;
  if (dir->state != DirectoryState::kDatabase) {
    if (options.read_only || !options.create_if_missing) {
      return Status::NotFound("no database at " + path);
    }
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return Status::IOError("cannot create " + path + ": " + ec.message());
    create = true;
  }
  std::vector<TornTail> torn;
  if (!create) SW_RETURN_IF_ERROR(CheckWriteAheadLogs(dir->wal_files, &torn));
  auto rep = std::make_unique<Rep>();
  rep->path = path;
  rep->read_only = options.read_only;
  rocksdb::DBOptions db_opts = DbOptionsFor(options, create);
  std::shared_ptr<rocksdb::FileSystem> fs = rocksdb::FileSystem::Default();
  if (options.faults) fs = NewFaultyFileSystem(fs, options.faults);
  rep->env = rocksdb::NewCompositeEnv(NewWalSyncTimingFileSystem(fs, rep->io));
  db_opts.env = rep->env.get();
  db_opts.listeners.push_back(NewStallListener(rep->io));
  Status opened = OpenRocks(path, options, db_opts, rep.get());
  // A writer that holds the database may delete an obsolete log between a read-only open's
  // listing of the directory and its reading the file: that open is simply retried.
  for (int retry = 0; options.read_only && opened.code() == Status::Code::kIOError && retry < 3;
       ++retry) {
    rep->filters.clear();
    opened = OpenRocks(path, options, db_opts, rep.get());
  }
  SW_RETURN_IF_ERROR(opened);
  SW_RETURN_IF_ERROR(RetireTornLogs(rep.get(), torn));
  if (!options.read_only) {
    SW_RETURN_IF_ERROR(BoundLogFiles(rep.get(), dir->wal_files.size(), options.max_wal_files_at_open));
  }
  return std::unique_ptr<Store>(new Store(std::move(rep)));
}

bool Store::read_only() const { return rep_->read_only; }

Status Store::Resume() {
  if (rep_->read_only) return Status::OK();
  // After a failed log append RocksDB 7.8 keeps the broken log writer unless Resume()
  // switches to a new log, which it does only by flushing a non-empty memtable (its
  // recovery path then retries the old writer's buffer first). With every memtable empty,
  // Resume() would report success and the next write through that writer would abort the
  // process (WritableFileWriter's assertion). That case needs a reopen.
  uint64_t entries = 0;
  for (auto* h : rep_->owned_handles) {
    uint64_t n = 0;
    if (rep_->db->GetIntProperty(h, "rocksdb.num-entries-active-mem-table", &n)) entries += n;
  }
  if (entries == 0) {
    return Status::FailedPrecondition(
        "the disk was full and the write-ahead log cannot be switched in this process; "
        "reopen the engine (restart the daemon) to resume writes");
  }
  Status st = FromRocks(rep_->db->Resume(), "resuming writes");
  if (st.ok() || st.IsNoSpace()) return st;
  // Called only after a full disk: what stops a resume now is a consequence of it (RocksDB
  // keeps the first error of a series), so it stays retryable.
  return Status::NoSpace("no space left on device: writes cannot resume yet (" + st.message() +
                         ")");
}

Status Store::VerifyChecksums() const {
  return FromRocks(rep_->db->VerifyChecksum(), "verifying SST checksums");
}

Status Store::Write(Batch& batch, bool sync) {
  if (!batch.rep_->first_error.ok()) return FromRocks(batch.rep_->first_error, "building batch");
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  Status st = FromRocks(rep_->db->Write(wo, &batch.rep_->wb), "writing batch");
  // One log record per write: the batch and its 7-byte header (block padding and the
  // headers of a record split across 32 KiB blocks are left out).
  constexpr uint64_t kLogRecordHeader = 7;
  if (st.ok()) {
    rep_->wal_bytes.fetch_add(batch.rep_->wb.GetDataSize() + kLogRecordHeader,
                              std::memory_order_relaxed);
  }
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

Status Store::ForEachInSnapshot(
    const std::function<Status(Family f, std::string_view key, std::string_view value)>& fn)
    const {
  rocksdb::DB* db = rep_->db.get();
  // Released however this returns: a held snapshot pins old versions against compaction.
  std::unique_ptr<const rocksdb::Snapshot, std::function<void(const rocksdb::Snapshot*)>> snap(
      db->GetSnapshot(), [db](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); });
  for (int i = 0; i < static_cast<int>(Family::kCount); ++i) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snap.get();
    ro.fill_cache = false;  // a whole-database read would evict the working set
    ro.total_order_seek = true;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, rep_->handles[i + 1]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      rocksdb::Slice k = it->key(), v = it->value();
      SW_RETURN_IF_ERROR(fn(static_cast<Family>(i), std::string_view(k.data(), k.size()),
                            std::string_view(v.data(), v.size())));
    }
    if (!it->status().ok()) {
      return FromRocks(it->status(), std::string("reading ") + FamilyName(static_cast<Family>(i)) +
                                         " for a snapshot");
    }
  }
  return Status::OK();
}

std::unique_ptr<Iterator> Store::NewIterator(Family f, std::string lower, std::string upper) const {
  return std::make_unique<RocksIterator>(rep_->db.get(), rep_->handles[static_cast<int>(f) + 1],
                                         std::move(lower), std::move(upper));
}

Status Store::Checkpoint(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(rep_->db.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  if (s.ok()) s = checkpoint->CreateCheckpoint(dir);
  if (s.ok()) return Status::OK();
  // RocksDB answers InvalidArgument ("Directory exists") for an existing target.
  if (s.IsInvalidArgument()) {
    return Status::InvalidArgument("backup target \"" + dir + "\" already exists (" +
                                   s.ToString() + ")");
  }
  return FromRocks(s, "writing a checkpoint to \"" + dir + "\"");
}

uint64_t Store::BytesOnDisk() const {
  return IntProperty("rocksdb.live-sst-files-size") + IntProperty("rocksdb.cur-size-all-mem-tables");
}

HistogramData Store::WalSyncLatency() const { return rep_->io->wal_sync.Snapshot(); }

RocksDbStats Store::RocksDb() const {
  RocksDbStats s;
  auto db_wide = [&](const char* name) {  // a DB-wide property: read once, not per family
    uint64_t v = 0;
    return rep_->db->GetIntProperty(name, &v) ? v : 0;
  };
  s.write_stopped = db_wide("rocksdb.is-write-stopped") != 0;
  s.delayed_write_rate = db_wide("rocksdb.actual-delayed-write-rate");
  s.running_compactions = db_wide("rocksdb.num-running-compactions");
  s.running_flushes = db_wide("rocksdb.num-running-flushes");
  s.compactions_pending = IntProperty("rocksdb.compaction-pending");
  s.pending_compaction_bytes = IntProperty("rocksdb.estimate-pending-compaction-bytes");
  rep_->io->FillStalls(&s);
  return s;
}

uint64_t Store::IntProperty(const std::string& name) const {
  uint64_t total = 0;
  for (auto* h : rep_->owned_handles) {
    uint64_t v = 0;
    if (rep_->db->GetIntProperty(h, name, &v)) total += v;
  }
  return total;
}

}  // namespace statewatch::storage
