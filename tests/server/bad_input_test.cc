// Bad input never breaks the daemon: malformed JSON, wrong types, oversized bodies, unknown
// paths and tools, wrong methods, missing tokens, malformed HTTP and a client that never
// finishes its request each get a clear error, and the server keeps serving the others.
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

class BadInputTest : public ServerTest {
 protected:
  // The server still answers, on a fresh connection.
  void ExpectServing() {
    HttpClient fresh(server_->port());
    EXPECT_EQ(fresh.Get("/healthz").status, 200);
  }

  void ExpectError(const HttpResult& r, int status, const std::string& code,
                   const std::string& message_part = "") {
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.error_code(), code) << r.body;
    EXPECT_NE(r.error_message().find(message_part), std::string::npos) << r.body;
    EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "",
              "application/json");
  }
};

TEST_F(BadInputTest, MalformedJsonAndWrongTypes) {
  StartServer();
  ExpectError(http_->Post("/v1/events", std::string("{\"sessionKey\": ")), 400, "invalid_json",
              "malformed JSON");
  ExpectError(http_->Post("/v1/events", std::string("")), 400, "invalid_json");
  ExpectError(http_->Post("/v1/tools/session_status", std::string("[1,"), As("agent:main:main")),
              400, "invalid_json");
  ExpectError(http_->Post("/v1/events", Event("agent:main:main", "human_direct_message", "human",
                                              {{"occurredAt", "yesterday"}})),
              400, "invalid_argument", "occurredAt must be an integer (got \"yesterday\")");
  ExpectError(http_->Post("/v1/events", json::array{HumanMessage("agent:main:main"),
                                                    Event("agent:main:main", "nope", "human")}),
              400, "invalid_argument", "nope");
  ExpectError(http_->Post("/v1/events", json::array{HumanMessage("agent:main:main"), 7}), 400,
              "invalid_argument", "events[1]");
  ExpectError(http_->Post("/v1/events", Event("agent::x", "human_direct_message", "human")), 400,
              "invalid_argument");
  // Nothing of a refused batch was written.
  EXPECT_EQ(
      Tool(*http_, "session_status", "agent:main:main", json::object{}).json().at("stateVersion"),
      json::value(0));

  ExpectError(http_->Post("/v1/watches", json::object{{"watcher", 5}, {"target", "x"}}), 400,
              "invalid_argument", "watcher must be a non-empty string");
  ExpectError(http_->Post("/v1/watches", json::object{{"target", "agent:main:a"}}), 400,
              "invalid_argument", "watcher is required");
  ExpectError(http_->Post("/v1/notices/drain", json::object{}), 400, "invalid_argument",
              "watcher is required");
  ExpectError(http_->Post("/v1/notices/drain", json::array{}), 400, "invalid_argument",
              "JSON object");
  ExpectError(http_->Get("/v1/notices"), 400, "invalid_argument", "watcher");
  ExpectError(http_->Request("PUT", "/v1/sessions/agent:main:main", "{\"contextTokens\": \"x\"}"),
              400, "invalid_argument", "contextTokens must be a non-negative integer");
  ExpectError(http_->Request("PUT", "/v1/sessions/agent:main:main", "{\"kind\": \"dm\"}"), 400,
              "invalid_argument", "kind must be one of");
  ExpectError(http_->Request("PUT", "/v1/sessions/agent:main:main", "{\"agentId\": \"ops\"}"), 400,
              "invalid_argument", "does not match");
  ExpectError(http_->Request("PUT", "/v1/sessions/agent%ZZ", "{}"), 400, "invalid_argument",
              "percent-encoding");
  ExpectError(http_->Post("/v1/clock", json::object{{"now", "soon"}}), 400, "invalid_argument",
              "now must be a non-negative integer");
  ExpectError(http_->Post("/v1/clock", json::object{{"now", kStartMs - 1}}), 400,
              "invalid_argument", "never goes backwards");
  // A malformed watch key is a refused registration, not an error (docs/semantics.md,
  // "How a watcher starts watching").
  HttpResult refused =
      http_->Post("/v1/watches", json::object{{"watcher", "global"}, {"target", "agent:main:a"}});
  EXPECT_EQ(refused.status, 200);
  EXPECT_EQ(refused.json().at("watched"), json::value(false));
  ExpectServing();
}

