// The /v1/webhooks routes (docs/webhooks.md) and the webhook lines of /metrics.
#ifndef STATEWATCH_SERVER_WEBHOOK_HANDLERS_H_
#define STATEWATCH_SERVER_WEBHOOK_HANDLERS_H_

#include <string>

#include "server/api.h"
#include "webhooks/dispatcher.h"

namespace statewatch::server {

ApiResponse HandlePutWebhook(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandleListWebhooks(const HandlerContext& ctx);
ApiResponse HandleDeleteWebhook(const HandlerContext& ctx, const std::string& watcher);
ApiResponse HandleListDeadLetters(const HandlerContext& ctx);
ApiResponse HandleRetryDeadLetter(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandleDropDeadLetter(const HandlerContext& ctx, const ApiRequest& req);

// The statewatch_webhook_* metrics (docs/metrics.md).
std::string RenderWebhookMetrics(const webhooks::DispatcherStats& stats);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_WEBHOOK_HANDLERS_H_
