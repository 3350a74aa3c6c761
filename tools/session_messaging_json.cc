// The gateway's JSON of the session messaging: deliveries, run updates, the bodies of the
// run routes.
#include "tools/json_fields.h"
#include "tools/session_messaging.h"
#include "tools/session_messaging_internal.h"

namespace statewatch::tools {
namespace json = boost::json;
using namespace messaging_internal;  // NOLINT: the implementation's own helpers

json::object RunUpdate::ToJson() const {
  json::array ids;
  for (const Delivery& d : deliveries) ids.emplace_back(d.id);
  return json::object{
      {"runId", run_id}, {"applied", applied}, {"status", status}, {"deliveries", std::move(ids)}};
}

json::object DeliveryToJson(const Delivery& d) {
  json::object o;
  o["deliveryId"] = d.id;
  o["type"] = d.type;
  o["sessionKey"] = d.session_key;
  o["agentId"] = d.agent_id;
  o["runId"] = d.run_id;
  o["text"] = d.text;
  o["provenance"] = json::object{
      {"sourceSessionKey", d.source_session_key}, {"sourceTool", d.source_tool}, {"isUser", false}};
  o["createdAt"] = d.created_at_ms;
  return o;
}

Result<std::string> RunReplyFromJson(const json::value& body) {
  const json::value* text = body.is_object() ? body.as_object().if_contains("text") : nullptr;
  if (text == nullptr || text->is_null()) return Status::InvalidArgument("text is required");
  if (!text->is_string()) {
    return Status::InvalidArgument("text must be a string (got " + DescribeJson(*text) + ")");
  }
  return std::string(text->as_string());
}

Result<RunFinish> RunFinishFromJson(const json::value& body) {
  if (!body.is_object()) {
    return Status::InvalidArgument("the body must be a JSON object (got " + DescribeJson(body) +
                                   ")");
  }
  const json::object& o = body.as_object();
  const json::value* status = o.if_contains("status");
  RunFinish finish;
  if (status != nullptr && status->is_string()) finish.status = std::string(status->as_string());
  if (finish.status != "ok" && finish.status != "error" && finish.status != "timeout" &&
      finish.status != "cancelled") {
    return Status::InvalidArgument("status must be one of ok, error, timeout, cancelled (got " +
                                   (status ? DescribeJson(*status) : std::string("nothing")) + ")");
  }
  if (const json::value* r = o.if_contains("result"); r && !r->is_null()) {
    finish.result = r->is_string() ? std::string(r->as_string()) : json::serialize(*r);
  }
  return finish;
}

}  // namespace statewatch::tools