// A misspelt field never reads as applied: every JSON body refuses a member its route does
// not take, naming it and the known ones, and writes nothing.
TEST_F(BadInputTest, EveryBodyRefusesAnUnknownFieldAndWritesNothing) {
  StartServer();
  const std::string main = "agent:main:main";
  json::value event = HumanMessage(main);
  event.as_object()["wacthers"] = json::array{"agent:ops:main"};
  ExpectError(http_->Post("/v1/events", event), 400, "invalid_argument",
              "unknown field wacthers (known: sessionKey, agentId, sessionId, kind, actorType, "
              "actorId, runId, occurredAt, summary, payload, dedupeKey, traceparent, watchers)");
  ExpectError(http_->Post("/v1/events", json::array{HumanMessage(main), event}), 400,
              "invalid_argument", "events[1]: unknown field wacthers");
  ExpectError(http_->Request("PUT", "/v1/sessions/" + main, R"({"modle": "opus"})"), 400,
              "invalid_argument", "unknown field modle (known: agentId, sessionId,");
  ExpectError(http_->Post("/v1/sessions/" + main + "/messages",
                          std::string(R"({"messages": [], "sessionKey": "x"})")),
              400, "invalid_argument", "unknown field sessionKey (known: messages)");
  ExpectError(http_->Post("/v1/sessions/" + main + "/messages",
                          std::string(R"([{"role": "user", "content": "hi", "tolName": "x"}])")),
              400, "invalid_argument", "unknown field messages[0].tolName (known: role,");
  ExpectError(http_->Post("/v1/sessions/" + main + "/messages",
                          std::string(R"({"role": "user", "content": "hi",
                                          "usage": {"input": 1, "ouput": 2}})")),
              400, "invalid_argument", "unknown field messages[0].usage.ouput (known: input,");
  ExpectError(http_->Post("/v1/watches", json::object{{"watcher", "agent:ops:main"},
                                                      {"target", main},
                                                      {"targetAgent", "main"}}),
              400, "invalid_argument",
              "unknown field targetAgent (known: watcher, target, targetAgentId)");
  ExpectError(http_->Post("/v1/notices/drain",
                          json::object{{"watcher", "agent:ops:main"}, {"limit", 1}}),
              400, "invalid_argument", "unknown field limit (known: watcher)");
  ExpectError(http_->Post("/v1/versions", json::object{{"sessions", json::array{main}},
                                                       {"agent", "main"}}),
              400, "invalid_argument", "unknown field agent (known: sessions, agentId)");
  ExpectError(http_->Post("/v1/runs/r1/reply", json::object{{"text", "hi"}, {"txt", "hi"}}), 400,
              "invalid_argument", "unknown field txt (known: text)");
  ExpectError(http_->Post("/v1/runs/r1/finish", json::object{{"status", "ok"}, {"reason", 1}}),
              400, "invalid_argument", "unknown field reason (known: status, result)");
  ExpectError(http_->Post("/v1/upstream-links",
                          json::object{{"sessionKey", main},
                                       {"catalogId", "c"},
                                       {"hostId", "h"},
                                       {"threadId", "t"},
                                       {"upstreamKind", "jsonl"},
                                       {"upstreamRef", json::object{{"paht", "/x"}}}}),
              400, "invalid_argument", "unknown field upstreamRef.paht (known: path)");
  ExpectError(http_->Post("/v1/backup", json::object{{"to", "/tmp/x"}, {"overwrite", true}}), 400,
              "invalid_argument", "unknown field overwrite (known: to)");
  ExpectError(http_->Post("/v1/clock", json::object{{"now", kStartMs + 1}, {"tz", "UTC"}}), 400,
              "invalid_argument", "unknown field tz (known: now)");
  // Nothing was written: no event, no session entry, no transcript, no watch, no link, and
  // the clock did not move.
  EXPECT_EQ(Tool(*http_, "session_status", main, json::object{}).json().at("stateVersion"),
            json::value(0));
  EXPECT_EQ(Tool(*http_, "sessions_list", main, json::object{}).json().at("sessions"),
            json::array{});
  EXPECT_EQ(Tool(*http_, "sessions_history", main, json::object{{"sessionKey", main}})
                .json()
                .at("messages"),
            json::array{});
  EXPECT_EQ(http_->Get("/v1/cursors?watcher=agent:ops:main&target=" + main).status, 404);
  EXPECT_EQ(http_->Get("/v1/upstream-links").json().at("links").as_array().size(), 0u);
  EXPECT_EQ(http_->Get("/v1/clock").json().at("now"), json::value(kStartMs));
  ExpectServing();
}

