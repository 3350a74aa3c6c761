// The handlers of the gateway's side of the session tools (the tools that move work, run
// replies and ends, delivery acks) and of the upstream links. JSON in, engine or
// SessionMessaging call, JSON out; no Beast.
#include <memory>
#include <optional>
#include <string>

#include "base/ascii.h"
#include "codecs/json_codec.h"
#include "monitor/upstream_link_json.h"
#include "monitor/upstream_links.h"
#include "server/handlers.h"
#include "server/request_ledger.h"
#include "statewatch/session_tables.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

ApiResponse NoMessaging() {
  return Api::Error(503, "unavailable", "the session messaging is not running in this server");
}

// A run update as the answer of /reply and /finish; NotFound for an unknown run is a 404.
ApiResponse RunUpdateResponse(const HandlerContext& ctx, const Result<tools::RunUpdate>& update) {
  if (!update.ok()) return StatusResponse(update.status());
  AfterWrite(ctx);  // a reply or a finish may enqueue deliveries and journal run events
  return JsonResponse(200, update->ToJson());
}

// Where a handler's layer below puts its JSON answer (200) for the X-Request-Id seal to
// write with the effect; nullptr without an id.
std::shared_ptr<std::optional<json::object>> JsonAnswerSlot() {
  return AnswerFilledInGroup<json::object>(
      [](const json::object& o) { return JsonResponse(200, o); });
}

// POST /v1/runs/{id}/reply and /finish: the body read by `decode`, applied by `apply`
// (`apply(messaging, update, in_group)`). The answer is written with the run's step, in its
// group (an X-Request-Id retry always gets it).
template <typename Decode, typename Apply>
ApiResponse RunUpdateFromBody(const HandlerContext& ctx, const ApiRequest& req, Decode decode,
                              Apply apply) {
  if (ctx.services.messaging == nullptr) return NoMessaging();
  ApiResponse error;
  auto body = ParseBody(req.body, &error);
  if (!body) return error;
  auto update = decode(*body);
  if (!update.ok()) return StatusResponse(update.status());
  tools::RunAnswer in_group;
  if (auto slot = JsonAnswerSlot()) {
    in_group = [slot](const tools::RunUpdate& u) { *slot = u.ToJson(); };
  }
  return RunUpdateResponse(ctx, apply(*ctx.services.messaging, *update, in_group));
}

}  // namespace

ApiResponse HandleMessagingTool(const HandlerContext& ctx, std::string_view tool,
                                const ApiRequest& req) {
  if (ctx.services.messaging == nullptr) return NoMessaging();
  SessionName caller;
  json::object params;
  ApiResponse error;
  if (!ReadToolCall(req, &caller, &params, &error)) return error;
  tools::CallCompletion on_complete;
  if (req.respond) {
    // May run before CallTool returns (a very fast reply): the transport queues the answer
    // and sends it once it has seen the parked response.
    on_complete = [respond = req.respond](const json::object& result) {
      respond(JsonResponse(200, result));
    };
  }
  // A call that knows its answer before its last write has it written in that write's
  // group (an X-Request-Id retry always gets it).
  tools::AnswerKnown answer_known;
  if (auto slot = JsonAnswerSlot()) {
    answer_known = [slot](const json::object& result) { *slot = result; };
  }
  auto answer = ctx.services.messaging->CallTool(tool, caller, params, on_complete,
                                                  tools::AnswerForm::kText,
                                                  RequestTraceparent(req), answer_known);
  if (!answer.ok()) return StatusResponse(answer.status(), /*tool=*/true);
  AfterWrite(ctx);  // notices (watch, spawn seeds) and the send deadline timer
  if (answer->pending && req.respond) {
    ApiResponse parked;
    parked.parked = true;
    parked.run_id = answer->run_id;
    return parked;
  }
  if (answer->pending) {  // no way to answer later: answer what is known now
    ctx.services.messaging->Abandon(answer->run_id);
    return JsonResponse(200, json::object{{"runId", answer->run_id}, {"status", "accepted"}});
  }
  if (!answer->text.empty()) {
    // session_status: already JSON text, the same bytes JsonResponse(200, result) writes.
    ApiResponse r;
    r.status = 200;
    r.body = std::move(answer->text);
    r.body.push_back('\n');
    return r;
  }
  return JsonResponse(200, answer->result);
}

