#include "codecs/status_at_json.h"

#include "codecs/json_codec.h"
#include "codecs/json_fields.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// Appends `from`'s members to `to`, in their order.
void AppendMembers(json::object from, json::object& to) {
  for (auto& [k, v] : from) to[k] = std::move(v);
}

// The cursor's fields as CursorToJson writes them, after whose cursor it is.
json::object CursorEntryToJson(const CursorEntry& e) {
  json::object o;
  o["watcherSessionKey"] = e.watcher.session_key;
  o["targetSessionKey"] = e.target.session_key;
  o["targetAgentId"] = e.target.agent_id;
  AppendMembers(CursorToJson(e.cursor), o);
  o["pending"] = e.cursor.pending();
  return o;
}

json::array CursorsToJson(const std::vector<CursorEntry>& entries) {
  json::array a;
  a.reserve(entries.size());
  for (const CursorEntry& e : entries) a.push_back(CursorEntryToJson(e));
  return a;
}

}  // namespace

json::object AsOfDetailsToJson(const SessionStatusAt& s) {
  json::object o;
  o["asOf"] = s.as_of;
  o["lastSequence"] = s.last_sequence;
  o["earliestAsOf"] = s.earliest_as_of;
  o["watermark"] = s.watermark;
  if (s.deleted_at != 0) o["deletedAt"] = s.deleted_at;
  o["watching"] = CursorsToJson(s.watching);
  o["watchers"] = CursorsToJson(s.watchers);
  json::array notices;
  notices.reserve(s.pending.size());
  for (const Notice& n : s.pending) notices.push_back(NoticeToJson(n));
  o["pendingNotices"] = std::move(notices);
  return o;
}

json::object SessionStatusAtToJson(const SessionName& session, const SessionStatusAt& s) {
  // The state's head as GET /v1/sessions/{key}/state writes it, then the as-of details.
  json::object o = SessionStateToJson(session, s.state_version, /*page=*/nullptr);
  AppendMembers(AsOfDetailsToJson(s), o);
  o["stateChanges"] = ChangesPageToJson(s.changes);
  return o;
}

Result<std::optional<uint64_t>> ParseAsOf(const json::value* value) {
  json::object holder;
  if (value != nullptr) holder["asOf"] = *value;
  std::optional<int64_t> n;
  SW_RETURN_IF_ERROR(Assign(IntegerParam(holder, "asOf", 0, kMaxSafeInt), &n));
  if (!n) return std::optional<uint64_t>();
  return std::optional<uint64_t>(static_cast<uint64_t>(*n));
}

}  // namespace statewatch::tools
