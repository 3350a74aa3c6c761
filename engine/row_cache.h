// RowCache: decoded journal rows of recently read pages, per session, bounded in bytes, so
// that a changesSince page whose rows are all cached skips RocksDB, and the page's rendered
// JSON is built once per row (ChangesView::rendered).
//
// What a cached run means. For one session, a run says: "the session's retained rows with
// sequence in (lo, hi] are exactly these, and its earliest retained row is `earliest`".
// A row's bytes never change and a sequence is never reused, so appends never make a run
// wrong (they land above hi and are read from RocksDB, then appended to the run). Only
// deletions do: every journal row deletion (pruning by age or the row cap, DeleteSession)
// calls Forget(session) when the engine folds the deleting group — under its exclusive lock,
// after the batch is durable — which drops the run and moves the shard's generation. A
// reader samples Generation() under the engine's shared lock, the same moment its RocksDB
// snapshot is taken, and Fill() refuses a run whose generation is stale. So a run read from
// a snapshot before the deletion is either stored before the fold (and dropped by it) or
// refused after it; a reader that begins after the fold sees the deletion in RocksDB too.
// (Forgetting before the batch write would not do: the batch is written outside the lock,
// so a reader could sample the new generation with a snapshot that still has the rows.)
//
// Thread-safe.
#ifndef STATEWATCH_ENGINE_ROW_CACHE_H_
#define STATEWATCH_ENGINE_ROW_CACHE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schema/session_ref.h"
#include "statewatch/changes_view.h"
#include "statewatch/status.h"

namespace statewatch::engine {

// One decoded journal row: its bytes (8-byte aligned) and the views into them, plus a
// rendering memoized once by the cache. Immutable once published.
class CachedRow {
 public:
  // Copies and decodes a journal row (DecodeEventView's checks apply).
  static Result<std::shared_ptr<CachedRow>> Decode(std::string_view bytes);

  const EventView& view() const { return view_; }
  // The memoized rendering by `render`, or null when there is none (yet, or by another
  // renderer).
  const std::string* Rendering(RowRenderer render) const {
    const std::string* r = rendered_.load(std::memory_order_acquire);
    return r != nullptr && renderer_ == render ? r : nullptr;
  }
  // Bytes the row holds in memory (without its rendering).
  std::size_t charge() const { return charge_; }

 private:
  friend class RowCache;
  EventView view_;
  std::vector<uint64_t> bytes_;
  std::size_t charge_ = 0;
  // Set once, under the owning shard's lock (RowCache::Memoize); read without it.
  RowRenderer renderer_ = nullptr;
  std::atomic<const std::string*> rendered_{nullptr};
  std::unique_ptr<const std::string> rendered_owner_;
};
using CachedRowPtr = std::shared_ptr<const CachedRow>;
using RowRun = std::vector<CachedRowPtr>;

// Consecutive rows of a cached run, pinned by one reference to the run's row vector. A run's
// vector is never changed once published (Fill and trimming publish a new one), so a page
// holds its rows this way while the cache moves on: one reference count per page instead of
// one per row, taken under the shard's lock that every reader of the session shares.
class PinnedRows {
 public:
  PinnedRows() = default;
  PinnedRows(std::shared_ptr<const RowRun> run, std::size_t first, std::size_t count)
      : run_(std::move(run)), first_(first), count_(count) {}

  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  const CachedRowPtr& operator[](std::size_t i) const { return (*run_)[first_ + i]; }
  const CachedRowPtr& front() const { return (*this)[0]; }  // REQUIRES: !empty()
  RowRun::const_iterator begin() const { return run_ ? run_->begin() + Offset() : Empty(); }
  RowRun::const_iterator end() const { return begin() + static_cast<std::ptrdiff_t>(count_); }
  // Keeps the first `n` rows (n <= size()).
  void Truncate(std::size_t n) { count_ = n; }
  void clear() {
    run_.reset();
    first_ = count_ = 0;
  }

 private:
  std::ptrdiff_t Offset() const { return static_cast<std::ptrdiff_t>(first_); }
  static RowRun::const_iterator Empty() {
    static const RowRun kEmpty;
    return kEmpty.begin();
  }
  std::shared_ptr<const RowRun> run_;
  std::size_t first_ = 0, count_ = 0;
};

class RowCache {
 public:
  // `capacity_bytes` 0 disables the cache: Lookup always misses, Fill keeps nothing.
  explicit RowCache(std::size_t capacity_bytes);
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  bool enabled() const { return capacity_ > 0; }

  // The generation a Fill for `session` must present. Sample it under the engine's shared
  // lock, together with the head and the iterator's snapshot.
  uint64_t Generation(SessionRef session) const;

  // What Lookup found: rows with sequence in (from, min(hi, head)], at most `want` of them.
  struct Hit {
    Sequence earliest = 0;  // the session's earliest retained row (0: none)
    Sequence hi = 0;        // the run ends here
    bool complete = false;  // `want` rows found, or the run reaches `head`
    PinnedRows rows;
  };
  // False when no run of `session` starts at or below `from`.
  bool Lookup(SessionRef session, Sequence from, Sequence head, std::size_t want, Hit* hit);

  // Stores a run read from RocksDB: the session's retained rows in (lo, hi] are `rows`
  // (ascending). With `extends` the run continues an existing run that ends at lo (rows
  // are appended; nothing happens when it no longer ends there); otherwise it replaces any
  // run of the session. Ignored when `generation` is stale.
  void Fill(SessionRef session, uint64_t generation, Sequence earliest, Sequence lo, Sequence hi,
            const std::vector<CachedRowPtr>& rows, bool extends);

  // Drops the session's run. Called for every deletion of one of its journal rows, when the
  // deleting group is folded (after its batch is durable, under the engine's exclusive lock).
  void Forget(SessionRef session);

  // Publishes `rendering` as the row's memoized rendering by `render` (first one wins), and
  // charges it to the cache while the row stays cached.
  void Memoize(SessionRef session, const CachedRowPtr& row, RowRenderer render,
               std::string rendering);

  struct Stats {
    std::size_t bytes = 0;  // charged bytes now
    std::size_t runs = 0;
    uint64_t hits = 0, misses = 0, evictions = 0;
  };
  Stats stats() const;

  // A run keeps at most this many rows (its oldest go first), so one session's long
  // history cannot take the whole cache.
  static constexpr std::size_t kMaxRunRows = 1024;

 private:
  struct Run {
    Sequence earliest = 0, lo = 0, hi = 0;
    std::shared_ptr<const RowRun> rows = std::make_shared<const RowRun>();  // never changed
    std::size_t charge = 0;
    std::list<uint64_t>::iterator lru;
  };
  struct Shard {
    mutable std::mutex mu;
    uint64_t generation = 0;
    std::unordered_map<uint64_t, Run> runs;
    std::list<uint64_t> lru;  // most recently used first
    std::size_t bytes = 0;
    uint64_t hits = 0, misses = 0, evictions = 0;
  };
  static constexpr std::size_t kShards = 16;

  Shard& ShardOf(SessionRef s) { return shards_[s.value % kShards]; }
  const Shard& ShardOf(SessionRef s) const { return shards_[s.value % kShards]; }
  void EraseLocked(Shard& shard, std::unordered_map<uint64_t, Run>::iterator it);
  void TrimRunLocked(Shard& shard, Run& run);
  void EvictLocked(Shard& shard);

  const std::size_t capacity_;  // per shard: capacity_ / kShards
  std::array<Shard, kShards> shards_;
};

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_ROW_CACHE_H_
