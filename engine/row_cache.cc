#include "engine/row_cache.h"

#include <algorithm>
#include <cstring>

#include "engine/records.h"

namespace statewatch::engine {

namespace {

// What the allocator and the shared_ptr control block add per row beyond its fields, and
// per string beyond its characters (an estimate: the bound is on what the cache holds, so
// it errs on the high side).
constexpr std::size_t kRowOverhead = 64;
constexpr std::size_t kRenderingOverhead = sizeof(std::string) + 16;

bool SequenceBelow(const CachedRowPtr& row, Sequence seq) { return row->view().sequence < seq; }

}  // namespace

Result<std::shared_ptr<CachedRow>> CachedRow::Decode(std::string_view bytes) {
  auto row = std::make_shared<CachedRow>();
  row->bytes_.resize((bytes.size() + 7) / 8);
  std::memcpy(row->bytes_.data(), bytes.data(), bytes.size());
  std::string_view aligned(reinterpret_cast<const char*>(row->bytes_.data()), bytes.size());
  SW_RETURN_IF_ERROR(DecodeEventView(aligned, &row->view_));
  row->charge_ = sizeof(CachedRow) + row->bytes_.capacity() * sizeof(uint64_t) + kRowOverhead;
  return row;
}

RowCache::RowCache(std::size_t capacity_bytes) : capacity_(capacity_bytes) {}

uint64_t RowCache::Generation(SessionRef session) const {
  const Shard& shard = ShardOf(session);
  std::lock_guard lock(shard.mu);
  return shard.generation;
}

bool RowCache::Lookup(SessionRef session, Sequence from, Sequence head, std::size_t want,
                      Hit* hit) {
  if (!enabled()) return false;
  Shard& shard = ShardOf(session);
  std::lock_guard lock(shard.mu);
  auto it = shard.runs.find(session.value);
  if (it == shard.runs.end() || it->second.lo > from) {
    ++shard.misses;
    return false;
  }
  ++shard.hits;
  Run& run = it->second;
  shard.lru.splice(shard.lru.begin(), shard.lru, run.lru);
  hit->earliest = run.earliest;
  hit->hi = run.hi;
  const RowRun& rows = *run.rows;
  auto first = std::lower_bound(rows.begin(), rows.end(), from + 1, SequenceBelow);
  std::size_t n = 0;
  for (auto row = first; row != rows.end() && n < want && (*row)->view().sequence <= head; ++row) {
    ++n;
  }
  hit->rows = PinnedRows(run.rows, static_cast<std::size_t>(first - rows.begin()), n);
  hit->complete = n == want || run.hi >= head;
  return true;
}

void RowCache::Fill(SessionRef session, uint64_t generation, Sequence earliest, Sequence lo,
                    Sequence hi, const std::vector<CachedRowPtr>& rows, bool extends) {
  if (!enabled()) return;
  Shard& shard = ShardOf(session);
  std::lock_guard lock(shard.mu);
  // A deletion since the reader's snapshot: what it read may hold deleted rows.
  if (shard.generation != generation) return;
  auto it = shard.runs.find(session.value);
  if (extends) {
    if (it == shard.runs.end() || it->second.hi != lo || hi < lo) return;
  } else {
    if (it != shard.runs.end()) EraseLocked(shard, it);
    shard.lru.push_front(session.value);
    it = shard.runs.emplace(session.value, Run{earliest, lo, lo, std::make_shared<const RowRun>(), 0, shard.lru.begin()}).first;
  }
  Run& run = it->second;
  if (!rows.empty()) {
    // A new vector: pages may still hold the old one.
    auto next = std::make_shared<RowRun>();
    next->reserve(run.rows->size() + rows.size());
    next->assign(run.rows->begin(), run.rows->end());
    for (const CachedRowPtr& row : rows) {
      next->push_back(row);
      run.charge += row->charge();
      shard.bytes += row->charge();
    }
    run.rows = std::move(next);
  }
  run.hi = hi;
  if (run.earliest == 0 && !rows.empty()) run.earliest = rows.front()->view().sequence;
  shard.lru.splice(shard.lru.begin(), shard.lru, run.lru);
  TrimRunLocked(shard, run);
  EvictLocked(shard);
}

void RowCache::Forget(SessionRef session) {
  if (!enabled()) return;
  Shard& shard = ShardOf(session);
  std::lock_guard lock(shard.mu);
  ++shard.generation;
  auto it = shard.runs.find(session.value);
  if (it != shard.runs.end()) EraseLocked(shard, it);
}

void RowCache::Memoize(SessionRef session, const CachedRowPtr& row, RowRenderer render,
                       std::string rendering) {
  if (!enabled()) return;
  Shard& shard = ShardOf(session);
  std::lock_guard lock(shard.mu);
  // Publication happens under the lock so that it is charged exactly once; readers see it
  // through the atomic pointer.
  auto* mutable_row = const_cast<CachedRow*>(row.get());
  if (mutable_row->rendered_.load(std::memory_order_relaxed) != nullptr) return;
  std::size_t charge = rendering.capacity() + kRenderingOverhead;
  mutable_row->renderer_ = render;
  mutable_row->rendered_owner_ = std::make_unique<const std::string>(std::move(rendering));
  mutable_row->rendered_.store(mutable_row->rendered_owner_.get(), std::memory_order_release);
  auto it = shard.runs.find(session.value);
  if (it == shard.runs.end()) return;  // evicted meanwhile: the row dies with its pages
  Run& run = it->second;
  const RowRun& rows = *run.rows;
  auto pos = std::lower_bound(rows.begin(), rows.end(), row->view().sequence, SequenceBelow);
  if (pos == rows.end() || *pos != row) return;
  run.charge += charge;
  shard.bytes += charge;
  EvictLocked(shard);
}

RowCache::Stats RowCache::stats() const {
  Stats s;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    s.bytes += shard.bytes;
    s.runs += shard.runs.size();
    s.hits += shard.hits;
    s.misses += shard.misses;
    s.evictions += shard.evictions;
  }
  return s;
}

void RowCache::EraseLocked(Shard& shard, std::unordered_map<uint64_t, Run>::iterator it) {
  shard.bytes -= it->second.charge;
  shard.lru.erase(it->second.lru);
  shard.runs.erase(it);
}

void RowCache::TrimRunLocked(Shard& shard, Run& run) {
  const RowRun& rows = *run.rows;
  if (rows.size() <= kMaxRunRows) return;
  std::size_t drop = rows.size() - kMaxRunRows;
  for (std::size_t i = 0; i < drop; ++i) {
    std::size_t charge = rows[i]->charge();
    if (const std::string* r = rows[i]->rendered_.load(std::memory_order_relaxed)) {
      charge += r->capacity() + kRenderingOverhead;
    }
    run.charge -= charge;
    shard.bytes -= charge;
  }
  // The run now starts after the last row it dropped.
  run.lo = rows[drop - 1]->view().sequence;
  run.rows = std::make_shared<const RowRun>(rows.begin() + static_cast<std::ptrdiff_t>(drop),
                                            rows.end());
}

void RowCache::EvictLocked(Shard& shard) {
  std::size_t budget = capacity_ / kShards;
  while (shard.bytes > budget && !shard.lru.empty()) {
    EraseLocked(shard, shard.runs.find(shard.lru.back()));
    ++shard.evictions;
  }
}

}  // namespace statewatch::engine