TEST_F(BadInputTest, UnknownPathsToolsAndMethods) {
  StartServer();
  ExpectError(http_->Get("/v2/everything"), 404, "not_found", "no route for GET /v2/everything");
  ExpectError(http_->Post("/v1/tools/sessions_teleport", json::object{}, As("agent:main:main")),
              404, "unknown_tool", "Unknown tool: sessions_teleport");
  HttpResult wrong = http_->Get("/v1/events");
  ExpectError(wrong, 405, "method_not_allowed");
  EXPECT_EQ(wrong.headers["allow"], "POST");
  ExpectError(http_->Request("DELETE", "/v1/notices"), 405, "method_not_allowed");
  ExpectError(http_->Get("/v1/tools/session_status"), 405, "method_not_allowed");
  ExpectError(http_->Post("/v1/sessions/agent:main:main", std::string("{}")), 405,
              "method_not_allowed");
  ExpectError(http_->Get("/v1/wakes"), 426, "upgrade_required");
  std::string error;
  EXPECT_EQ(WsClient::Connect(server_->port(), "/v1/nowhere", {}, &error), nullptr);
  EXPECT_EQ(error.substr(0, 3), "404");
  EXPECT_EQ(WsClient::Connect(server_->port(), "/v1/wakes?watcher=global", {}, &error), nullptr);
  EXPECT_EQ(error.substr(0, 3), "400");
  // Sessions and routes that work, with a percent-encoded key.
  PutSession(*http_, "agent%3Amain%3Atelegram%3Agroup%3A-1001", {{"label", "ops"}});
  EXPECT_EQ(http_->Request("POST", "/v1/sessions/agent:main:telegram:group:-1001/reset").status,
            200);
  EXPECT_EQ(http_->Request("DELETE", "/v1/sessions/agent:main:telegram:group:-1001").status, 200);
  EXPECT_EQ(http_->Get("/v1/clock").json().at("now"), json::value(kStartMs));
  ExpectServing();
}

TEST_F(BadInputTest, OversizedBodyIsRefusedWith413) {
  server::ServerOptions o = TestOptions();
  o.body_limit_bytes = 1024;
  StartServer(o);
  std::string big = "[" + std::string(8192, ' ') + "]";
  ExpectError(http_->Post("/v1/events", big), 413, "body_too_large", "1024 bytes");
  // Just under the cap is fine.
  EXPECT_EQ(http_->Post("/v1/events", "[" + std::string(1000, ' ') + "]").status, 200);
  ExpectServing();
}

TEST_F(BadInputTest, AClientThatNeverFinishesItsRequestTimesOut) {
  server::ServerOptions o = TestOptions();
  o.read_timeout_ms = 300;
  StartServer(o);
  RawConnection stalled(server_->port());
  ASSERT_TRUE(stalled.connected());
  ASSERT_TRUE(stalled.Send(
      "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 100\r\n\r\n{\"sessionKey\""));
  // Meanwhile the others are served.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(http_->Get("/healthz").status, 200);
  bool closed = false;
  std::string raw = stalled.ReadUntilClosed(kWait, &closed);
  EXPECT_TRUE(closed);
  HttpResult r = ParseRawResponse(raw);
  ExpectError(r, 408, "request_timeout", "300 ms");
  ExpectServing();
}

TEST_F(BadInputTest, MalformedHttpAndPipelining) {
  StartServer();
  RawConnection garbage(server_->port());
  ASSERT_TRUE(garbage.Send("THIS IS NOT HTTP\r\n\r\n"));
  HttpResult r = ParseRawResponse(garbage.ReadUntilClosed());
  ExpectError(r, 400, "bad_request", "malformed HTTP request");

  RawConnection pipelined(server_->port());
  ASSERT_TRUE(
      pipelined.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /v1/clock "
                     "HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Connection: close\r\n\r\n"));
  std::string both = pipelined.ReadUntilClosed();
  EXPECT_NE(both.find("{\"status\":\"ok\",\"version\":"), std::string::npos) << both;
  EXPECT_NE(both.find("\"manual\":true"), std::string::npos) << both;
  ExpectServing();
}

