// The OpenAPI document: the committed docs/openapi.json is what the route table generates,
// every route is in it, and the daemon's real answers — successes and errors — conform to
// it (status documented for the operation, body valid against its schema).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "http_helpers.h"
#include "schema_check.h"
#include "server/openapi.h"
#include "server/route_table.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OpenApiDocument, CommittedCopyMatchesTheRouteTable) {
  std::string committed = ReadFile(std::string(STATEWATCH_SOURCE_DIR) + "/docs/openapi.json");
  ASSERT_FALSE(committed.empty()) << "docs/openapi.json is missing";
  // On a difference: `make openapi` rewrites the committed copy from the table.
  EXPECT_EQ(committed, server::OpenApiDocument()) << "docs/openapi.json is stale: run make openapi";
}

TEST(OpenApiDocument, EveryRouteIsAnOperationWithItsSchemas) {
  json::object doc = server::OpenApiJson();
  SchemaCheck check(doc);
  const json::object& paths = doc.at("paths").as_object();
  for (const server::RouteSpec& spec : server::Routes()) {
    std::string method(spec.method);
    for (char& c : method) c = static_cast<char>(std::tolower(c));
    const json::value* item = paths.if_contains(spec.path);
    ASSERT_NE(item, nullptr) << spec.path;
    ASSERT_TRUE(item->as_object().contains(method)) << spec.method << " " << spec.path;
    for (const char* name : {spec.request_schema, spec.answer_schema}) {
      if (name == nullptr) continue;
      json::value ref = json::object{{"$ref", std::string("#/components/schemas/") + name}};
      EXPECT_TRUE(check.Resolve(ref.at("$ref")).is_object()) << name << " is not defined";
    }
  }
}

// Drives every route of a real daemon and checks each answer against the served document.
class ConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpResult r = http_.Get("/v1/openapi.json");
    ASSERT_EQ(r.status, 200) << r.body;
    doc_ = r.json().as_object();
  }

  // Sends the request, checks the answer, returns it.
  HttpResult Call(const std::string& method, const std::string& target, const std::string& body,
                  int expected_status, const Headers& headers = {}) {
    HttpResult r = http_.Request(method, target, body, headers);
    EXPECT_EQ(r.status, expected_status) << method << " " << target << ": " << r.body;
    Conforms(method, target, r);
    return r;
  }
  HttpResult Call(const std::string& method, const std::string& target, const json::object& body,
                  int expected_status, const Headers& headers = {}) {
    return Call(method, target, json::serialize(body), expected_status, headers);
  }
  HttpResult Call(const std::string& method, const std::string& target, const json::array& body,
                  int expected_status, const Headers& headers = {}) {
    return Call(method, target, json::serialize(body), expected_status, headers);
  }

  void Conforms(const std::string& method, const std::string& target, const HttpResult& r) {
    std::string path = target.substr(0, target.find('?'));
    server::RouteLookup found = server::MatchRoute(method, path, "");
    std::optional<std::size_t> row = found.route ? found.route : found.path_route;
    ASSERT_TRUE(row.has_value()) << "no route for " << method << " " << path;
    const server::RouteSpec& spec = server::Routes()[*row];
    if (found.route) covered_.insert(spec.operation_id);
    std::string m(spec.method);
    for (char& c : m) c = static_cast<char>(std::tolower(c));
    const json::object& op = doc_.at("paths").at(spec.path).at(m).as_object();
    const json::object& responses = op.at("responses").as_object();
    std::string status = std::to_string(r.status);
    if (r.status == 405) return;  // method mismatch: answered for the path, not an operation
    ASSERT_TRUE(responses.contains(status))
        << method << " " << path << " answered " << status << ", which the document omits";
    const json::object& content = responses.at(status).at("content").as_object();
    if (content.contains("application/json")) {
      EXPECT_EQ(r.body.back(), '\n') << "answers end with a newline";
      const json::value* schema = content.at("application/json").as_object().if_contains("schema");
      if (schema == nullptr) return;
      SchemaCheck check(doc_);
      EXPECT_EQ(check.Check(r.json(), *schema), "") << method << " " << path << ": " << r.body;
    }
  }

  // Upstream sources must lie under a --upstream-root; the daemon is given this one.
  static server::ServerOptions WithUpstreamRoot(const std::string& root) {
    server::ServerOptions o = TestOptions();
    o.upstream.roots = {root};
    return o;
  }
  ~ConformanceTest() override {
    std::error_code ec;
    std::filesystem::remove_all(upstream_root_, ec);
  }

  std::string upstream_root_ = MakeTempDir("statewatch-openapi-upstream");
  TestServer server_{WithUpstreamRoot(upstream_root_)};
  HttpClient http_{server_.port()};
  json::object doc_;
  std::set<std::string> covered_;
};

