#include "codecs/json_codec.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string_view>
#include <system_error>

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// Only these payload keys are part of the reconciliation view (docs/semantics.md,
// "Catching up: `changesSince`"): they carry the outcome of runs and the channel of human
// messages, never message content.
constexpr std::string_view kChangePayloadKeys[] = {"outcome", "channel", "turns"};

// The stored payload as an object, or nullopt when it is absent or (against the engine's
// contract) not an object: a bad stored payload must not break a read.
std::optional<json::object> ParsePayloadObject(std::string_view payload_json) {
  if (payload_json.empty()) return std::nullopt;
  try {
    std::error_code ec;
    json::value v = json::parse(payload_json, ec);
    if (ec || !v.is_object()) return std::nullopt;
    return std::move(v.as_object());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void PutIfNotEmpty(json::object& o, std::string_view name, std::string_view value) {
  if (!value.empty()) o[name] = value;
}

Status TypeError(std::string_view name, std::string_view expected, const json::value& v) {
  return Status::InvalidArgument(std::string(name) + " must be " + std::string(expected) +
                                 " (got " + DescribeJson(v) + ")");
}

const json::value* FindField(const json::object& o, std::string_view name) {
  return Field(o, name, FieldStyle::kBody);
}

Status ReadString(const json::object& o, std::string_view name, std::string* out) {
  std::optional<std::string> v;
  SW_RETURN_IF_ERROR(Assign(StringField(o, name), &v));
  if (v) *out = std::move(*v);
  return Status::OK();
}

Status ReadOccurredAt(const json::object& o, EventInput* in) {
  return Assign(IntegerField(o, "occurredAt", -kMaxSafeInt, kMaxSafeInt, "an integer"),
                &in->occurred_at_ms);
}

Status ReadActorType(const json::object& o, EventInput* in) {
  const json::value* v = FindField(o, "actorType");
  if (v == nullptr) {
    return Status::InvalidArgument("actorType is required (one of human, agent, system)");
  }
  std::optional<ActorType> t;
  if (v->is_string()) t = ParseActorType(std::string(v->as_string()));
  if (!t) return TypeError("actorType", "one of human, agent, system", *v);
  in->actor_type = *t;
  return Status::OK();
}

// "What an event holds": a payload that is not an object is dropped, not refused.
void ReadPayload(const json::object& o, EventInput* in) {
  const json::value* v = FindField(o, "payload");
  if (v != nullptr && v->is_object()) in->payload_json = json::serialize(*v);
}

Status ReadWatchers(const json::object& o, EventInput* in) {
  const json::value* v = FindField(o, "watchers");
  if (v == nullptr) return Status::OK();
  if (!v->is_array()) return TypeError("watchers", "an array of strings", *v);
  for (const json::value& w : v->as_array()) {
    if (!w.is_string()) return TypeError("watchers", "an array of strings", *v);
    in->watchers.emplace_back(w.as_string());
  }
  return Status::OK();
}

Status ReadEventInput(const json::object& o, EventInput* in) {
  SW_RETURN_IF_ERROR(CheckKnownFields(
      o, {"sessionKey", "agentId", "sessionId", "kind", "actorType", "actorId", "runId",
          "occurredAt", "summary", "payload", "dedupeKey", "traceparent", "watchers"}));
  SW_RETURN_IF_ERROR(ReadString(o, "sessionKey", &in->session_key));
  SW_RETURN_IF_ERROR(ReadString(o, "agentId", &in->agent_id));
  SW_RETURN_IF_ERROR(ReadString(o, "sessionId", &in->session_id));
  SW_RETURN_IF_ERROR(ReadString(o, "kind", &in->kind));
  SW_RETURN_IF_ERROR(ReadActorType(o, in));
  SW_RETURN_IF_ERROR(ReadString(o, "actorId", &in->actor_id));
  SW_RETURN_IF_ERROR(ReadString(o, "runId", &in->run_id));
  SW_RETURN_IF_ERROR(ReadOccurredAt(o, in));
  SW_RETURN_IF_ERROR(ReadString(o, "summary", &in->summary));
  ReadPayload(o, in);
  SW_RETURN_IF_ERROR(ReadString(o, "dedupeKey", &in->dedupe_key));
  SW_RETURN_IF_ERROR(ReadString(o, "traceparent", &in->traceparent));
  return ReadWatchers(o, in);
}

}  // namespace

json::object EventToJson(const Event& event) {
  json::object o;
  o["sequence"] = event.sequence;
  o["sessionKey"] = event.session_key;
  o["agentId"] = event.agent_id;
  PutIfNotEmpty(o, "sessionId", event.session_id);
  o["kind"] = event.kind;
  o["actorType"] = ActorTypeName(event.actor_type);
  PutIfNotEmpty(o, "actorId", event.actor_id);
  PutIfNotEmpty(o, "runId", event.run_id);
  o["occurredAt"] = event.occurred_at_ms;
  o["summary"] = event.summary;
  if (auto payload = ParsePayloadObject(event.payload_json)) o["payload"] = std::move(*payload);
  PutIfNotEmpty(o, "dedupeKey", event.dedupe_key);
  PutIfNotEmpty(o, "traceparent", event.traceparent);
  return o;
}

json::object ChangeEventToJson(const Event& event) {
  return ChangeEventToJson(EventView::Of(event));
}

json::object ChangeEventToJson(const EventView& event) {
  json::object o;
  o["sequence"] = event.sequence;
  o["kind"] = event.kind;
  o["actorType"] = ActorTypeName(event.actor_type);
  o["occurredAt"] = event.occurred_at_ms;
  o["summary"] = event.summary;
  PutIfNotEmpty(o, "actorId", event.actor_id);
  PutIfNotEmpty(o, "runId", event.run_id);
  if (auto payload = ParsePayloadObject(event.payload_json)) {
    json::object kept;
    for (std::string_view key : kChangePayloadKeys) {
      if (const json::value* v = payload->if_contains(key)) kept[key] = *v;
    }
    if (!kept.empty()) o["payload"] = std::move(kept);
  }
  PutIfNotEmpty(o, "traceparent", event.traceparent);
  return o;
}

namespace {

template <typename Events>
json::object PageToJson(const Events& events, bool truncated, Sequence earliest, bool gap) {
  json::array list;
  list.reserve(events.size());
  for (const auto& e : events) list.emplace_back(ChangeEventToJson(e));
  json::object o;
  o["events"] = std::move(list);
  o["truncated"] = truncated;
  o["earliestAvailableSequence"] = earliest;
  o["historyGap"] = gap;
  return o;
}

}  // namespace

json::object ChangesPageToJson(const ChangesPage& page) {
  return PageToJson(page.events, page.truncated, page.earliest_available_sequence,
                    page.history_gap);
}

json::object ChangesPageToJson(const ChangesView& page) {
  return PageToJson(page.events(), page.truncated, page.earliest_available_sequence,
                    page.history_gap);
}

void RenderChangeEvent(const EventView& event, std::string* out) {
  *out = json::serialize(ChangeEventToJson(event));
}

void AppendChangesPageJson(const ChangesView& page, std::string* out) {
  // The same bytes json::serialize writes for ChangesPageToJson(page): keys in insertion
  // order, no whitespace, integers in decimal, booleans as true/false.
  std::size_t bytes = 96;
  for (std::size_t i = 0; i < page.events().size(); ++i) bytes += page.rendered(i).size() + 1;
  out->reserve(out->size() + bytes);
  out->append(R"({"events":[)");
  for (std::size_t i = 0; i < page.events().size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(page.rendered(i));
  }
  out->append(R"(],"truncated":)");
  out->append(page.truncated ? "true" : "false");
  out->append(R"(,"earliestAvailableSequence":)");
  out->append(std::to_string(page.earliest_available_sequence));
  out->append(R"(,"historyGap":)");
  out->append(page.history_gap ? "true" : "false");
  out->push_back('}');
}

json::object RecordResultToJson(const RecordResult& result) {
  json::object o = EventToJson(result.event);
  if (result.deduplicated) o["deduplicated"] = true;
  return o;
}

json::object EventInputToJson(const EventInput& in) {
  json::object o;
  o["sessionKey"] = in.session_key;
  PutIfNotEmpty(o, "agentId", in.agent_id);
  PutIfNotEmpty(o, "sessionId", in.session_id);
  o["kind"] = in.kind;
  o["actorType"] = ActorTypeName(in.actor_type);
  PutIfNotEmpty(o, "actorId", in.actor_id);
  PutIfNotEmpty(o, "runId", in.run_id);
  if (in.occurred_at_ms) o["occurredAt"] = *in.occurred_at_ms;
  PutIfNotEmpty(o, "summary", in.summary);
  if (!in.payload_json.empty()) {
    std::error_code ec;
    json::value payload = json::parse(in.payload_json, ec);
    o["payload"] = ec ? json::value(in.payload_json) : std::move(payload);
  }
  PutIfNotEmpty(o, "dedupeKey", in.dedupe_key);
  PutIfNotEmpty(o, "traceparent", in.traceparent);
  if (!in.watchers.empty()) {
    json::array w;
    for (const std::string& key : in.watchers) w.emplace_back(key);
    o["watchers"] = std::move(w);
  }
  return o;
}

json::object SessionStateToJson(const SessionName& session, Sequence version,
                                const ChangesPage* page) {
  json::object o;
  o["sessionKey"] = session.session_key;
  o["agentId"] = session.agent_id;
  o["stateVersion"] = version;
  if (page != nullptr) o["stateChanges"] = ChangesPageToJson(*page);
  return o;
}

json::object NoticeToJson(const Notice& notice) {
  json::object o;
  o["targetSessionKey"] = notice.target.session_key;
  o["contextKey"] = notice.context_key;
  o["text"] = notice.text;
  return o;
}

json::object CursorToJson(const CursorState& cursor) {
  json::object o;
  o["lastSeen"] = cursor.last_seen;
  o["notified"] = cursor.notified;
  o["material"] = cursor.material;
  o["updatedAt"] = cursor.updated_at_ms;
  return o;
}

json::object StatsToJson(const EngineStats& stats, std::optional<uint64_t> registered) {
  json::object o;
  o["rows"] = stats.journal_rows;
  o["sessions"] = registered.value_or(stats.sessions);
  o["journalSessions"] = stats.sessions;
  o["cursors"] = stats.cursors;
  o["pendingNotices"] = stats.pending_notices;
  o["lastSequence"] = stats.last_sequence;
  o["bytesOnDisk"] = stats.bytes_on_disk;
  // Since this engine was opened (a one-shot `statewatch stats` has recorded nothing).
  o["eventsRecorded"] = stats.events_recorded;
  o["walBytes"] = stats.wal_bytes;
  o["walBytesPerEvent"] = stats.events_recorded == 0
                              ? 0.0
                              : static_cast<double>(stats.wal_bytes) / stats.events_recorded;
  if (!stats.write_error.empty()) o["writeError"] = stats.write_error;
  return o;
}

json::object PruneStatsToJson(const PruneStats& stats) {
  json::object o;
  o["rowsDeleted"] = stats.rows_deleted;
  o["sessionsTouched"] = stats.sessions_touched;
  o["cursorsExpired"] = stats.cursors_expired;
  return o;
}

json::object VerifyReportToJson(const VerifyReport& report) {
  json::array differences;
  for (const std::string& d : report.differences) differences.emplace_back(d);
  json::object o;
  o["ok"] = report.ok;
  o["recordsReplayed"] = report.records_replayed;
  o["headsChecked"] = report.heads_checked;
  o["cursorsChecked"] = report.cursors_checked;
  o["rowsChecked"] = report.rows_checked;
  o["differences"] = std::move(differences);
  return o;
}

Result<EventInput> EventInputFromJson(const json::value& value) {
  if (!value.is_object()) {
    return Status::InvalidArgument("an event must be a JSON object (got " + DescribeJson(value) +
                                   ")");
  }
  EventInput input;
  try {
    SW_RETURN_IF_ERROR(ReadEventInput(value.as_object(), &input));
  } catch (const std::exception& e) {  // allocation failures: this is the edge
    return Status::InvalidArgument(std::string("cannot read event: ") + e.what());
  }
  return input;
}

Result<std::optional<uint64_t>> ParseChangesSince(const json::value* value) {
  json::object holder;
  if (value != nullptr) holder["changesSince"] = *value;
  std::optional<int64_t> n;
  SW_RETURN_IF_ERROR(
      Assign(IntegerParam(holder, "changesSince", 0, kMaxSafeInt, kChangesSinceError), &n));
  if (!n) return std::optional<uint64_t>();
  return std::optional<uint64_t>(static_cast<uint64_t>(*n));
}

std::string ChangesSinceErrorDetail(const json::value& value) {
  return std::string(kChangesSinceError) + " (got " + DescribeJson(value) + ")";
}

}  // namespace statewatch::tools
