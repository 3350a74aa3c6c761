// OpenAPI generation: one operation per route-table row.
#include "server/openapi.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "base/ascii.h"
#include "server/api_schemas.h"
#include "server/route_table.h"
#include "statewatch/version.h"

namespace statewatch::server {
namespace json = boost::json;
namespace {

const char* ErrorDescription(int status) {
  static const std::map<int, const char*> kText = {
      {400, "Bad input: malformed JSON, a wrong field, a refused tool parameter."},
      {401, "The daemon runs with tokens and the request lacks Authorization: Bearer <token>, "
            "or sends one the daemon does not know (unauthorized)."},
      {403, "The token lacks the operation's scope, x-statewatch-scope (insufficient_scope: "
            "the message names the scope and the route); refused by the session tools' "
            "visibility or profile settings (the message names the setting), an upstream "
            "source outside serve --upstream-root, or an Origin header not in serve "
            "--allow-origin (forbidden_origin)."},
      {404, "Unknown session, delivery, run, link or route."},
      {405, "The path exists with other methods (the Allow header lists them)."},
      {413, "The body is larger than serve --body-limit."},
      {415, "A body whose Content-Type is not application/json (unsupported_media_type)."},
      {421, "A Host header that names neither the listen address, localhost, 127.0.0.1, [::1] "
            "nor a serve --allow-host entry (misdirected_request); in cluster mode, a request "
            "addressing a session of another partition: a write, a read of that session or a "
            "session tool naming it (misdirected: the message names its partition)."},
      {409, "A request with the X-Request-Id of one still running (request_in_progress: ask "
            "again), or of one applied whose answer was lost when the daemon stopped "
            "(request_answer_lost: not applied again). Cluster mode: a takeover this node "
            "cannot make: it already owns the partition (already_owner), the partition moved "
            "away (partition_moved), a takeover is under way (switching), or it is no standby "
            "(not_standby)."},
      {422, "The X-Request-Id was used in the last 15 minutes by another request (another "
            "method, path, body, X-Agent-Id or X-Session-Key): request_id_reused; nothing "
            "applied."},
      {426, "A WebSocket stream requested without an upgrade."},
      {500, "An internal error."},
      {503, "The engine refuses writes (after a failed durable write), a service is not "
            "running, or the daemon is at serve --max-connections / --max-streams; in cluster "
            "mode also a standby refusing what it does not serve (standby), a takeover under way "
            "(switching) or a partition that moved away (partition_moved)."},
      {507, "The disk is full: nothing was written; retry once space is freed "
            "(insufficient_storage)."},
  };
  auto it = kText.find(status);
  return it == kText.end() ? "Error." : it->second;
}

json::value Parse(const char* text) { return json::parse(text); }

constexpr const char* kClusterOnlySentence =
    "Cluster mode only: answered only by a daemon started with serve --cluster, in every role "
    "(docs/cluster.md, \"A partition's log on JetStream\"); a single node answers 404 "
    "not_found.";

json::object SchemaRef(const char* name) {
  return json::object{{"$ref", std::string("#/components/schemas/") + name}};
}

// The description of each route tag, in the order the document lists them.
const std::vector<std::pair<std::string_view, const char*>>& TagDescriptions() {
  static const auto* tags = new std::vector<std::pair<std::string_view, const char*>>{
      {"tools", "The session tools an agent calls, as the session in X-Session-Key."},
      {"journal", "Recording events into the session journal."},
      {"sessions", "The session registry, transcripts and state versions."},
      {"notices", "Watchers, their cursors and the notices of changes they have not seen."},
      {"streams", "WebSocket streams of wakes and deliveries."},
      {"gateway", "The gateway's side of deliveries and runs."},
      {"upstream", "Links from sessions to upstream transcript sources."},
      {"maintenance", "Operating the daemon: retention, backup, verification, stats, clock."},
      {"mcp", "The Model Context Protocol endpoint (docs/mcp.md): the session tools and "
              "session resources for MCP clients."},
      {"cluster", "A cluster node's role and state (serve --cluster only)."},
  };
  return *tags;
}

// The tags the route table uses, in TagDescriptions' order; a tag it does not describe
// comes last, with its name as its description.
json::array Tags() {
  std::vector<std::string_view> used;
  for (const RouteSpec& spec : Routes()) {
    if (std::find(used.begin(), used.end(), spec.tag) == used.end()) used.emplace_back(spec.tag);
  }
  json::array out;
  for (const auto& [name, description] : TagDescriptions()) {
    if (std::find(used.begin(), used.end(), name) == used.end()) continue;
    out.push_back(json::object{{"name", name}, {"description", description}});
  }
  for (std::string_view name : used) {
    bool described = std::any_of(TagDescriptions().begin(), TagDescriptions().end(),
                                 [&](const auto& t) { return t.first == name; });
    if (!described) out.push_back(json::object{{"name", name}, {"description", name}});
  }
  return out;
}

json::object ErrorResponse(int status) {
  return json::object{
      {"description", ErrorDescription(status)},
      {"content", json::object{{"application/json",
                                json::object{{"schema", SchemaRef("Error")}}}}}};
}

json::object Operation(const RouteSpec& spec) {
  json::object op;
  op["operationId"] = spec.operation_id;
  op["tags"] = json::array{spec.tag};
  op["summary"] = spec.summary;
  std::string description = spec.description;
  if (spec.cluster_only) {
    if (!description.empty()) description += " ";
    description += kClusterOnlySentence;
    op["x-statewatch-cluster-only"] = true;
  }
  if (!description.empty()) op["description"] = description;
  // Every mutating route dispatch runs through the X-Request-Id ledger
  // (server/request_ledger.h); the cluster routes are answered before it.
  const bool deduplicated = std::string_view(spec.method) != "GET" && !spec.cluster_only;
  if (!spec.params.empty() || deduplicated) {
    json::array params;
    for (const RouteParam& p : spec.params) {
      params.push_back(json::object{{"name", p.name},
                                    {"in", p.in},
                                    {"required", p.required},
                                    {"description", p.description},
                                    {"schema", Parse(p.schema)}});
    }
    if (deduplicated) {
      params.push_back(json::object{
          {"name", "X-Request-Id"},
          {"in", "header"},
          {"required", false},
          {"description",
           "Makes a retry exactly-once: a request with this id is applied at most once in 15 "
           "minutes, and a repeat (same method, path, body, X-Agent-Id and X-Session-Key) gets "
           "the first answer with X-Statewatch-Replayed: true. 1 to 128 printable ASCII "
           "characters (400 otherwise); another request under the same id is 422 "
           "request_id_reused."},
          {"schema", Parse(R"({"type":"string","minLength":1,"maxLength":128})")}});
    }
    op["parameters"] = std::move(params);
  }
  if (spec.request_schema != nullptr) {
    op["requestBody"] = json::object{
        {"required", spec.request_required},
        {"content", json::object{{"application/json",
                                  json::object{{"schema", SchemaRef(spec.request_schema)}}}}}};
  }
  json::object responses;
  json::object ok{{"description", spec.websocket ? "Switching to a WebSocket; each text message "
                                                   "is one JSON document of this schema."
                                                 : "Success."}};
  json::object media;
  if (spec.answer_schema != nullptr) media["schema"] = SchemaRef(spec.answer_schema);
  ok["content"] = json::object{{spec.answer_type, std::move(media)}};
  responses[spec.websocket ? "101" : "200"] = std::move(ok);
  std::vector<int> errors = spec.errors;
  const bool needs_token = spec.scope != auth::Scope::kPublic;
  if (needs_token) errors.push_back(401);
  errors.push_back(500);
  // The transport's refusals (server/request_guard.h), before any route runs: a foreign
  // Origin, a foreign Host, a body that is not JSON, the connection and stream caps.
  errors.insert(errors.end(), {403, 421, 503});
  if (spec.request_schema != nullptr) errors.push_back(415);
  // A route that writes (any method but GET that can meet a refusing engine) meets a full disk.
  bool writes = std::string_view(spec.method) != "GET" &&
                std::find(spec.errors.begin(), spec.errors.end(), 503) != spec.errors.end();
  if (writes) errors.push_back(507);
  if (deduplicated) errors.insert(errors.end(), {400, 409, 422});
  std::sort(errors.begin(), errors.end());
  errors.erase(std::unique(errors.begin(), errors.end()), errors.end());
  for (int status : errors) responses[std::to_string(status)] = ErrorResponse(status);
  op["responses"] = std::move(responses);
  // A public operation says so with an empty list: it needs no scheme.
  op["security"] =
      needs_token ? json::array{json::object{{"bearer", json::array()}}} : json::array();
  op["x-statewatch-scope"] = auth::ScopeName(spec.scope);
  return op;
}

void Indent(std::string& out, int depth) { out.append(static_cast<std::size_t>(depth) * 2, ' '); }

void Pretty(const json::value& v, std::string& out, int depth) {
  if (v.is_object() && !v.as_object().empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& [key, value] : v.as_object()) {
      if (!first) out += ",\n";
      first = false;
      Indent(out, depth + 1);
      out += json::serialize(json::string(key));
      out += ": ";
      Pretty(value, out, depth + 1);
    }
    out += "\n";
    Indent(out, depth);
    out += "}";
  } else if (v.is_array() && !v.as_array().empty()) {
    out += "[\n";
    bool first = true;
    for (const json::value& item : v.as_array()) {
      if (!first) out += ",\n";
      first = false;
      Indent(out, depth + 1);
      Pretty(item, out, depth + 1);
    }
    out += "\n";
    Indent(out, depth);
    out += "]";
  } else {
    out += json::serialize(v);
  }
}

}  // namespace

