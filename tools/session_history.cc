#include "tools/session_history.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "codecs/json_codec.h"
#include "codecs/json_fields.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/history_sanitizer.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

bool SessionExists(const Engine& engine, const SessionName& name) {
  auto record = SessionTablesView(engine).GetSession(name);
  if (record.ok() && record->has_value()) return true;
  auto version = engine.StateVersion(name);
  if (version.ok() && *version > 0) return true;
  auto transcript = SessionTablesView(engine).RecentTranscript(name, 1);
  return transcript.ok() && !transcript->empty();
}

Result<std::optional<SessionName>> FindBySessionId(const Engine& engine, const SessionName& caller,
                                                   const std::string& id) {
  using Found = std::optional<SessionName>;
  auto all = SessionTablesView(engine).ListSessions();
  if (!all.ok()) return all.status();
  std::vector<SessionName> matches, own;
  for (const SessionRecord& r : *all) {
    if (r.session_id != id) continue;
    matches.push_back(r.name);
    if (r.name.agent_id == caller.agent_id) own.push_back(r.name);
  }
  if (matches.size() == 1) return Found(matches[0]);
  if (own.size() == 1) return Found(own[0]);
  if (matches.size() > 1) {
    return Status::InvalidArgument("sessionId " + id +
                                   " names several sessions; use the full sessionKey from "
                                   "sessions_list");
  }
  return Found();
}

// A string field of messages[i], refused with the message's position in front.
Result<std::string> MessageString(const json::object& m, std::string_view field, std::size_t i,
                                  bool required) {
  std::string where = "messages[" + std::to_string(i) + "].";
  if (required) {
    auto v = RequiredStringField(m, field);
    if (!v.ok()) return Status::InvalidArgument(where + v.status().message());
    return v;
  }
  auto v = StringField(m, field);
  if (!v.ok()) return Status::InvalidArgument(where + v.status().message());
  return v->value_or("");
}

// messages[i].provenance: {"sourceSessionKey", "sourceTool"?, "sourceChannel"?, "runId"?}
// marks a message another session sent (kind "inter_session").
Status ReadProvenance(const json::object& m, const std::string& where, TranscriptMessage* out) {
  const json::value* v = Field(m, "provenance", FieldStyle::kBody);
  if (v == nullptr) return Status::OK();
  if (!v->is_object()) {
    return Status::InvalidArgument(where + ".provenance must be an object (got " +
                                   DescribeJson(*v) + ")");
  }
  const json::object& o = v->as_object();
  SW_RETURN_IF_ERROR(CheckKnownFields(
      o, {"sourceSessionKey", "sourceTool", "sourceChannel", "runId"}, where + ".provenance"));
  MessageProvenance p;
  auto key = RequiredStringField(o, "sourceSessionKey");
  if (!key.ok()) return Status::InvalidArgument(where + ".provenance." + key.status().message());
  p.source_session_key = *key;
  for (auto [name, field] :
       {std::pair{"sourceTool", &p.source_tool}, std::pair{"sourceChannel", &p.source_channel},
        std::pair{"runId", &p.run_id}}) {
    auto s = StringField(o, name);
    if (!s.ok()) return Status::InvalidArgument(where + ".provenance." + s.status().message());
    *field = s->value_or("");
  }
  out->provenance = std::move(p);
  return Status::OK();
}

// messages[i].usage: {"input", "output", "cacheRead"?, "cacheWrite"?, "total"?} token counts
// of the model call that produced the message (session_status backfills from the last one).
Status ReadUsage(const json::object& m, const std::string& where, TranscriptMessage* out) {
  const json::value* v = Field(m, "usage", FieldStyle::kBody);
  if (v == nullptr) return Status::OK();
  if (!v->is_object()) {
    return Status::InvalidArgument(where + ".usage must be an object (got " + DescribeJson(*v) +
                                   ")");
  }
  SW_RETURN_IF_ERROR(CheckKnownFields(
      v->as_object(), {"input", "output", "cacheRead", "cacheWrite", "total"}, where + ".usage"));
  TokenUsage u;
  for (auto [name, field] :
       {std::pair{"input", &u.input}, std::pair{"output", &u.output},
        std::pair{"cacheRead", &u.cache_read}, std::pair{"cacheWrite", &u.cache_write}}) {
    auto n = IntegerField(v->as_object(), name, 0, kMaxSafeInt, "a non-negative integer");
    if (!n.ok()) return Status::InvalidArgument(where + ".usage." + n.status().message());
    *field = n->value_or(0);
  }
  auto t = IntegerField(v->as_object(), "total", 0, kMaxSafeInt, "a non-negative integer");
  if (!t.ok()) return Status::InvalidArgument(where + ".usage." + t.status().message());
  u.total = t->value_or(u.input + u.output);
  out->usage = u;
  return Status::OK();
}

