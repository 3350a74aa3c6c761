// The JSON Schemas of the daemon's request and answer bodies, by component name
// (components/schemas of the OpenAPI document). The route table names them.
//
// Thread-safe: a constant.
#ifndef STATEWATCH_SERVER_API_SCHEMAS_H_
#define STATEWATCH_SERVER_API_SCHEMAS_H_

namespace statewatch::server {

// One JSON object: {"<Name>": <JSON Schema>, ...}.
const char* ComponentSchemasJson();

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_API_SCHEMAS_H_
