#include "tools/registry_codec.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>

#include "statewatch/session_key.h"
#include "tools/json_codec.h"
#include "tools/json_fields.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

Status Refuse(std::string_view name, std::string_view expected, const json::value& v) {
  return Status::InvalidArgument(std::string(name) + " must be " + std::string(expected) +
                                 " (got " + DescribeJson(v) + ")");
}

Status ReadString(const json::object& o, std::string_view name, std::optional<std::string>* out) {
  std::optional<std::string> v;
  SW_RETURN_IF_ERROR(Assign(StringField(o, name), &v));
  if (v) *out = std::move(v);
  return Status::OK();
}

Status ReadCount(const json::object& o, std::string_view name, std::optional<int64_t>* out) {
  std::optional<int64_t> v;
  SW_RETURN_IF_ERROR(Assign(IntegerField(o, name, 0, kMaxSafeInt, "a non-negative integer"), &v));
  if (v) *out = v;
  return Status::OK();
}

Status ReadTime(const json::object& o, std::string_view name, std::optional<int64_t>* out) {
  std::optional<int64_t> v;
  SW_RETURN_IF_ERROR(Assign(
      IntegerField(o, name, -kMaxSafeInt, kMaxSafeInt, "an integer (ms since the epoch)"), &v));
  if (v) *out = v;
  return Status::OK();
}

Status ReadKind(const json::object& o, std::optional<std::string>* out) {
  SW_RETURN_IF_ERROR(ReadString(o, "kind", out));
  if (*out && !IsSessionKind(**out)) {
    return Refuse("kind", "one of main, group, cron, hook, node, other", o.at("kind"));
  }
  return Status::OK();
}

Status ReadParent(const json::object& o, std::optional<std::string>* out) {
  SW_RETURN_IF_ERROR(ReadString(o, "parentSessionKey", out));
  if (!*out) return Status::OK();
  if ((*out)->empty()) {
    out->reset();  // "" clears nothing and names nothing: treat as absent
    return Status::OK();
  }
  auto parsed = ParseSessionKey(**out);
  if (!parsed.ok())
    return Status::InvalidArgument("parentSessionKey: " + parsed.status().message());
  **out = parsed->canonical;
  return Status::OK();
}

Status ReadRecord(const json::object& o, SessionRecord* r) {
  SW_RETURN_IF_ERROR(ReadString(o, "sessionId", &r->session_id));
  SW_RETURN_IF_ERROR(ReadKind(o, &r->kind));
  SW_RETURN_IF_ERROR(ReadString(o, "channel", &r->channel));
  SW_RETURN_IF_ERROR(ReadString(o, "label", &r->label));
  SW_RETURN_IF_ERROR(ReadString(o, "model", &r->model));
  SW_RETURN_IF_ERROR(ReadCount(o, "contextTokens", &r->context_tokens));
  SW_RETURN_IF_ERROR(ReadCount(o, "totalTokens", &r->total_tokens));
  SW_RETURN_IF_ERROR(ReadParent(o, &r->parent_session_key));
  std::optional<bool> sandboxed;
  SW_RETURN_IF_ERROR(Assign(BoolField(o, "sandboxed"), &sandboxed));
  if (sandboxed) r->sandboxed = sandboxed;
  SW_RETURN_IF_ERROR(ReadTime(o, "createdAt", &r->created_at_ms));
  return ReadTime(o, "updatedAt", &r->updated_at_ms);
}

template <typename T>
void PutIf(json::object& o, std::string_view name, const std::optional<T>& v) {
  if (v) o[name] = *v;
}

}  // namespace

bool IsSessionKind(std::string_view kind) {
  return std::find(std::begin(kSessionKinds), std::end(kSessionKinds), kind) !=
         std::end(kSessionKinds);
}

Result<SessionRecord> SessionRecordFromJson(const json::value& body, const SessionName& name) {
  if (!body.is_object()) {
    return Status::InvalidArgument("a session must be a JSON object (got " + DescribeJson(body) +
                                   ")");
  }
  SessionRecord record;
  record.name = name;
  try {
    SW_RETURN_IF_ERROR(ReadRecord(body.as_object(), &record));
  } catch (const std::exception& e) {  // allocation failures: this is the edge
    return Status::InvalidArgument(std::string("cannot read session: ") + e.what());
  }
  return record;
}

json::object SessionRecordToJson(const SessionRecord& r) {
  json::object o;
  o["sessionKey"] = r.name.session_key;
  o["agentId"] = r.name.agent_id;
  PutIf(o, "sessionId", r.session_id);
  o["kind"] = SessionKindOf(r);
  o["channel"] = SessionChannelOf(r);
  PutIf(o, "label", r.label);
  PutIf(o, "model", r.model);
  PutIf(o, "contextTokens", r.context_tokens);
  PutIf(o, "totalTokens", r.total_tokens);
  PutIf(o, "parentSessionKey", r.parent_session_key);
  o["sandboxed"] = r.sandboxed.value_or(false);
  PutIf(o, "createdAt", r.created_at_ms);
  PutIf(o, "updatedAt", r.updated_at_ms);
  return o;
}

std::string SessionKindOf(const SessionRecord& record) {
  if (record.kind && !record.kind->empty()) return *record.kind;
  return DeriveSessionKind(record.name);
}

std::string DeriveSessionKind(const SessionName& name) {
  auto parsed = ParseSessionKey(name.session_key);
  std::string rest = parsed.ok() ? parsed->rest : name.session_key;
  std::transform(rest.begin(), rest.end(), rest.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto starts = [&](std::string_view p) { return rest.rfind(p, 0) == 0; };
  if (rest == "main" || rest == "global") return "main";
  if (starts("cron:")) return "cron";
  if (starts("hook:")) return "hook";
  if (starts("node:") || starts("node-")) return "node";
  if (rest.find(":group:") != std::string::npos || rest.find(":channel:") != std::string::npos ||
      starts("group:") || starts("channel:")) {
    return "group";
  }
  return "other";
}

std::string SessionChannelOf(const SessionRecord& record) {
  if (record.channel && !record.channel->empty()) return *record.channel;
  return "unknown";
}

}  // namespace statewatch::tools