Result<TranscriptMessage> MessageFromJson(const json::value& value, std::size_t i) {
  std::string where = "messages[" + std::to_string(i) + "]";
  if (!value.is_object()) {
    return Status::InvalidArgument(where + " must be an object (got " + DescribeJson(value) + ")");
  }
  const json::object& m = value.as_object();
  SW_RETURN_IF_ERROR(CheckKnownFields(
      m, {"role", "content", "toolName", "timestamp", "provenance", "usage"}, where));
  TranscriptMessage out;
  auto role = MessageString(m, "role", i, /*required=*/true);
  if (!role.ok()) return role.status();
  out.role = *role;
  const json::value* content = m.if_contains("content");
  if (content == nullptr ||
      !(content->is_string() || content->is_array() || content->is_object())) {
    return Status::InvalidArgument(
        where + ".content must be a string or an array of content blocks (got " +
        (content ? DescribeJson(*content) : std::string("nothing")) + ")");
  }
  out.content_json =
      json::serialize(content->is_object() ? json::value(json::array{*content}) : *content);
  auto tool = MessageString(m, "toolName", i, /*required=*/false);
  if (!tool.ok()) return tool.status();
  out.tool_name = *tool;
  auto ts = IntegerField(m, "timestamp", 0, kMaxSafeInt, "a non-negative integer (ms)");
  if (!ts.ok()) return Status::InvalidArgument(where + "." + ts.status().message());
  out.timestamp_ms = ts->value_or(0);
  SW_RETURN_IF_ERROR(ReadProvenance(m, where, &out));
  SW_RETURN_IF_ERROR(ReadUsage(m, where, &out));
  return out;
}

struct HistoryParams {
  std::string session_key;
  int64_t limit = kDefaultHistoryLimit;
  bool include_tools = false;
};

Result<HistoryParams> ReadHistoryParams(const json::object& params) {
  SW_RETURN_IF_ERROR(
      CheckKnownParams(params, "sessions_history", {"sessionKey", "limit", "includeTools"}));
  HistoryParams p;
  std::optional<std::string> key;
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "sessionKey"), &key));
  if (!key) return Status::InvalidArgument("sessionKey is required");
  p.session_key = std::move(*key);
  std::optional<int64_t> limit;
  SW_RETURN_IF_ERROR(Assign(
      IntegerParam(params, "limit", 1, INT64_MAX, "limit must be a positive integer"), &limit));
  if (limit) p.limit = std::min(*limit, kMaxHistoryLimit);
  std::optional<bool> include_tools;
  SW_RETURN_IF_ERROR(Assign(BoolParam(params, "includeTools"), &include_tools));
  p.include_tools = include_tools.value_or(false);
  return p;
}

}  // namespace

Result<SessionName> ResolveSessionReference(const Engine& engine, const SessionName& caller,
                                            std::string_view reference) {
  std::string ref = Trim(reference);
  if (ref.empty()) return Status::InvalidArgument("sessionKey is required");
  if (ref == "current") return caller;
  auto name = ResolveSession(ref, "", caller.agent_id);
  Status elsewhere;
  if (name.ok()) {
    // Cluster mode: another partition's session is not unknown, it is elsewhere — unless
    // the reference is a session id of a session here (a node asks every partition for an
    // id the caller's home does not know: docs/cluster-internals.md, "Reads across partitions").
    elsewhere = SessionTablesView(engine).CheckOwned(*name);
    if (elsewhere.ok() && (*name == caller || SessionExists(engine, *name))) return *name;
  }
  auto by_id = FindBySessionId(engine, caller, ref);
  if (!by_id.ok()) return by_id.status();
  if (*by_id) return **by_id;
  SW_RETURN_IF_ERROR(elsewhere);
  return Status::NotFound("Session not found: " + ref +
                          " (use the full sessionKey from sessions_list)");
}

