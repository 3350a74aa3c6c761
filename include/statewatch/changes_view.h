// ChangesView: a changesSince page without a copy per field — the lean variant of
// ChangesPage (types.h) for hot readers, filled by Engine::ReadChanges.
//
// Its events are views into rows the page holds: rows shared with the engine's cache of
// recent rows (EngineOptions::row_cache_bytes), or the page's own arena. They stay valid
// until the page is refilled, cleared or destroyed — also after the engine evicts or prunes
// those rows, and after the engine is closed. A page can be reused across reads: it keeps
// its capacity, so a reader that reuses one page allocates nothing per row.
//
// Not thread-safe: one page per reader.
#ifndef STATEWATCH_CHANGES_VIEW_H_
#define STATEWATCH_CHANGES_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/types.h"

namespace statewatch {

namespace engine {
struct ChangesViewAccess;
}

// A stored event whose strings are views (see ChangesView for how long they live).
struct EventView {
  Sequence sequence = 0;
  std::string_view session_key;
  std::string_view agent_id;
  std::string_view session_id;
  std::string_view kind;
  ActorType actor_type = ActorType::kSystem;
  std::string_view actor_id;
  std::string_view run_id;
  int64_t occurred_at_ms = 0;
  std::string_view summary;
  std::string_view payload_json;  // "" when absent
  std::string_view dedupe_key;
  std::string_view traceparent;  // "" when absent

  Event ToEvent() const;                    // an owning copy
  static EventView Of(const Event& event);  // views of `event`'s strings
};

// Bytes derived from a row alone, e.g. its JSON rendering. Must be a pure function of the
// event (a row's bytes never change, so its rendering is memoized with the row).
using RowRenderer = void (*)(const EventView& event, std::string* out);

class ChangesView {
 public:
  ChangesView();
  ~ChangesView();
  ChangesView(ChangesView&&) noexcept;
  ChangesView& operator=(ChangesView&&) noexcept;
  ChangesView(const ChangesView&) = delete;
  ChangesView& operator=(const ChangesView&) = delete;

  // The fields of docs/semantics.md, "Catching up: `changesSince`", as in ChangesPage.
  Sequence state_version = 0;
  bool truncated = false;
  Sequence earliest_available_sequence = 0;
  bool history_gap = false;

  const std::vector<EventView>& events() const;

  // The rendering of events()[i] by the renderer given to Engine::ReadChanges. A row the
  // engine caches is rendered once and keeps its rendering (shared by every page and thread
  // that reads it while it stays cached). REQUIRES: ReadChanges was given a renderer and
  // i < events().size().
  std::string_view rendered(std::size_t i) const;

  // How many of events() came from the engine's cache of recent rows (for tests and
  // metrics).
  std::size_t cached_rows() const;

  // An owning copy, for callers of the ChangesPage API.
  ChangesPage ToPage() const;

  // Empties the page, keeping its capacity.
  void Clear();

 private:
  friend struct engine::ChangesViewAccess;
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

}  // namespace statewatch

#endif  // STATEWATCH_CHANGES_VIEW_H_