TEST_F(ConformanceTest, EveryRouteAnswersAsDocumented) {
  const std::string parent = "agent:main:main", child = "agent:main:subagent:a1";
  Call("PUT", "/v1/sessions/" + parent, json::object{{"kind", "main"}, {"channel", "telegram"}},
       200);
  Call("PUT", "/v1/sessions/" + child, json::object{{"parentSessionKey", parent}}, 200);
  Call("POST", "/v1/events",
       Event(child, "child_spawned", "agent",
             {{"actorId", parent}, {"runId", "a1"}, {"watchers", json::array{parent}}}),
       200);
  Call("POST", "/v1/events", json::array{HumanMessage(child)}, 200);
  Call("POST", "/v1/events", Event(child, "agent_message", "human"), 400);
  Call("GET", "/v1/notices?watcher=" + parent, "", 200);
  Call("POST", "/v1/notices/drain", json::object{{"watcher", parent}}, 200);
  Call("POST", "/v1/watches", json::object{{"watcher", "agent:ops:main"}, {"target", child}}, 200);
  Call("POST", "/v1/watches/remove",
       json::array{json::object{{"watcher", "agent:ops:main"}, {"target", child}}}, 200);
  Call("POST", "/v1/watches/remove", json::object{{"watcher", child}, {"target", child}}, 400);
  Call("POST", "/v1/watches", json::object{{"watcher", "agent:ops:main"}, {"target", child}}, 200);
  Call("POST", "/v1/sessions/" + parent + "/messages",
       json::object{{"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}},
       200);
  Call("POST", "/v1/tools/session_status",
       json::object{{"sessionKey", child}, {"changesSince", 0}}, 200, As(parent));
  Call("POST", "/v1/tools/session_status", json::object{{"changesSince", -1}}, 400, As(parent));
  Call("POST", "/v1/tools/session_status", json::object{{"sessionKey", "agent:main:nope"}}, 403,
       As(parent));
  Call("POST", "/v1/tools/sessions_list", json::object{{"limit", 20}}, 200, As(parent));
  Call("POST", "/v1/tools/sessions_history", json::object{{"sessionKey", parent}}, 200,
       As(parent));
  HttpResult sent = Call("POST", "/v1/tools/sessions_send",
                         json::object{{"sessionKey", child}, {"message", "hi"},
                                      {"timeoutSeconds", 0}},
                         200, As(parent));
  HttpResult spawned =
      Call("POST", "/v1/tools/sessions_spawn", json::object{{"task", "t"}}, 200, As(parent));
  Call("POST", "/v1/tools/subagents", json::object{{"action", "list"}}, 200, As(parent));
  Call("POST", "/v1/tools/sessions_yield", json::object{}, 200, As(parent));
  std::string send_run(sent.json().at("runId").as_string());
  std::string spawn_run(spawned.json().at("runId").as_string());
  Call("POST", "/v1/runs/" + send_run + "/reply", json::object{{"text", "ok"}}, 200);
  Call("POST", "/v1/runs/" + spawn_run + "/finish", json::object{{"status", "ok"}}, 200);
  Call("POST", "/v1/runs/nope/finish", json::object{{"status", "ok"}}, 404);
  Call("POST", "/v1/deliveries/999999/ack", "", 404);
  Call("GET", "/v1/wakes", "", 426);
  Call("GET", "/v1/deliveries", "", 426);

  std::string source = upstream_root_ + "/upstream.jsonl";
  std::ofstream(source) << "";
  Call("POST", "/v1/upstream-links",
       json::object{{"sessionKey", child}, {"catalogId", "c"}, {"hostId", "h"},
                    {"threadId", "t"}, {"upstreamKind", "jsonl"},
                    {"upstreamRef", json::object{{"path", source}}}},
       200);
  Call("GET", "/v1/upstream-links", "", 200);
  Call("DELETE", "/v1/upstream-links/" + child, "", 200);
  Call("DELETE", "/v1/upstream-links/" + child, "", 404);
  // The webhook rows (webhooks_http_test.cc, tests/webhooks). Port 9 on loopback: a call the
  // dispatcher makes meanwhile is refused at once.
  Call("POST", "/v1/webhooks",
       json::object{{"watcher", parent}, {"url", "https://127.0.0.1:9/in"}, {"secret", "s"}}, 200);
  Call("POST", "/v1/webhooks",
       json::object{{"watcher", parent}, {"url", "https://10.0.0.1/in"}, {"secret", "s"}}, 400);
  Call("GET", "/v1/webhooks", "", 200);
  Call("GET", "/v1/webhooks/dead", "", 200);
  Call("POST", "/v1/webhooks/dead/retry", json::object{{"idempotencyKey", "a:b:1"}}, 404);
  Call("POST", "/v1/webhooks/dead/drop", json::object{{"idempotencyKey", "a:b:1"}}, 404);
  Call("DELETE", "/v1/webhooks/" + parent, "", 200);

  Call("GET", "/v1/sessions/" + child + "/state?changesSince=0&limit=5", "", 200);
  Call("GET", "/v1/sessions/" + child + "/state?changesSince=-1", "", 400);
  // As of a past sequence (as_of_http_test.cc).
  Call("GET", "/v1/sessions/" + child + "/status?asOf=2&changesSince=0&limit=5", "", 200);
  Call("GET", "/v1/sessions/" + parent + "/status", "", 200);
  Call("GET", "/v1/sessions/" + child + "/status?asOf=999999", "", 400);
  Call("POST", "/v1/versions", json::object{{"sessions", json::array{child, "global"}}}, 200);
  Call("GET", "/v1/cursors?watcher=" + parent + "&target=" + child, "", 200);
  Call("GET", "/v1/cursors?watcher=agent:ops:x&target=" + child, "", 404);
  Call("POST", "/v1/sweep", "", 200);
  Call("POST", "/v1/rebuild", "", 200);
  Call("GET", "/v1/export", "", 200);
  Call("POST", "/v1/prune", "", 200);
  Call("POST", "/v1/backup", json::object{{"to", server_.root() + "/backup"}}, 200);
  Call("POST", "/v1/backup", json::object{{"to", server_.root() + "/backup"}}, 400);
  Call("GET", "/v1/verify", "", 200);
  Call("GET", "/v1/stats", "", 200);
  Call("GET", "/v1/clock", "", 200);
  Call("POST", "/v1/clock", json::object{{"now", kStartMs + 1000}}, 200);
  Call("GET", "/healthz", "", 200);
  Call("GET", "/readyz", "", 200);
  Call("GET", "/metrics", "", 200);
  Call("GET", "/v1/openapi.json", "", 200);
  Call("GET", "/v1/sessions/" + child, "", 405);
  Call("POST", "/v1/sessions/" + parent + "/reset", "", 200);
  Call("DELETE", "/v1/sessions/" + child, "", 200);
  // The MCP endpoint's rows (its JSON-RPC: mcp_server_test.cc and tests/mcp).
  Call("POST", "/mcp",
       R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})",
       200, As(parent));
  Call("GET", "/mcp", "", 400);
  Call("DELETE", "/mcp", "", 400);
  // The operator console's rows (console_test.cc and tests/console).
  Call("GET", "/console", "", 200);
  Call("GET", "/console/app.js", "", 200);
  Call("GET", "/console/nope.js", "", 404);
  Call("GET", "/v1/console/access", "", 200);
  Call("GET", "/v1/console/pulse", "", 200);
  Call("GET", "/v1/console/sessions?limit=5", "", 200);
  Call("GET", "/v1/console/sessions?limit=0", "", 400);
  Call("GET", "/v1/console/sessions/" + parent + "/links", "", 200);

  for (const server::RouteSpec& spec : server::Routes()) {
    if (spec.websocket) continue;  // their upgrade is the WebSocket tests' business
    if (spec.cluster_only) continue;  // a single node has none: cluster_routes_test.cc
    EXPECT_TRUE(covered_.count(spec.operation_id)) << spec.operation_id << " was not exercised";
  }
}

}  // namespace
}  // namespace statewatch::testing
