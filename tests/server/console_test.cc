// The operator console's routes (server/console_handlers.h): its files are public and carry
// a strict Content-Security-Policy; its data routes need a token, list the session tree with
// parents, versions, last events and runs, and show who watches whom with cursors, lag, the
// pending notice's exact text and the last wake. Every answer conforms to the OpenAPI document.
#include <gtest/gtest.h>

#include "child_process.h"
#include "http_helpers.h"
#include "schema_check.h"
#include "server/openapi.h"
#include "server/route_table.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

const std::string kGrandchild = kChild + ":subagent:g1";

class ConsoleTest : public ServerTest {
 protected:
  void SetUp() override { StartServer(); }

  // GET `target`, expecting `status`; checks the answer against the document's schema.
  json::value Get(const std::string& target, int status = 200, const Headers& headers = {}) {
    HttpResult r = http_->Get(target, headers);
    EXPECT_EQ(r.status, status) << target << ": " << r.body;
    std::string path = target.substr(0, target.find('?'));
    server::RouteLookup found = server::MatchRoute("GET", path, "");
    EXPECT_TRUE(found.route.has_value()) << path;
    if (!found.route || r.status != 200) return r.json();
    const char* schema = server::Routes()[*found.route].answer_schema;
    if (schema != nullptr) {
      json::object doc = server::OpenApiJson();
      SchemaCheck check(doc);
      json::value ref = json::object{{"$ref", std::string("#/components/schemas/") + schema}};
      EXPECT_EQ(check.Check(r.json(), ref), "") << target << ": " << r.body;
    }
    return r.json();
  }

  // A parent, its child and grandchild; the parent and ops watch the child.
  void SeedTree() {
    PutSession(*http_, kMain, {{"kind", "main"}, {"label", "coordinator"}});
    PutSession(*http_, kChild, {{"parentSessionKey", kMain}, {"sandboxed", true}});
    PutSession(*http_, kGrandchild, {{"parentSessionKey", kChild}});
    PutSession(*http_, kOps, {{"kind", "main"}});
    HttpResult w = http_->Post("/v1/watches", json::object{{"watcher", kMain}, {"target", kChild}});
    ASSERT_EQ(w.status, 200) << w.body;
    w = http_->Post("/v1/watches", json::object{{"watcher", kOps}, {"target", kChild}});
    ASSERT_EQ(w.status, 200) << w.body;
  }

  static const json::object* Find(const json::array& rows, const char* field,
                                  const std::string& value) {
    for (const json::value& row : rows) {
      if (row.at(field) == json::value(value)) return &row.as_object();
    }
    return nullptr;
  }
};

TEST_F(ConsoleTest, PageIsPublicWithAStrictContentSecurityPolicy) {
  HttpResult page = http_->Get("/console");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers["content-type"], "text/html; charset=utf-8");
  const std::string csp = page.headers["content-security-policy"];
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << csp;
  EXPECT_EQ(page.headers["x-content-type-options"], "nosniff");
  // No inline script: the page loads its one module from the daemon.
  EXPECT_NE(page.body.find("<script type=\"module\" src=\"/console/app.js\"></script>"),
            std::string::npos);

  HttpResult script = http_->Get("/console/app.js");
  ASSERT_EQ(script.status, 200);
  EXPECT_EQ(script.headers["content-type"], "text/javascript; charset=utf-8");
  EXPECT_EQ(script.headers["x-content-type-options"], "nosniff");
  EXPECT_EQ(script.body.find("innerHTML"), std::string::npos) << "session text must go in as text";
  EXPECT_EQ(http_->Get("/console/app.css").headers["content-type"], "text/css; charset=utf-8");

  HttpResult missing = http_->Get("/console/nope.js");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_code(), "not_found");
}