json::object OpenApiJson() {
  json::object doc;
  doc["openapi"] = "3.1.0";
  doc["info"] = json::object{
      {"title", "statewatch"},
      {"version", kVersion},
      {"summary", "Session state awareness for AI-agent gateways: the daemon's HTTP API."},
      {"license", json::object{{"name", "Apache-2.0"}, {"identifier", "Apache-2.0"}}},
      {"description",
       "Generated from the daemon's route table (server/route_table.cc). The behaviour behind "
       "each route is described in docs/semantics.md; docs/http-api.md walks through it. "
       "Operations marked x-statewatch-cluster-only: true are answered only under serve "
       "--cluster (docs/cluster.md). x-statewatch-scope names the token scope an operation "
       "needs. HEAD is answered on every GET operation, as GET without the body."}};
  doc["servers"] = json::array{json::object{{"url", "http://127.0.0.1:7411"}}};
  doc["tags"] = Tags();
  json::object paths;
  for (const RouteSpec& spec : Routes()) {
    json::value& item = paths[spec.path];
    if (!item.is_object()) item = json::object();
    std::string method = ascii::AsciiToLower(spec.method);
    item.as_object()[method] = Operation(spec);
  }
  doc["paths"] = std::move(paths);
  json::object components;
  components["schemas"] = Parse(ComponentSchemasJson());
  components["securitySchemes"] = json::object{
      {"bearer", json::object{{"type", "http"},
                              {"scheme", "bearer"},
                              {"description",
                               "serve --token-file (every scope) or the configuration file's "
                               "auth.tokens (each with a scope: read, write or admin, "
                               "cumulative); required when listening on a non-loopback "
                               "address. Each operation's x-statewatch-scope names the scope "
                               "it needs (public: none)."}}}};
  doc["components"] = std::move(components);
  return doc;
}

std::string PrettyJson(const json::value& value) {
  std::string out;
  Pretty(value, out, 0);
  out += "\n";
  return out;
}

std::string OpenApiDocument() { return PrettyJson(OpenApiJson()); }

}  // namespace statewatch::server
