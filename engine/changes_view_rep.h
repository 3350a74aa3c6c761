// The inside of a ChangesView (include/statewatch/changes_view.h), filled by ChangesReader.
//
// Not thread-safe: one page per reader.
#ifndef STATEWATCH_ENGINE_CHANGES_VIEW_REP_H_
#define STATEWATCH_ENGINE_CHANGES_VIEW_REP_H_

#include <string>
#include <string_view>
#include <vector>

#include "engine/row_cache.h"
#include "statewatch/changes_view.h"

namespace statewatch {

struct ChangesView::Rep {
  std::vector<EventView> events;
  // With the row cache, the rows events[i] views (kept alive by the page): the first
  // pinned.size() from a cached run, the rest read from RocksDB.
  engine::PinnedRows pinned;
  std::vector<engine::CachedRowPtr> rows;
  // Without it: the rows' bytes back to back, each 8-byte aligned, and where each starts.
  std::vector<uint64_t> arena;
  std::vector<std::pair<std::size_t, std::size_t>> arena_rows;  // (word offset, bytes)
  // renderings[i] for events[i]: memoized with the row, or a slice of `rendered`.
  std::vector<std::string_view> renderings;
  std::string rendered;
  std::size_t cached = 0;

  // The row events[i] views, or null without the row cache.
  const engine::CachedRow* Row(std::size_t i) const {
    if (i < pinned.size()) return pinned[i].get();
    i -= pinned.size();
    return i < rows.size() ? rows[i].get() : nullptr;
  }
  const engine::CachedRowPtr& RowPtr(std::size_t i) const {
    return i < pinned.size() ? pinned[i] : rows[i - pinned.size()];
  }

  void Clear() {
    events.clear();
    pinned.clear();
    rows.clear();
    arena.clear();
    arena_rows.clear();
    renderings.clear();
    rendered.clear();
    cached = 0;
  }
};

namespace engine {
struct ChangesViewAccess {
  using Rep = ChangesView::Rep;
  static ChangesView::Rep& Of(ChangesView& view) { return *view.rep_; }
};
}  // namespace engine

}  // namespace statewatch

#endif  // STATEWATCH_ENGINE_CHANGES_VIEW_REP_H_