Result<Visibility> CallerVisibility(const Engine& engine, const SessionToolsOptions& options,
                                    const SessionName& caller) {
  if (options.caller_visibility) return *options.caller_visibility;  // resolved at home
  if (options.visibility != Visibility::kAgent && options.visibility != Visibility::kAll) {
    return options.visibility;  // the clamp only ever narrows agent and all
  }
  auto record = SessionTablesView(engine).GetSession(caller);
  if (!record.ok()) return record.status();
  bool sandboxed = record->has_value() && (*record)->sandboxed.value_or(false);
  return EffectiveVisibility(options.visibility, sandboxed);
}

Status CheckSessionAccess(const Engine& engine, const SessionToolsOptions& options,
                          SessionAction action, const SessionName& caller,
                          const SessionName& target) {
  if (target == caller) return Status::OK();
  auto visibility = CallerVisibility(engine, options, caller);
  if (!visibility.ok()) return visibility.status();
  auto record = SessionTablesView(engine).GetSession(target);
  if (!record.ok()) return record.status();
  VisibilityTarget vt{target, *record ? (*record)->parent_session_key : std::nullopt};
  return CheckVisibility(action, caller, *visibility, options.agent_to_agent, vt);
}

Result<json::object> SessionsHistory(const Engine& engine, const SessionToolsOptions& options,
                                     const SessionName& caller, const json::object& params) {
  try {
    auto p = ReadHistoryParams(params);
    if (!p.ok()) return p.status();
    auto target = ResolveSessionReference(engine, caller, p->session_key);
    if (!target.ok()) return target.status();
    SW_RETURN_IF_ERROR(
        CheckSessionAccess(engine, options, SessionAction::kHistory, caller, *target));
    auto transcript =
        SessionTablesView(engine).RecentTranscript(*target, static_cast<std::size_t>(p->limit));
    if (!transcript.ok()) return transcript.status();

    HistoryViewOptions view_options;
    view_options.include_tools = p->include_tools;
    HistoryView view = BuildHistoryView(*transcript, view_options);
    json::object out;
    out["sessionKey"] = target->session_key;
    out["agentId"] = target->agent_id;
    out["messages"] = std::move(view.messages);
    out["truncated"] = view.truncated;
    out["droppedMessages"] = view.dropped_messages;
    out["contentTruncated"] = view.content_truncated;
    out["contentRedacted"] = view.content_redacted;
    out["bytes"] = view.bytes;
    return out;
  } catch (const std::exception& e) {  // allocation failures: this is the edge
    return Status::IOError(std::string("sessions_history failed: ") + e.what());
  }
}

Result<std::vector<TranscriptMessage>> TranscriptMessagesFromJson(const json::value& body) {
  try {
    const json::value* list = &body;
    json::array single;
    if (body.is_object()) {
      if (const json::value* m = body.as_object().if_contains("messages")) {
        SW_RETURN_IF_ERROR(CheckKnownFields(body.as_object(), {"messages"}));
        list = m;
      } else {
        single.push_back(body);
      }
    }
    const json::array* items =
        single.empty() ? (list->is_array() ? &list->as_array() : nullptr) : &single;
    if (items == nullptr) {
      return Status::InvalidArgument("messages must be an array of messages (got " +
                                     DescribeJson(*list) + ")");
    }
    std::vector<TranscriptMessage> out;
    out.reserve(items->size());
    for (std::size_t i = 0; i < items->size(); ++i) {
      auto m = MessageFromJson((*items)[i], i);
      if (!m.ok()) return m.status();
      out.push_back(std::move(*m));
    }
    return out;
  } catch (const std::exception& e) {
    return Status::IOError(std::string("reading transcript messages failed: ") + e.what());
  }
}

}  // namespace statewatch::tools
