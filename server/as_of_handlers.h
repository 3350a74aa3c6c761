// GET /v1/sessions/{key}/status[?asOf=SEQ&changesSince=N&limit=L]: a session's status now, or
// as it was right after sequence SEQ (Engine::StatusAt), as codecs/status_at_json.h writes
// it. The operator's view, like /state: no caller, no visibility check. Errors: 400 for a
// malformed parameter or an asOf beyond the last sequence; 410 as_of_unavailable for an
// asOf before the earliest sequence the retained log rebuilds (the message names it); 503
// when checkpoints kept moving under the rebuild.
#ifndef STATEWATCH_SERVER_AS_OF_HANDLERS_H_
#define STATEWATCH_SERVER_AS_OF_HANDLERS_H_

#include <string>
#include <string_view>

#include "server/api.h"
#include "server/handlers.h"

namespace statewatch::server {

ApiResponse HandleSessionStatusAt(const HandlerContext& ctx, const ApiRequest& req,
                                  const std::string& key, std::string_view query);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_AS_OF_HANDLERS_H_
