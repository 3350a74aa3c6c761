#include "codecs/registry_codec.h"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <optional>
#include <vector>

#include "base/ascii.h"
#include "codecs/json_fields.h"
#include "statewatch/session_key.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// One clearable field of the registry: its JSON name, its member, its SessionField.
template <typename T>
struct Slot {
  const char* name;
  std::optional<T> SessionRecord::*member;
  SessionField field;
};
using StringSlot = Slot<std::string>;
using CountSlot = Slot<int64_t>;

constexpr StringSlot kStrings[] = {
    {"sessionId", &SessionRecord::session_id, SessionField::kSessionId},
    {"kind", &SessionRecord::kind, SessionField::kKind},
    {"channel", &SessionRecord::channel, SessionField::kChannel},
    {"label", &SessionRecord::label, SessionField::kLabel},
    {"displayName", &SessionRecord::display_name, SessionField::kDisplayName},
    {"model", &SessionRecord::model, SessionField::kModel},
    {"modelOverride", &SessionRecord::model_override, SessionField::kModelOverride},
    {"thinking", &SessionRecord::thinking, SessionField::kThinking},
    {"runtime", &SessionRecord::runtime, SessionField::kRuntime},
    {"parentSessionKey", &SessionRecord::parent_session_key, SessionField::kParentSessionKey},
    {"lastChannel", &SessionRecord::last_channel, SessionField::kLastChannel},
    {"lastTo", &SessionRecord::last_to, SessionField::kLastTo},
    {"lastAccountId", &SessionRecord::last_account_id, SessionField::kLastAccountId},
    {"lastThreadId", &SessionRecord::last_thread_id, SessionField::kLastThreadId},
};

constexpr CountSlot kCounts[] = {
    {"contextTokens", &SessionRecord::context_tokens, SessionField::kContextTokens},
    {"totalTokens", &SessionRecord::total_tokens, SessionField::kTotalTokens},
    {"inputTokens", &SessionRecord::input_tokens, SessionField::kInputTokens},
    {"outputTokens", &SessionRecord::output_tokens, SessionField::kOutputTokens},
    {"cacheReadTokens", &SessionRecord::cache_read_tokens, SessionField::kCacheReadTokens},
    {"cacheWriteTokens", &SessionRecord::cache_write_tokens, SessionField::kCacheWriteTokens},
};

bool IsNull(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_null();
}

// A JSON null clears the field: records the clear in r->clear and answers true.
template <typename T>
bool ClearedByNull(const json::object& o, const Slot<T>& slot, SessionRecord* r) {
  if (!IsNull(o, slot.name)) return false;
  r->clear.push_back(slot.field);
  return true;
}

// Writes each set field of `slots` under its JSON name.
template <typename T, std::size_t N>
void PutSet(const SessionRecord& r, const Slot<T> (&slots)[N], json::object& o) {
  for (const Slot<T>& slot : slots) {
    if (const auto& v = r.*slot.member) o[slot.name] = *v;
  }
}

Status Refuse(std::string_view name, std::string_view expected, const json::value& v) {
  return Status::InvalidArgument(std::string(name) + " must be " + std::string(expected) +
                                 " (got " + DescribeJson(v) + ")");
}

// A string field's own rules beyond "a non-empty string": enums, canonical keys.
Status CheckString(const StringSlot& slot, const json::object& o, std::string* value) {
  std::string_view name = slot.name;
  auto one_of = [&](auto& table, const char* list) -> Status {
    if (std::find(std::begin(table), std::end(table), *value) != std::end(table)) {
      return Status::OK();
    }
    return Refuse(name, list, o.at(name));
  };
  if (name == "kind") return one_of(kSessionKinds, "one of main, group, cron, hook, node, other");
  if (name == "thinking") {
    return one_of(kThinkingLevels, "one of off, minimal, low, medium, high, xhigh");
  }
  if (name == "runtime") {
    static constexpr std::string_view kRuntimes[] = {"subagent", "acp"};
    return one_of(kRuntimes, "subagent or acp");
  }
  if (name == "parentSessionKey") {
    auto parsed = ParseSessionKey(*value);
    if (!parsed.ok()) {
      return Status::InvalidArgument("parentSessionKey: " + parsed.status().message());
    }
    *value = parsed->canonical;
  }
  return Status::OK();
}