ApiResponse HandleDeliveryAck(const HandlerContext& ctx, std::string_view id_text) {
  const std::optional<uint64_t> parsed = ascii::ParseDecimal(id_text);
  if (!parsed || *parsed == 0) {
    return Api::Error(
        400, "invalid_argument",
        "the delivery id must be a positive integer (got \"" + std::string(id_text) + "\")");
  }
  const uint64_t id = *parsed;
  const ApiResponse answer = JsonResponse(200, json::object{{"acked", true}, {"deliveryId", id}});
  AnswerInGroupOnSuccess(answer);
  auto acked = SessionTables(ctx.engine).AckDelivery(id);
  if (!acked.ok()) return StatusResponse(acked.status());
  if (!*acked) {
    return Api::Error(404, "not_found",
                      "Unknown deliveryId: " + std::to_string(id) + " (already acknowledged?)");
  }
  return answer;
}

ApiResponse HandleRunReply(const HandlerContext& ctx, const ApiRequest& req,
                           const std::string& run_id) {
  return RunUpdateFromBody(ctx, req, tools::RunReplyFromJson,
                           [&](tools::SessionMessaging& m, const std::string& text,
                               const tools::RunAnswer& in_group) {
                             return m.OnReply(run_id, text, in_group);
                           });
}

ApiResponse HandleRunFinish(const HandlerContext& ctx, const ApiRequest& req,
                            const std::string& run_id) {
  return RunUpdateFromBody(ctx, req, tools::RunFinishFromJson,
                           [&](tools::SessionMessaging& m, const tools::RunFinish& finish,
                               const tools::RunAnswer& in_group) {
                             return m.OnRunFinish(run_id, finish.status, finish.result,
                                                  in_group);
                           });
}

ApiResponse HandleListLinks(const HandlerContext& ctx) {
  auto links = SessionTablesView(ctx.engine).ListUpstreamLinks();
  if (!links.ok()) return StatusResponse(links.status());
  json::array list;
  list.reserve(links->size());
  for (const UpstreamLink& link : *links) list.emplace_back(monitor::UpstreamLinkToJson(link));
  return JsonResponse(200, json::object{{"links", std::move(list)}});
}

ApiResponse HandlePutLink(const HandlerContext& ctx, const ApiRequest& req) {
  ApiResponse error;
  auto body = ParseBody(req.body, &error);
  if (!body) return error;
  bool marker_given = false;
  auto link = monitor::UpstreamLinkFromJson(*body, &marker_given);
  if (!link.ok()) return StatusResponse(link.status());
  // The answer is the link as written (its marker chosen by CreateOrRefreshLink).
  auto answer = AnswerStoredInGroup<UpstreamLink>(
      [&](UpstreamLink* stored) {
        return monitor::CreateOrRefreshLink(ctx.engine, ctx.options.upstream.providers,
                                            ctx.options.upstream.roots, std::move(*link),
                                            marker_given, stored);
      },
      [](const UpstreamLink& stored) {
        return JsonResponse(200, json::object{{"link", monitor::UpstreamLinkToJson(stored)}});
      });
  return answer.ok() ? *answer : StatusResponse(answer.status());
}

ApiResponse HandleDeleteLink(const HandlerContext& ctx, const ApiRequest& req,
                             const std::string& key, std::string_view query) {
  auto name = RouteSessionName(req, key, query);
  if (!name.ok()) return StatusResponse(name.status());
  const ApiResponse deleted = JsonResponse(200, json::object{{"deleted", true}});
  AnswerInGroupOnSuccess(deleted);  // one group, only when there is a link to delete
  auto removed = monitor::RemoveUpstreamLink(ctx.engine, *name);
  if (!removed.ok()) return StatusResponse(removed.status());
  if (!*removed) {
    return Api::Error(404, "not_found", "no upstream link for session " + name->session_key);
  }
  return deleted;
}

}  // namespace statewatch::server
