// The cluster-internal routes a slot answers for its node's router (docs/cluster.md §15.9).
// Each needs a valid X-Statewatch-Internal header (server/internal_call.h) besides the
// client's token: 403 forbidden without one, naming what was wrong. A single node has no
// such rows (they are cluster-only in the route table).
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

ApiResponse HandleInternalCallerContext(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandleInternalTool(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& tool);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_INTERNAL_HANDLERS_H_