Status ReadStrings(const json::object& o, SessionRecord* r) {
  for (const StringSlot& slot : kStrings) {
    if (ClearedByNull(o, slot, r)) continue;
    std::optional<std::string> v;
    SW_RETURN_IF_ERROR(Assign(StringField(o, slot.name), &v));
    if (!v) continue;
    if (v->empty())
      return Refuse(slot.name, "a non-empty string, or null to clear it", o.at(slot.name));
    SW_RETURN_IF_ERROR(CheckString(slot, o, &*v));
    r->*slot.member = std::move(v);
  }
  return Status::OK();
}

Status ReadCounts(const json::object& o, SessionRecord* r) {
  for (const CountSlot& slot : kCounts) {
    if (ClearedByNull(o, slot, r)) continue;
    SW_RETURN_IF_ERROR(Assign(IntegerField(o, slot.name, 0, kMaxSafeInt, "a non-negative integer"),
                              &(r->*slot.member)));
  }
  return Status::OK();
}

// Every field an upsert body may carry: the slots, the three others, and agentId (the route
// reads it to name the session).
const std::vector<std::string_view>& KnownFields() {
  static const std::vector<std::string_view> known = [] {
    std::vector<std::string_view> names{"agentId"};
    for (const StringSlot& slot : kStrings) names.push_back(slot.name);
    for (const CountSlot& slot : kCounts) names.push_back(slot.name);
    for (const char* other : {"sandboxed", "createdAt", "updatedAt"}) names.push_back(other);
    return names;
  }();
  return known;
}

Status ReadRecord(const json::object& o, SessionRecord* r) {
  SW_RETURN_IF_ERROR(CheckKnownFields(o, KnownFields()));
  SW_RETURN_IF_ERROR(ReadStrings(o, r));
  SW_RETURN_IF_ERROR(ReadCounts(o, r));
  if (IsNull(o, "sandboxed")) r->clear.push_back(SessionField::kSandboxed);
  SW_RETURN_IF_ERROR(Assign(BoolField(o, "sandboxed"), &r->sandboxed));
  constexpr char kTime[] = "an integer (ms since the epoch)";
  SW_RETURN_IF_ERROR(
      Assign(IntegerField(o, "createdAt", 0, kMaxSafeInt, kTime), &r->created_at_ms));
  SW_RETURN_IF_ERROR(
      Assign(IntegerField(o, "updatedAt", 0, kMaxSafeInt, kTime), &r->updated_at_ms));
  if (r->created_at_ms && r->updated_at_ms && *r->created_at_ms > *r->updated_at_ms) {
    return Status::InvalidArgument("createdAt (" + std::to_string(*r->created_at_ms) +
                                   ") is later than updatedAt (" +
                                   std::to_string(*r->updated_at_ms) + ")");
  }
  return Status::OK();
}

std::vector<std::string> Segments(std::string_view rest) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t colon = rest.find(':', start);
    out.push_back(ascii::AsciiToLower(rest.substr(start, colon - start)));
    if (colon == std::string_view::npos) return out;
    start = colon + 1;
  }
}

std::string RestOf(const SessionName& name) {
  auto parsed = ParseSessionKey(name.session_key);
  return parsed.ok() ? parsed->rest : name.session_key;
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
  PutSet(r, kStrings, o);
  o["kind"] = SessionKindOf(r);
  o["channel"] = SessionChannelOf(r);
  PutSet(r, kCounts, o);
  o["sandboxed"] = r.sandboxed.value_or(false);
  if (r.created_at_ms) o["createdAt"] = *r.created_at_ms;
  if (r.updated_at_ms) o["updatedAt"] = *r.updated_at_ms;
  return o;
}

std::string SessionKindOf(const SessionRecord& record) {
  if (record.kind && !record.kind->empty()) return *record.kind;
  return DeriveSessionKind(record.name);
}

std::string DeriveSessionKind(const SessionName& name) {
  std::string rest = ascii::AsciiToLower(RestOf(name));
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
  return DeriveSessionChannel(record.name);
}

std::string DeriveSessionChannel(const SessionName& name) {
  std::string kind = DeriveSessionKind(name);
  if (kind == "cron" || kind == "hook" || kind == "node") return "internal";
  std::vector<std::string> seg = Segments(RestOf(name));
  // A nested key (`agent:main:agent:plugin:slack:channel:x`) names another agent's session
  // inside its rest: its segments are not this session's channel.
  if (seg.size() > 1 && seg[0] == "agent") return "unknown";
  // The channel is the segment the key starts with when a group/channel marker follows it;
  // what comes after the marker (a Matrix room id with its own colons, a Slack thread) does
  // not matter.
  for (std::size_t i = 1; i < seg.size(); ++i) {
    if ((seg[i] == "group" || seg[i] == "channel") && !seg[0].empty()) return seg[0];
  }
  return "unknown";
}

}  // namespace statewatch::tools
