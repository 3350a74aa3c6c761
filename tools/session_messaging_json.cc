// The gateway's JSON of the session messaging: deliveries, run updates, the bodies of the
// run routes.
#include "codecs/json_fields.h"
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

namespace {

json::object SpawnOptionsToJson(const SpawnOptions& o) {
  json::object out;
  out["runtime"] = o.runtime;
  if (!o.model.empty()) out["model"] = o.model;
  if (!o.thinking.empty()) out["thinking"] = o.thinking;
  out["thread"] = o.thread;
  out["sandbox"] = o.sandbox;
  out["context"] = o.context;
  if (!o.label.empty()) out["label"] = o.label;
  out["depth"] = o.depth;
  return out;
}

// Deliveries a model reads as a message from another session (a task and a steer are the
// spawner's instructions to its own child, and are not marked).
bool IsInterSessionMessage(const Delivery& d) {
  return d.type == "message" || d.type == "announce";
}

}  // namespace

std::string InterSessionMarker(const Delivery& d) {
  std::string marker = "[Inter-session message]";
  if (!d.source_session_key.empty()) marker += " sourceSession=" + d.source_session_key;
  if (!d.source_channel.empty()) marker += " sourceChannel=" + d.source_channel;
  if (!d.source_tool.empty()) marker += " sourceTool=" + d.source_tool;
  return marker + " isUser=false";
}

json::object RouteToJson(const DeliveryRoute& r) {
  json::object o;
  if (!r.channel.empty()) o["channel"] = r.channel;
  if (!r.to.empty()) o["to"] = r.to;
  if (!r.account_id.empty()) o["accountId"] = r.account_id;
  if (!r.thread_id.empty()) o["threadId"] = r.thread_id;
  return o;
}

json::object DeliveryToJson(const Delivery& d) {
  json::object o;
  o["deliveryId"] = d.id;
  o["type"] = d.type;
  o["sessionKey"] = d.session_key;
  o["agentId"] = d.agent_id;
  o["runId"] = d.run_id;
  o["text"] = d.text;
  json::object provenance{{"kind", "inter_session"},
                          {"sourceSessionKey", d.source_session_key},
                          {"sourceTool", d.source_tool}};
  if (!d.source_channel.empty()) provenance["sourceChannel"] = d.source_channel;
  provenance["isUser"] = false;
  o["provenance"] = std::move(provenance);
  if (IsInterSessionMessage(d)) {
    std::string marker = InterSessionMarker(d);
    o["prompt"] = marker + "\n" + d.text;
    o["marker"] = std::move(marker);
  }
  if (!d.route.empty()) o["route"] = RouteToJson(d.route);
  if (d.spawn) o["options"] = SpawnOptionsToJson(*d.spawn);
  o["createdAt"] = d.created_at_ms;
  if (!d.traceparent.empty()) o["traceparent"] = d.traceparent;
  return o;
}

Result<std::string> RunReplyFromJson(const json::value& body) {
  if (!body.is_object()) return Status::InvalidArgument("text is required");
  SW_RETURN_IF_ERROR(CheckKnownFields(body.as_object(), {"text"}));
  auto text = StringField(body.as_object(), "text");  // "" is a reply: it ends the loop
  if (!text.ok()) return text.status();
  if (!*text) return Status::InvalidArgument("text is required");
  return std::move(**text);
}

Result<RunFinish> RunFinishFromJson(const json::value& body) {
  if (!body.is_object()) {
    return Status::InvalidArgument("the body must be a JSON object (got " + DescribeJson(body) +
                                   ")");
  }
  const json::object& o = body.as_object();
  SW_RETURN_IF_ERROR(CheckKnownFields(o, {"status", "result"}));
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
