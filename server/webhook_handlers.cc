#include "server/webhook_handlers.h"

#include <boost/json.hpp>

#include "codecs/json_fields.h"
#include "statewatch/webhook_tables.h"
#include "server/handlers.h"
#include "server/request_ledger.h"
#include "webhooks/url_policy.h"

namespace statewatch::server {

namespace json = boost::json;

namespace {

ApiResponse NoWebhooks() {
  return Api::Error(503, "unavailable", "webhooks are not served by this daemon");
}

json::object HookToJson(const Webhook& h) {
  // Never the secret.
  return json::object{{"watcher", h.watcher}, {"url", h.url}, {"createdAt", h.created_at_ms}};
}

json::object DeadToJson(const WebhookDelivery& d) {
  return json::object{{"idempotencyKey", d.IdempotencyKey()},
                      {"watcher", d.watcher},
                      {"target", d.target.session_key},
                      {"sequence", d.since},
                      {"attempts", d.attempts},
                      {"lastError", d.last_error},
                      {"enqueuedAt", d.enqueued_at_ms},
                      {"deadAt", d.dead_at_ms},
                      {"body", d.body}};
}

// {"<name>": [each row's JSON]}, or the read's error.
template <typename Row>
ApiResponse ListResponse(const Result<std::vector<Row>>& rows, const char* name,
                         json::object (*to_json)(const Row&)) {
  if (!rows.ok()) return StatusResponse(rows.status());
  json::array list;
  for (const Row& row : *rows) list.emplace_back(to_json(row));
  return JsonResponse(200, json::object{{name, std::move(list)}});
}

// A required string field of an object body.
Result<std::string> StringField(const json::value& body, const char* name) {
  const json::value* v = body.as_object().if_contains(name);
  if (v == nullptr || !v->is_string() || v->as_string().empty()) {
    return Status::InvalidArgument(std::string(name) + " must be a non-empty string");
  }
  return std::string(v->as_string());
}

}  // namespace

ApiResponse HandlePutWebhook(const HandlerContext& ctx, const ApiRequest& req) {
  if (ctx.services.webhooks == nullptr) return NoWebhooks();
  ApiResponse error;
  auto body = ParseObjectBody(req.body, &error);
  if (!body) return error;
  if (Status s = tools::CheckKnownFields(body->as_object(), {"watcher", "url", "secret"});
      !s.ok()) {
    return StatusResponse(s);
  }
  Webhook hook;
  for (auto [name, out] : {std::pair{"watcher", &hook.watcher}, std::pair{"url", &hook.url},
                           std::pair{"secret", &hook.secret}}) {
    auto v = StringField(*body, name);
    if (!v.ok()) return StatusResponse(v.status());
    *out = std::move(*v);
  }
  const webhooks::WebhookOptions& o = ctx.services.webhooks->options();
  Status allowed = webhooks::CheckUrlText(hook.url, {o.allow_http, o.allow_private_networks});
  if (!allowed.ok()) {
    // A policy refusal is the caller's input: 400 naming the rule, nothing written.
    return Api::Error(400, "invalid_argument", allowed.message());
  }
  // The answer is the webhook as written (canonical watcher, createdAt).
  auto answer = AnswerStoredInGroup<Webhook>(
      [&](Webhook* stored) { return WebhookTables(ctx.engine).PutWebhook(hook, stored); },
      [](const Webhook& stored) {
        return JsonResponse(200, json::object{{"webhook", HookToJson(stored)}});
      });
  if (!answer.ok()) return StatusResponse(answer.status());
  ctx.services.webhooks->Changed();
  return *answer;
}

ApiResponse HandleListWebhooks(const HandlerContext& ctx) {
  return ListResponse(WebhookTables(ctx.engine).ListWebhooks(), "webhooks", HookToJson);
}

ApiResponse HandleDeleteWebhook(const HandlerContext& ctx, const std::string& watcher) {
  const ApiResponse deleted = JsonResponse(200, json::object{{"deleted", true}});
  AnswerInGroupOnSuccess(deleted);
  auto removed = WebhookTables(ctx.engine).DeleteWebhook(watcher);
  if (!removed.ok()) return StatusResponse(removed.status());
  if (!*removed) return Api::Error(404, "not_found", "no webhook for watcher " + watcher);
  if (ctx.services.webhooks != nullptr) ctx.services.webhooks->Changed();
  return deleted;
}

ApiResponse HandleListDeadLetters(const HandlerContext& ctx) {
  return ListResponse(WebhookTables(ctx.engine).DeadLetters(), "deadLetters", DeadToJson);
}

namespace {

ApiResponse OnDeadLetter(const HandlerContext& ctx, const ApiRequest& req, bool retry) {
  ApiResponse error;
  auto body = ParseObjectBody(req.body, &error);
  if (!body) return error;
  if (Status s = tools::CheckKnownFields(body->as_object(), {"idempotencyKey"}); !s.ok()) {
    return StatusResponse(s);
  }
  auto key = StringField(*body, "idempotencyKey");
  if (!key.ok()) return StatusResponse(key.status());
  const ApiResponse answer = JsonResponse(200, json::object{{retry ? "retried" : "dropped", true}});
  AnswerInGroupOnSuccess(answer);
  WebhookTables tables(ctx.engine);
  auto done = retry ? tables.RetryDead(*key) : tables.DropDead(*key);
  if (!done.ok()) return StatusResponse(done.status());
  if (!*done) return Api::Error(404, "not_found", "no dead letter with idempotencyKey " + *key);
  if (ctx.services.webhooks != nullptr) ctx.services.webhooks->Changed();
  return answer;
}

}  // namespace

ApiResponse HandleRetryDeadLetter(const HandlerContext& ctx, const ApiRequest& req) {
  return OnDeadLetter(ctx, req, /*retry=*/true);
}

ApiResponse HandleDropDeadLetter(const HandlerContext& ctx, const ApiRequest& req) {
  return OnDeadLetter(ctx, req, /*retry=*/false);
}

std::string RenderWebhookMetrics(const webhooks::DispatcherStats& s) {
  std::string out;
  out +=
      "# HELP statewatch_webhook_attempts_total Webhook calls by outcome: delivered (2xx), "
      "http_error (another status, 3xx included), network_error (no answer: refused, reset, "
      "timed out), refused (the URL policy).\n"
      "# TYPE statewatch_webhook_attempts_total counter\n";
  auto line = [&](const char* name, const std::string& labels, uint64_t v) {
    out += std::string(name) + labels + " " + std::to_string(v) + "\n";
  };
  line("statewatch_webhook_attempts_total", "{outcome=\"delivered\"}", s.delivered);
  line("statewatch_webhook_attempts_total", "{outcome=\"http_error\"}", s.http_errors);
  line("statewatch_webhook_attempts_total", "{outcome=\"network_error\"}", s.network_errors);
  line("statewatch_webhook_attempts_total", "{outcome=\"refused\"}", s.refused);
  auto one = [&](const char* name, const char* type, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    line(name, "", v);
  };
  one("statewatch_webhook_enqueued_total", "counter", "Notices written to the webhook outbox.",
      s.enqueued);
  one("statewatch_webhook_dead_total", "counter",
      "Deliveries that became dead letters (retries ran out, or the URL policy refused).",
      s.dead);
  one("statewatch_webhook_outbox_full_total", "counter",
      "Notices left pending because the outbox was full (enqueued by a later scan).",
      s.outbox_full);
  one("statewatch_webhook_outbox_depth", "gauge", "Deliveries in the outbox.", s.outbox_depth);
  one("statewatch_webhook_dead_letters", "gauge", "Dead letters kept (GET /v1/webhooks/dead).",
      s.dead_letters);
  one("statewatch_webhooks", "gauge", "Registered webhooks.", s.webhooks);
  return out;
}

}  // namespace statewatch::server