TEST_F(ConsoleTest, DataRoutesNeedTheTokenThePageDoesNot) {
  server::ServerOptions o = TestOptions();
  o.token = "console-token-5e1d";
  StartServer(o);
  EXPECT_EQ(http_->Get("/console").status, 200);
  EXPECT_EQ(http_->Get("/console/app.js").status, 200);
  for (const char* route : {"/v1/console/pulse", "/v1/console/sessions",
                            "/v1/console/sessions/agent%3Amain%3Amain/links"}) {
    HttpResult refused = http_->Get(route);
    EXPECT_EQ(refused.status, 401) << route;
    EXPECT_EQ(refused.headers["www-authenticate"], "Bearer") << route;
    Get(route, 200, {{"Authorization", "Bearer console-token-5e1d"}});
  }
  // The page asks, without a token, whether it needs one: here it does.
  EXPECT_EQ(Get("/v1/console/access", 200), json::parse(R"({"tokenRequired":true})"));
}

// A daemon started without a token: the page connects at once, asking for nothing.
TEST_F(ConsoleTest, ATokenlessDaemonTellsThePageItNeedsNone) {
  EXPECT_EQ(Get("/v1/console/access", 200), json::parse(R"({"tokenRequired":false})"));
}

TEST_F(ConsoleTest, SessionsListTheTreeWithVersionsLastEventsAndVisibility) {
  SeedTree();
  std::vector<uint64_t> seqs = Record(
      *http_, Event(kChild, "human_direct_message", "human",
                    {{"summary", "<script>alert(1)</script>"}}));
  ASSERT_EQ(seqs.size(), 1u);
  json::value answer = Get("/v1/console/sessions");
  EXPECT_EQ(answer.at("truncated"), json::value(false));
  const json::array& rows = answer.at("sessions").as_array();
  ASSERT_EQ(rows.size(), 4u);
  // Sorted by agent, then key.
  EXPECT_EQ(rows[0].at("sessionKey"), json::value(kMain));
  EXPECT_EQ(rows[3].at("sessionKey"), json::value(kOps));

  const json::object* child = Find(rows, "sessionKey", kChild);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->at("parentSessionKey"), json::value(kMain));
  EXPECT_EQ(child->at("stateVersion"), json::value(seqs[0]));
  EXPECT_EQ(child->at("sandboxed"), json::value(true));
  EXPECT_EQ(child->at("visibility"), json::value("tree"));
  const json::object& last = child->at("lastEvent").as_object();
  EXPECT_EQ(last.at("sequence"), json::value(seqs[0]));
  EXPECT_EQ(last.at("kind"), json::value("human_direct_message"));
  EXPECT_EQ(last.at("summary"), json::value("<script>alert(1)</script>"));  // as given: the page escapes
  EXPECT_EQ(Find(rows, "sessionKey", kGrandchild)->at("parentSessionKey"), json::value(kChild));
  EXPECT_TRUE(Find(rows, "sessionKey", kOps)->at("lastEvent").is_null());

  json::value first = Get("/v1/console/sessions?limit=1");
  EXPECT_EQ(first.at("sessions").as_array().size(), 1u);
  EXPECT_EQ(first.at("truncated"), json::value(true));
  HttpResult bad = http_->Get("/v1/console/sessions?limit=0");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.error_message(), "limit must be an integer from 1 to 10000 (got \"0\")");
}

TEST_F(ConsoleTest, SpawnedChildShowsItsRunState) {
  PutSession(*http_, kMain, {{"kind", "main"}});
  HttpResult spawned = Tool(*http_, "sessions_spawn", kMain, json::object{{"task", "look"}});
  ASSERT_EQ(spawned.status, 200) << spawned.body;
  std::string child(spawned.json().at("childSessionKey").as_string());
  json::value answer = Get("/v1/console/sessions");
  const json::object* row = Find(answer.at("sessions").as_array(), "sessionKey", child);
  ASSERT_NE(row, nullptr) << answer;
  EXPECT_EQ(row->at("parentSessionKey"), json::value(kMain));
  EXPECT_EQ(row->at("run").at("status"), json::value("running"));
  EXPECT_EQ(row->at("run").at("kind"), json::value("spawn"));
}

