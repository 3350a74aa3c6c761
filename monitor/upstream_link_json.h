// The JSON of an upstream link, shared by `statewatch upstream ...` and the daemon's
// /v1/upstream-links routes:
//   {"sessionKey", "agentId", "catalogId", "hostId", "threadId", "upstreamKind",
//    "upstreamRef": {"path"}, "marker", "lastScannedAt", "missingCount"}
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_MONITOR_UPSTREAM_LINK_JSON_H_
#define STATEWATCH_MONITOR_UPSTREAM_LINK_JSON_H_

#include <boost/json.hpp>

#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"

namespace statewatch::monitor {

boost::json::object UpstreamLinkToJson(const UpstreamLink& link);

// The body of POST /v1/upstream-links: sessionKey, agentId? (for a bare key), catalogId,
// hostId, threadId, upstreamKind, upstreamRef {"path"}, marker? (a non-negative integer).
// *marker_given says whether the body had a marker. InvalidArgument naming the field.
Result<UpstreamLink> UpstreamLinkFromJson(const boost::json::value& body, bool* marker_given);

}  // namespace statewatch::monitor

#endif  // STATEWATCH_MONITOR_UPSTREAM_LINK_JSON_H_
