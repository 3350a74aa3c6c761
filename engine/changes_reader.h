// ChangesReader: the read side of changesSince (docs/semantics.md,
// "Catching up: `changesSince`"). A page comes from the row cache when a cached run covers
// it, and otherwise from RocksDB through an iterator kept for reuse (a pool: creating a
// RocksDB iterator costs more than the page's first rows).
//
// A read has two steps. Begin() runs under the engine's shared lock, with the head,
// watermark and row-cap mark the engine read there: it samples the cache's generation,
// looks the page up, and when RocksDB is needed refreshes a pooled iterator — so the
// iterator's snapshot, the generation and the head are one consistent state (no row above
// the head, no row a later deletion removed is ever cached). Finish() runs after the lock
// is released: it reads what the cache lacked, fills the cache and builds the page.
//
// Thread-safe.
#ifndef STATEWATCH_ENGINE_CHANGES_READER_H_
#define STATEWATCH_ENGINE_CHANGES_READER_H_

#include <memory>
#include <mutex>
#include <vector>

#include "engine/changes_view_rep.h"
#include "engine/row_cache.h"
#include "statewatch/changes_view.h"
#include "storage/store.h"

namespace statewatch::engine {

class ChangesReader {
 public:
  // `store` must outlive the reader. `cache_bytes` 0: no row cache.
  ChangesReader(const storage::Store& store, std::size_t cache_bytes);
  ~ChangesReader();

  // What the engine read under its shared lock.
  struct Request {
    SessionRef session;  // REQUIRES: non-zero
    Sequence after = 0;
    int limit = 200;  // already clamped to 1..200
    Sequence head = 0;
    Sequence cap_mark = 0;  // every row at or below it is gone
  };

  // One read in progress: what Begin() found and holds.
  class Lease {
   public:
    Lease() = default;
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

   private:
    friend class ChangesReader;
    ChangesReader* reader_ = nullptr;
    std::unique_ptr<storage::Iterator> iter_;  // null when the cache covers the page
    uint64_t generation_ = 0;
    bool found_run_ = false;  // a run starts at or below the page's start
    RowCache::Hit hit_;
  };

  // Step 1, under the engine's shared lock.
  Status Begin(const Request& req, Lease* lease);
  // Step 2, without the lock: fills the page's events, truncated and earliest available
  // sequence (the caller sets state_version and history_gap). With `render`, every event
  // gets its rendering. Corruption when a row does not decode.
  Status Finish(const Request& req, Lease* lease, RowRenderer render, ChangesView* page);

  RowCache& cache() { return cache_; }

 private:
  struct Rows;  // what one RocksDB read found
  // Reads up to `want` of the session's rows with sequence in (from, head]: as cached rows
  // with the cache, into the page's arena without it. With `find_earliest`, also the
  // session's first row above the row-cap mark.
  Status ReadRows(const Request& req, storage::Iterator* it, Sequence from, std::size_t want,
                  bool find_earliest, ChangesViewAccess::Rep* rep, Rows* out);
  // The cached run ends below the head: reads on from its end, at most `want` rows past
  // `from`, and extends the run. `*rows` gets the rows above `from`.
  Status ExtendRun(const Request& req, Lease* lease, Sequence from, std::size_t want,
                   ChangesViewAccess::Rep* rep, std::vector<CachedRowPtr>* rows,
                   Sequence* earliest);
  // The page's first `n` events: views of `pinned` then `rows` (with the cache) or of its
  // arena rows.
  Status BuildEvents(std::size_t n, PinnedRows pinned, std::vector<CachedRowPtr> rows,
                     ChangesViewAccess::Rep* rep);
  void RenderEvents(SessionRef session, RowRenderer render, ChangesViewAccess::Rep* rep);
  std::unique_ptr<storage::Iterator> TakeIterator();
  void ReturnIterator(std::unique_ptr<storage::Iterator> it);

  const storage::Store& store_;
  RowCache cache_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<storage::Iterator>> pool_;
};

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_CHANGES_READER_H_