// The head of a POST /v1/events of `body_size` bytes that asks for a 100 Continue first.
std::string ExpectContinueHead(std::size_t body_size, bool close) {
  return std::string(
             "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n"
             "Content-Type: application/json\r\n") +
         (close ? "Connection: close\r\n" : "") + "Content-Length: " + std::to_string(body_size) +
         "\r\n\r\n";
}

TEST_F(BadInputTest, ExpectContinueGetsA100BeforeTheBody) {
  StartServer();
  std::string body = json::serialize(HumanMessage("agent:main:main"));
  RawConnection client(server_->port());
  ASSERT_TRUE(client.Send(ExpectContinueHead(body.size(), /*close=*/true)));
  std::string interim = client.ReadUntil("\r\n\r\n");
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue", 0), 0u) << interim;
  ASSERT_TRUE(client.Send(body));
  HttpResult r = ParseRawResponse(client.ReadUntilClosed());
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(BadInputTest, AnInFlightRequestFinishesDuringGracefulShutdown) {
  StartServer();
  HttpClient idle(server_->port());
  ASSERT_EQ(idle.Get("/healthz").status, 200);  // a kept-alive idle connection
  std::string body = json::serialize(HumanMessage("agent:main:main"));
  RawConnection client(server_->port());
  // The 100 answer proves the server is reading this request when the shutdown begins.
  ASSERT_TRUE(client.Send(ExpectContinueHead(body.size(), /*close=*/false)));
  ASSERT_NE(client.ReadUntil("\r\n\r\n").find("100 Continue"), std::string::npos);
  server_->daemon().Shutdown();
  ASSERT_TRUE(client.Send(body));
  HttpResult r = ParseRawResponse(client.ReadUntilClosed());
  EXPECT_EQ(r.status, 200) << r.body;
  server_->Stop();  // returns: every connection closed, the database closed
  EXPECT_FALSE(idle.Get("/healthz").ok);
}

TEST_F(BadInputTest, KeepAliveReusesOneConnection) {
  StartServer();
  for (int i = 0; i < 10; ++i) ASSERT_EQ(http_->Get("/healthz").status, 200);
  EXPECT_EQ(http_->connects(), 1);
}

TEST_F(BadInputTest, BearerTokenGuardsEverythingButHealthz) {
  server::ServerOptions o = TestOptions();
  o.token = "s3cret";
  StartServer(o);
  HttpResult denied = http_->Post("/v1/events", HumanMessage("agent:main:main"));
  ExpectError(denied, 401, "unauthorized", "Authorization: Bearer");
  EXPECT_EQ(denied.headers["www-authenticate"], "Bearer");
  ExpectError(http_->Get("/metrics", {{"Authorization", "Bearer wrong"}}), 401, "unauthorized");
  EXPECT_EQ(http_->Get("/healthz").status, 200);
  Headers auth{{"Authorization", "Bearer s3cret"}};
  EXPECT_EQ(http_->Post("/v1/events", HumanMessage("agent:main:main"), auth).status, 200);
  std::string error;
  EXPECT_EQ(WsClient::Connect(server_->port(), "/v1/wakes", {}, &error), nullptr);
  EXPECT_EQ(error.substr(0, 3), "401");
  EXPECT_NE(WsClient::Connect(server_->port(), "/v1/wakes", auth, &error), nullptr) << error;
}

TEST_F(BadInputTest, MetricsExposition) {
  StartServer();
  Record(*http_, json::array{HumanMessage("agent:main:a"), HumanMessage("agent:main:b")});
  http_->Get("/nowhere");
  HttpResult m = http_->Get("/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.headers["content-type"].rfind("text/plain; version=0.0.4", 0), 0u);
  EXPECT_NE(m.body.find("statewatch_events_recorded_total{kind=\"human_direct_message\"} 2"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("statewatch_http_requests_total{method=\"POST\",route=\"/v1/events\",code=\"200\"} 1"),
            std::string::npos);
  EXPECT_NE(m.body.find("statewatch_http_requests_total{route=\"unmatched\",code=\"404\"} 1"),
            std::string::npos);
  EXPECT_NE(
      m.body.find(
          "statewatch_http_request_duration_seconds_bucket{method=\"POST\",route=\"/v1/events\",le=\"+Inf\"} 1"),
      std::string::npos);
  EXPECT_NE(m.body.find("statewatch_journal_rows 2"), std::string::npos);
  EXPECT_NE(m.body.find("statewatch_rocksdb_bytes_on_disk"), std::string::npos);
}

}  // namespace
}  // namespace statewatch::testing
