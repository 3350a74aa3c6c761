// The daemon's one route table. Every HTTP endpoint is a row: method, path template,
// parameters, request and answer body schemas, the error statuses it can answer, and its
// handler. Three things are derived from it and nothing else:
//   - dispatch (server/api.cc matches a request against the templates),
//   - the per-route metric labels (server/metrics.cc),
//   - the OpenAPI 3.1 document (server/openapi.cc; committed as docs/openapi.json and served
//     at GET /v1/openapi.json).
// Adding an endpoint is adding a row here and its handler in handlers.h.
//
// The cluster routes (GET /v1/cluster/status, GET /v1/cluster/digest, POST
// /v1/cluster/takeover) are rows too, marked cluster_only: only a daemon with a RequestGate
// (serve --cluster) matches them, and the gate (server/cluster_routes.h) answers them. A
// single node matches no cluster-only row, so it answers them 404 like any unknown path.
//
// Thread-safe: the table is built once, on first use, and never changes.
#ifndef STATEWATCH_SERVER_ROUTE_TABLE_H_
#define STATEWATCH_SERVER_ROUTE_TABLE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/access_tokens.h"
#include "server/api.h"

namespace statewatch::server {

struct HandlerContext;

// A request matched to a route: the percent-decoded path parameters, in template order,
// and the raw query string.
struct RouteMatch {
  std::vector<std::string> params;
  std::string_view query;
};

using RouteHandler = ApiResponse (*)(const HandlerContext& ctx, const ApiRequest& request,
                                     const RouteMatch& match);

// One parameter outside the body.
struct RouteParam {
  const char* name;
  const char* in;  // "path", "query" or "header"
  bool required;
  const char* schema;  // a JSON Schema, as JSON text
  const char* description;
};

struct RouteSpec {
  const char* method;  // "GET", "POST", "PUT", "DELETE"
  std::string path;    // OpenAPI template: "/v1/sessions/{key}"; a {param} is one segment
  const char* operation_id;
  const char* tag;
  const char* summary;
  const char* description;
  std::vector<RouteParam> params;
  // Component schema names (server/api_schemas.h); nullptr when there is none.
  const char* request_schema;
  bool request_required;
  const char* answer_schema;
  const char* answer_type;  // media type of the 200 answer
  // The error statuses this route answers besides 401 and 403 insufficient_scope (every
  // route but the public ones) and 500.
  std::vector<int> errors;
  bool websocket;  // GET that upgrades to a WebSocket stream (426 without an upgrade)
  // The scope the caller's token must grant (server/access_control.h); kPublic: answered
  // without a token. The one place a route's scope is stated: dispatch checks it and the
  // OpenAPI document shows it (x-statewatch-scope).
  auth::Scope scope;
  RouteHandler handle;
  // Answered only in cluster mode (see above); the OpenAPI document marks the operation
  // with x-statewatch-cluster-only: true.
  bool cluster_only = false;
};

// Every route, in the order the OpenAPI document lists them.
const std::vector<RouteSpec>& Routes();

// The metric label of route `index`: its path template ("unmatched" for Routes().size()).
std::string_view RouteLabel(std::size_t index);

// The outcome of matching a request path and method.
struct RouteLookup {
  std::optional<std::size_t> route;  // the matched row
  RouteMatch match;
  // The path matched a template but not with this method: the methods it allows
  // ("PUT, DELETE"; static storage), and the row that names the path for metrics.
  const char* allow = nullptr;
  std::optional<std::size_t> path_route;
  // A path segment had a malformed percent-escape: the parameter's name.
  std::string malformed_param;
};
// Which rows a daemon answers: a single node skips the cluster-only ones.
enum class RouteScope { kSingleNode, kCluster };
RouteLookup MatchRoute(std::string_view method, std::string_view path, std::string_view query,
                       RouteScope scope = RouteScope::kSingleNode);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_ROUTE_TABLE_H_
