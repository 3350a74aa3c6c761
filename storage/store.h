// Store: statewatch's RocksDB database — one column family per kind of data (never one per
// session), RAII ownership of every handle, rocksdb::Status translated to statewatch::Status
// here and nowhere else. No RocksDB type appears in this header.
//
// Thread-safe (RocksDB's own guarantees): concurrent reads, and writes serialised by the
// caller's sequencer.
#ifndef STATEWATCH_STORAGE_STORE_H_
#define STATEWATCH_STORAGE_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log/log_backend.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::storage {

// DO NOT CHANGE the names (they are persisted by RocksDB); append new families at the end.
enum class Family : int {
  kJournal = 0,
  kBySeq,
  kLog,
  kHeads,
  kCursors,
  kBase,
  kDedupe,
  kRefs,
  kSessions,
  kMeta,
  kTranscripts,
  kRuns,
  kDeliveries,
  kUpstream,
  kWebhooks,
  kRequests,  // X-Request-Id records: random point keys, a hashed memtable (store.cc)
  kCount,  // not a family
};
const char* FamilyName(Family f);

// Fault injection for tests: makes the Nth write or sync of the database's files fail.
// Shared between the test and the store; thread-safe.
class FaultInjector {
 public:
  virtual ~FaultInjector() = default;
  // After `n` more successful file appends (WAL, SST, MANIFEST), every append fails.
  virtual void FailWritesAfter(uint64_t n) = 0;
  // After `n` more successful syncs, every sync fails.
  virtual void FailSyncsAfter(uint64_t n) = 0;
  // After `n` more successful file appends, every append fails with "no space left on
  // device" (a full disk: retryable once healed, unlike the failures above).
  virtual void NoSpaceAfter(uint64_t n) = 0;
  virtual void Heal() = 0;
  // While held, every sync waits until ReleaseSyncs() (group-commit tests: writers queue up
  // behind a commit whose fsync has not returned). Heal() does not release them.
  virtual void HoldSyncs() = 0;
  virtual void ReleaseSyncs() = 0;
  // Syncs waiting in HoldSyncs right now.
  virtual uint64_t held_syncs() const = 0;
};
std::shared_ptr<FaultInjector> NewFaultInjector();

// Decides, during compaction, that a record may be dropped for good. Called from RocksDB's
// background threads: must be thread-safe and quick, and must never throw.
using DropFilter = std::function<bool(std::string_view key, std::string_view value)>;

struct StoreOptions {
  // Create a database when the directory is missing or empty (never over anything else).
  // Without it such a directory is NotFound("no database at <path>").
  bool create_if_missing = true;
  // Open without writing anything: no file is created, deleted or appended, and no lock is
  // taken, so this works while another process has the database open for writing (it then
  // sees the state as of the open). Writes fail. Implies !create_if_missing.
  bool read_only = false;
  // When the directory holds more write-ahead log files than this at open, the memtables
  // are flushed (and the logs deleted) so that one-shot processes, each of which starts a
  // new log, leave a bounded number of files. Recovered writes are otherwise kept in the
  // log rather than flushed into tiny SST files at every open.
  std::size_t max_wal_files_at_open = 8;
  // Per-family compaction filters (absent: keep everything).
  std::map<Family, DropFilter> drop_filters;
  std::size_t block_cache_bytes = 64u << 20;
  std::size_t write_buffer_bytes = 16u << 20;
  std::shared_ptr<FaultInjector> faults;  // tests only; null in production
};

// A set of changes applied atomically by Store::Write. It is also the keyed writes of a
// commit group's log record (log::KeyedWrites): the local log (storage/local_log.h) adds the
// record to it and writes both at once. Reusable: Clear() keeps the capacity.
class Store;
class Batch final : public log::KeyedWrites {
 public:
  // The batch writes to `store`'s families; it must not outlive the store.
  explicit Batch(const Store& store);
  ~Batch() override;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  void Put(Family f, std::string_view key, std::string_view value);
  void Delete(Family f, std::string_view key);
  // Deletes [begin, end).
  void DeleteRange(Family f, std::string_view begin, std::string_view end);
  std::size_t Count() const override;
  std::size_t ByteSize() const;
  // RocksDB's WriteBatch representation (what a standby would apply again).
  std::string_view Serialized() const override;
  void Clear();

