// The OpenAPI 3.1 document of the daemon, generated from the route table
// (server/route_table.h) and the body schemas (server/api_schemas.h). It is served at
// GET /v1/openapi.json, printed by `statewatch openapi`, and committed as docs/openapi.json
// (tests/server/openapi_test.cc fails while the committed copy differs).
//
// Thread-safe: pure functions over constant tables.
#ifndef STATEWATCH_SERVER_OPENAPI_H_
#define STATEWATCH_SERVER_OPENAPI_H_

#include <boost/json.hpp>
#include <string>

namespace statewatch::server {

// The document as JSON.
boost::json::object OpenApiJson();

// The document as text: two-space indented, keys in table order, a final newline.
std::string OpenApiDocument();

// `value` as indented JSON text (what OpenApiDocument uses).
std::string PrettyJson(const boost::json::value& value);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_OPENAPI_H_
