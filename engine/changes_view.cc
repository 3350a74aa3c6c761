// ChangesView and EventView (include/statewatch/changes_view.h).
#include "engine/changes_view_rep.h"

namespace statewatch {

namespace {

// Event and EventView hold the same fields (owned strings, and views of a row's bytes).
template <typename From, typename To>
void CopyEventFields(const From& from, To* to) {
  to->sequence = from.sequence;
  to->session_key = from.session_key;
  to->agent_id = from.agent_id;
  to->session_id = from.session_id;
  to->kind = from.kind;
  to->actor_type = from.actor_type;
  to->actor_id = from.actor_id;
  to->run_id = from.run_id;
  to->occurred_at_ms = from.occurred_at_ms;
  to->summary = from.summary;
  to->payload_json = from.payload_json;
  to->dedupe_key = from.dedupe_key;
  to->traceparent = from.traceparent;
}

}  // namespace

Event EventView::ToEvent() const {
  Event e;
  CopyEventFields(*this, &e);
  return e;
}

EventView EventView::Of(const Event& e) {
  EventView v;
  CopyEventFields(e, &v);
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
