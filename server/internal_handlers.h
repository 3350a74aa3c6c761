// The cluster-internal routes a slot answers for its node's router (docs/cluster-internals.md,
// "Reads across partitions"). Each needs a valid X-Statewatch-Internal header
// (server/internal_call.h) besides the client's token (a read token): 403 forbidden without
// one, naming what was wrong. They are not rows of the route table (not in the OpenAPI
// document): a slot's gate (server/cluster_routes.h) answers them, after refusing as a standby
// or a moved partition refuses; a single node answers them 404 as any unknown path.
//
//   POST /v1/internal/caller-context {"tool"}   caller in X-Session-Key / X-Agent-Id
//     At the caller's home partition: the tool policy check CallTool makes first (profile,
//     spawn depth), then the caller's visibility with the sandbox clamp applied ->
//     {"caller": {"sessionKey", "agentId"}, "visibility", "agentToAgent": {"enabled", "allow"}}
//   POST /v1/internal/tools/{tool}  {"caller", "context" (the answer above), "params",
//                                    "window"? {"after"?: {"updatedAt","key","agentId"}, "take"}}
//     At any partition: session_status or sessions_history as the tool answers, or
//     sessions_list's window (tools/sessions_list_window.h), under the carried visibility.
//
// Thread-safe: as every handler.
#ifndef STATEWATCH_SERVER_INTERNAL_HANDLERS_H_
#define STATEWATCH_SERVER_INTERNAL_HANDLERS_H_

#include <string>

#include "server/api.h"

namespace statewatch::server {

struct HandlerContext;

// The answer to an internal path (a cluster slot's gate calls this for /v1/internal/…, which
// no route-table row names): 405 for a method other than POST, 404 for another path.
ApiResponse AnswerInternal(const HandlerContext& ctx, const ApiRequest& req,
                           std::string_view path);

ApiResponse HandleInternalCallerContext(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandleInternalTool(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& tool);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_INTERNAL_HANDLERS_H_
