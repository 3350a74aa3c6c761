// ChangesView and EventView (include/statewatch/changes_view.h).
#include "engine/changes_view_rep.h"

namespace statewatch {

Event EventView::ToEvent() const {
  Event e;
  e.sequence = sequence;
  e.session_key = session_key;
  e.agent_id = agent_id;
  e.session_id = session_id;
  e.kind = kind;
  e.actor_type = actor_type;
  e.actor_id = actor_id;
  e.run_id = run_id;
  e.occurred_at_ms = occurred_at_ms;
  e.summary = summary;
  e.payload_json = payload_json;
  e.dedupe_key = dedupe_key;
  e.traceparent = traceparent;
  return e;
}

EventView EventView::Of(const Event& e) {
  EventView v;
  v.sequence = e.sequence;
  v.session_key = e.session_key;
  v.agent_id = e.agent_id;
  v.session_id = e.session_id;
  v.kind = e.kind;
  v.actor_type = e.actor_type;
  v.actor_id = e.actor_id;
  v.run_id = e.run_id;
  v.occurred_at_ms = e.occurred_at_ms;
  v.summary = e.summary;
  v.payload_json = e.payload_json;
  v.dedupe_key = e.dedupe_key;
  v.traceparent = e.traceparent;
  return v;
}

ChangesView::ChangesView() : rep_(std::make_unique<Rep>()) {}
ChangesView::~ChangesView() = default;
ChangesView::ChangesView(ChangesView&&) noexcept = default;
ChangesView& ChangesView::operator=(ChangesView&&) noexcept = default;

const std::vector<EventView>& ChangesView::events() const { return rep_->events; }

std::string_view ChangesView::rendered(std::size_t i) const { return rep_->renderings[i]; }

std::size_t ChangesView::cached_rows() const { return rep_->cached; }

ChangesPage ChangesView::ToPage() const {
  ChangesPage page;
  page.state_version = state_version;
  page.truncated = truncated;
  page.earliest_available_sequence = earliest_available_sequence;
  page.history_gap = history_gap;
  page.events.reserve(rep_->events.size());
  for (const EventView& e : rep_->events) page.events.push_back(e.ToEvent());
  return page;
}

void ChangesView::Clear() {
  state_version = 0;
  truncated = false;
  earliest_available_sequence = 0;
  history_gap = false;
  rep_->Clear();
}

}  // namespace statewatch
