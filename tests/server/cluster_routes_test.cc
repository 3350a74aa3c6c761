// The cluster routes are rows of the one route table, marked cluster_only: the router matches
// them only in cluster mode, the OpenAPI document marks them, a single node answers them 404
// as before, and a cluster node's answers conform to the document.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "http_helpers.h"
#include "schema_check.h"
#include "server/cluster_routes.h"
#include "server/openapi.h"
#include "server/route_table.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

using server::RouteScope;

const std::set<std::string> kClusterPaths = {"/v1/cluster/status", "/v1/cluster/digest",
                                             "/v1/cluster/takeover"};

// An OpenAPI operation key: the method in lower case (ASCII).
std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

TEST(ClusterRouteTable, TheClusterRoutesAreClusterOnlyRows) {
  std::set<std::string> cluster_only;
  for (const server::RouteSpec& spec : server::Routes()) {
    if (spec.cluster_only) cluster_only.insert(spec.path);
  }
  EXPECT_EQ(cluster_only, kClusterPaths);
  for (const std::string& path : kClusterPaths) {
    const char* method = path == "/v1/cluster/takeover" ? "POST" : "GET";
    EXPECT_FALSE(server::MatchRoute(method, path, "").route) << path;
    EXPECT_FALSE(server::MatchRoute(method, path, "").path_route) << path;
    EXPECT_TRUE(server::MatchRoute(method, path, "", RouteScope::kCluster).route) << path;
  }
}

TEST(ClusterRouteTable, TheOpenApiDocumentMarksThemClusterOnly) {
  json::object doc = server::OpenApiJson();
  for (const server::RouteSpec& spec : server::Routes()) {
    const json::object& op = doc.at("paths").at(spec.path).at(Lower(spec.method)).as_object();
    const json::value* mark = op.if_contains("x-statewatch-cluster-only");
    if (!spec.cluster_only) {
      EXPECT_EQ(mark, nullptr) << spec.path;
      continue;
    }
    ASSERT_NE(mark, nullptr) << spec.path;
    EXPECT_EQ(*mark, json::value(true)) << spec.path;
    EXPECT_NE(std::string(op.at("description").as_string()).find("serve --cluster"),
              std::string::npos)
        << spec.path;
  }
}

TEST(ClusterRoutesOnASingleNode, AnswerNotFoundAsBefore) {
  TestServer server;
  HttpClient http(server.port());
  for (const std::string& path : kClusterPaths) {
    for (const char* method : {"GET", "POST"}) {
      HttpResult r = http.Request(method, path, method == std::string("POST") ? "{}" : "");
      EXPECT_EQ(r.status, 404) << method << " " << path << ": " << r.body;
      EXPECT_EQ(r.error_message(), std::string("no route for ") + method + " " + path);
    }
  }
}

// One daemon behind a ClusterGate whose partition state the test moves through the roles
// (standby, owner, moved); its takeover hook makes it the owner.
class ClusterRoutesTest : public ::testing::Test {
 protected:
  static server::ServerOptions GatedOptions(std::shared_ptr<cluster::PartitionState> state) {
    server::ClusterGate::Hooks hooks;
    hooks.takeover = [state]() -> Result<server::ClusterGate::TakeoverResult> {
      state->Owned(/*epoch=*/2, /*position=*/9);
      return server::ClusterGate::TakeoverResult{2, 9};
    };
    server::ServerOptions o = TestOptions();
    o.gate = std::make_shared<server::ClusterGate>(state, std::move(hooks));
    return o;
  }

  // Sends the request and checks that its status is documented for the operation and its
  // body fits the schema.
  HttpResult Call(const std::string& method, const std::string& path, int expected_status) {
    HttpResult r = http_.Request(method, path, method == "POST" ? "{}" : "");
    EXPECT_EQ(r.status, expected_status) << method << " " << path << ": " << r.body;
    const json::object& op = doc_.at("paths").at(path).at(Lower(method)).as_object();
    const json::value* documented =
        op.at("responses").as_object().if_contains(std::to_string(r.status));
    if (documented == nullptr) {
      ADD_FAILURE() << method << " " << path << " answered " << r.status << ", not documented";
      return r;
    }
    const json::value& schema = documented->at("content").at("application/json").at("schema");
    EXPECT_EQ(SchemaCheck(doc_).Check(r.json(), schema), "")
        << method << " " << path << ": " << r.body;
    return r;
  }

  std::shared_ptr<cluster::PartitionState> state_ = std::make_shared<cluster::PartitionState>(0);
  TestServer server_{GatedOptions(state_)};
  HttpClient http_{server_.port()};
  json::object doc_ = server::OpenApiJson();
};

TEST_F(ClusterRoutesTest, AnswersInEveryRoleConformToTheDocument) {
  EXPECT_EQ(Call("GET", "/v1/cluster/status", 200).json().at("role").as_string(), "standby");
  EXPECT_EQ(Call("GET", "/v1/cluster/digest", 503).error_code(), "switching");  // no snapshot
  EXPECT_EQ(Call("POST", "/v1/cluster/takeover", 200).json().at("epoch").to_number<int64_t>(), 2);

  EXPECT_EQ(Call("GET", "/v1/cluster/status", 200).json().at("takenOverAt").to_number<int64_t>(),
            9);
  EXPECT_EQ(Call("GET", "/v1/cluster/digest", 200).json().at("role").as_string(), "owner");
  EXPECT_EQ(Call("POST", "/v1/cluster/takeover", 409).error_code(), "already_owner");

  state_->Moved("fenced by the test");
  EXPECT_EQ(Call("GET", "/v1/cluster/status", 200).json().at("movedReason").as_string(),
            "fenced by the test");
  EXPECT_EQ(Call("GET", "/v1/cluster/digest", 503).error_code(), "partition_moved");
  EXPECT_EQ(Call("POST", "/v1/cluster/takeover", 409).error_code(), "partition_moved");
}

TEST_F(ClusterRoutesTest, OtherPathsAndMethodsUnderClusterAnswerAsBefore) {
  HttpResult wrong_method = http_.Get("/v1/cluster/takeover");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.error_message(), "GET is not allowed on /v1/cluster/takeover");
  EXPECT_EQ(wrong_method.headers["allow"], "POST");
  HttpResult unknown = http_.Get("/v1/cluster/nothing");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.error_message(),
            "no cluster route /v1/cluster/nothing (this node answers /v1/cluster/status, "
            "/v1/cluster/digest and /v1/cluster/takeover)");
  // The cluster routes are counted under their own metric label.
  std::string metrics = http_.Get("/metrics").body;
  EXPECT_NE(metrics.find("route=\"/v1/cluster/takeover\",code=\"405\""), std::string::npos)
      << metrics;
}

}  // namespace
}  // namespace statewatch::testing