  // One write of the batch, as ForEachWrite reports it. `value` is a Put's value or a
  // DeleteRange's end key (empty for a Delete). Both views live as long as the batch does.
  struct Write {
    enum class Op { kPut, kDelete, kDeleteRange };
    Op op = Op::kPut;
    Family family = Family::kJournal;
    std::string_view key;
    std::string_view value;
  };
  // Calls `fn` for each write, in the order they were added (a replicated log ships them
  // by family rather than by RocksDB's column-family ids, which are per database).
  // Corruption when a write names no family of this store or is of another kind.
  Status ForEachWrite(const std::function<void(const Write&)>& fn) const;

 private:
  friend class Store;
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

// Forward iterator over one family within [lower, upper).
class Iterator {
 public:
  virtual ~Iterator() = default;
  virtual bool Valid() const = 0;
  virtual void SeekToFirst() = 0;
  virtual void SeekToLast() = 0;
  virtual void Prev() = 0;
  virtual void Seek(std::string_view target) = 0;
  virtual void Next() = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  // Non-OK when iteration stopped because of an error (not at the end of the range).
  virtual Status status() const = 0;
  // Moves the iterator to the database's latest state (it sees what was written since it
  // was created or last refreshed) and unpositions it: Seek next. Much cheaper than a new
  // iterator while no flush or compaction has changed the files (RocksDB then only moves
  // the iterator's sequence number). Lets a reader keep one iterator per family for reuse.
  virtual Status Refresh() = 0;
};

class Store {
 public:
  // Opens (or, see StoreOptions::create_if_missing, creates) the database under `path`.
  // Errors: Busy when another process holds its lock (writable opens only); NotFound "no
  // database at <path>"; Corruption naming what is missing or damaged (CURRENT, MANIFEST, a
  // write-ahead log damaged before valid records — storage/wal_check.h); NoSpace when the
  // disk is full. A refused open changes nothing on disk.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, const StoreOptions& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Applies `batch` atomically. With `sync` the WAL is fsynced before returning.
  // NoSpace when the disk is full: nothing was applied, and every later write fails the same
  // way until Resume() succeeds.
  Status Write(Batch& batch, bool sync);

  // After a NoSpace error: lets RocksDB flush, switch to a new write-ahead log and clear the
  // error once space is available again (NoSpace while it is not). FailedPrecondition when
  // this process cannot switch logs (every memtable empty at the failure): reopen then.
  // OK when there was no error. REQUIRES: no concurrent Write().
  Status Resume();

  // Reads every SST file and checks its block checksums; Corruption names the file.
  Status VerifyChecksums() const;

  bool read_only() const;

  // nullopt when the key is absent.
  Result<std::optional<std::string>> Get(Family f, std::string_view key) const;

  // An iterator over [lower, upper); empty bounds mean unbounded on that side.
  std::unique_ptr<Iterator> NewIterator(Family f, std::string lower = {},
                                        std::string upper = {}) const;

  // Calls `fn` for every key/value of every family — family by family in Family order, keys
  // in order within one — all read through one RocksDB snapshot, so that what it sees is the
  // database at a single point even while writes go on (a cluster checkpoint,
  // cluster/checkpoint_codec.h). The views live until `fn` returns. Stops at, and returns,
  // the first non-OK result of `fn`; an iterator's error otherwise.
  Status ForEachInSnapshot(
      const std::function<Status(Family f, std::string_view key, std::string_view value)>& fn)
      const;

  // Bytes handed to the write-ahead log by Write() since open (the batches' data size).
  uint64_t WalBytesWritten() const;
  // Total size of the live SST files and WAL, in bytes.
  uint64_t BytesOnDisk() const;
  // Every fsync of the write-ahead log since open, in seconds (storage/io_metrics.h).
  HistogramData WalSyncLatency() const;
  // Compactions, flushes and write stalls, read now (the fields' comments in types.h).
  RocksDbStats RocksDb() const;
  // A RocksDB integer property (e.g. "rocksdb.estimate-num-keys") summed over families.
  uint64_t IntProperty(const std::string& name) const;
  const std::string& path() const;

  // A RocksDB checkpoint of the open database in `dir` (which must not exist): SST files
  // hard-linked where possible, the memtables flushed first. InvalidArgument when `dir`
  // exists; IOError otherwise.
  Status Checkpoint(const std::string& dir) const;

  struct Rep;  // opaque: RocksDB handles (store.cc)

 private:
  friend class Batch;
  explicit Store(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_STORE_H_
