#include "monitor/upstream_link_json.h"

#include <string>

#include "codecs/json_codec.h"
#include "codecs/json_fields.h"
#include "statewatch/session_key.h"

namespace statewatch::monitor {
namespace json = boost::json;

namespace {

// A required non-empty string, or an optional one ("" when absent): codecs/json_fields.h.
Result<std::string> StringField(const json::object& o, std::string_view name, bool required) {
  if (required) return tools::RequiredStringField(o, name);
  std::optional<std::string> v;
  SW_RETURN_IF_ERROR(tools::Assign(tools::StringField(o, name), &v));
  return v.value_or("");
}

}  // namespace

json::object UpstreamLinkToJson(const UpstreamLink& link) {
  json::object o;
  o["sessionKey"] = link.session.session_key;
  o["agentId"] = link.session.agent_id;
  o["catalogId"] = link.catalog_id;
  o["hostId"] = link.host_id;
  o["threadId"] = link.thread_id;
  o["upstreamKind"] = link.upstream_kind;
  o["upstreamRef"] = json::object{{"path", link.upstream_ref}};
  o["marker"] = link.marker;
  o["lastScannedAt"] = link.last_scanned_at_ms;
  o["missingCount"] = link.missing_count;
  return o;
}

Result<UpstreamLink> UpstreamLinkFromJson(const json::value& body, bool* marker_given) {
  if (!body.is_object()) {
    return Status::InvalidArgument("the upstream link must be a JSON object (got " +
                                   tools::DescribeJson(body) + ")");
  }
  const json::object& o = body.as_object();
  SW_RETURN_IF_ERROR(tools::CheckKnownFields(o, {"sessionKey", "agentId", "catalogId", "hostId",
                                                 "threadId", "upstreamKind", "upstreamRef",
                                                 "marker"}));
  UpstreamLink link;
  auto key = StringField(o, "sessionKey", true);
  if (!key.ok()) return key.status();
  auto agent = StringField(o, "agentId", false);
  if (!agent.ok()) return agent.status();
  auto session = ResolveSession(*key, *agent);
  if (!session.ok()) return Status::InvalidArgument("sessionKey: " + session.status().message());
  link.session = *session;
  for (auto [name, field] :
       {std::pair{"catalogId", &link.catalog_id}, std::pair{"hostId", &link.host_id},
        std::pair{"threadId", &link.thread_id}, std::pair{"upstreamKind", &link.upstream_kind}}) {
    auto v = StringField(o, name, true);
    if (!v.ok()) return v.status();
    *field = std::move(*v);
  }
  const json::value* ref = o.if_contains("upstreamRef");
  if (ref == nullptr || !ref->is_object()) {
    return Status::InvalidArgument("upstreamRef must be an object {\"path\": ...} (got " +
                                   (ref ? tools::DescribeJson(*ref) : std::string("nothing")) +
                                   ")");
  }
  SW_RETURN_IF_ERROR(tools::CheckKnownFields(ref->as_object(), {"path"}, "upstreamRef"));
  auto path = StringField(ref->as_object(), "path", true);
  if (!path.ok()) return Status::InvalidArgument("upstreamRef." + path.status().message());
  link.upstream_ref = std::move(*path);
  const json::value* marker = o.if_contains("marker");
  *marker_given = marker != nullptr && !marker->is_null();
  if (*marker_given) {
    if (marker->is_uint64()) {
      link.marker = marker->as_uint64();
    } else if (marker->is_int64() && marker->as_int64() >= 0) {
      link.marker = static_cast<uint64_t>(marker->as_int64());
    } else {
      return Status::InvalidArgument("marker must be a non-negative integer (got " +
                                     tools::DescribeJson(*marker) + ")");
    }
  }
  return link;
}

}  // namespace statewatch::monitor