TEST_F(ConsoleTest, LinksShowCursorsLagExactNoticeTextAndLastWake) {
  SeedTree();
  Record(*http_, Event(kChild, "human_direct_message", "human", {{"summary", "one"}}));
  std::vector<uint64_t> seqs =
      Record(*http_, Event(kChild, "human_direct_message", "human", {{"summary", "two"}}));

  json::value links = Get("/v1/console/sessions/" + kChild + "/links");
  EXPECT_EQ(links.at("stateVersion"), json::value(seqs[0]));
  const json::array& watchers = links.at("watchers").as_array();
  ASSERT_EQ(watchers.size(), 2u);
  const json::object* ops = Find(watchers, "watcher", kOps);
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->at("pending"), json::value(true));
  EXPECT_EQ(ops->at("lag"), json::value(2));
  EXPECT_EQ(ops->at("lagTruncated"), json::value(false));
  uint64_t since = ops->at("lastSeen").to_number<uint64_t>();
  EXPECT_EQ(ops->at("notice"), json::value(NoticeTextFor(kChild, since)));
  EXPECT_EQ(ops->at("material"), json::value(seqs[0]));
  // The first notice wakes its watcher at once (the engine's wake window starts there).
  ASSERT_TRUE(Eventually([&] {
    return !Get("/v1/console/sessions/" + kChild + "/links")
                .at("watchers").as_array()[1].at("lastWake").is_null();
  }));
  json::value woken = Get("/v1/console/sessions/" + kOps + "/links");
  EXPECT_EQ(woken.at("lastWake").at("reason"), json::value("session-state:" + kChild));

  // The watcher's side: its target with the same cursor and its pending notice.
  const json::array& targets = woken.at("targets").as_array();
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].at("target"), json::value(kChild));
  EXPECT_EQ(targets[0].at("stateVersion"), json::value(seqs[0]));
  EXPECT_EQ(targets[0].at("notice"), json::value(NoticeTextFor(kChild, since)));
  ASSERT_EQ(woken.at("notices").as_array().size(), 1u);
  EXPECT_EQ(woken.at("notices").as_array()[0].at("text"), json::value(NoticeTextFor(kChild, since)));

  // A drain acknowledges up to N; the second event (coalesced into M) reopens one notice
  // with lag 1, and the next drain leaves nothing pending and no lag.
  Drain(*http_, kOps);
  json::value reopened = Get("/v1/console/sessions/" + kOps + "/links");
  const json::object& again = reopened.at("targets").as_array()[0].as_object();
  EXPECT_EQ(again.at("pending"), json::value(true));
  EXPECT_EQ(again.at("lag"), json::value(1));
  EXPECT_EQ(again.at("notice"),
            json::value(NoticeTextFor(kChild, again.at("lastSeen").to_number<uint64_t>())));
  Drain(*http_, kOps);
  json::value after = Get("/v1/console/sessions/" + kOps + "/links");
  EXPECT_EQ(after.at("targets").as_array()[0].at("pending"), json::value(false));
  EXPECT_EQ(after.at("targets").as_array()[0].at("lag"), json::value(0));
  EXPECT_TRUE(after.at("targets").as_array()[0].at("notice").is_null());
  EXPECT_TRUE(after.at("notices").as_array().empty());
}

TEST_F(ConsoleTest, BareKeyHasNoTargetsAndAMalformedKeyIsRefused) {
  PutSession(*http_, "global", {{"kind", "group"}});
  json::value links = Get("/v1/console/sessions/global/links?agentId=main");
  EXPECT_TRUE(links.at("targets").as_array().empty());
  EXPECT_TRUE(links.at("lastWake").is_null());
  HttpResult bad = http_->Get("/v1/console/sessions/agent%3A%3Ax/links");
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(ConsoleTest, PulseMovesWithEveryWrite) {
  json::value before = Get("/v1/console/pulse");
  EXPECT_EQ(before.at("cluster"), json::value(false));
  PutSession(*http_, kMain, {{"kind", "main"}});
  std::vector<uint64_t> seqs = Record(*http_, HumanMessage(kMain));
  json::value after = Get("/v1/console/pulse");
  EXPECT_EQ(after.at("lastSequence"), json::value(seqs[0]));
  EXPECT_GT(after.at("lastSequence").to_number<uint64_t>(),
            before.at("lastSequence").to_number<uint64_t>());
}

}  // namespace
}  // namespace statewatch::testing
