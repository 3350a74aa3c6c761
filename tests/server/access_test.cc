// Day one in production: containers, probes and scoped tokens.
//   - A listener that requires a token answers any Host (a container's name, a pod IP), unless
//     --allow-host narrows it (wildcards allowed); a loopback listener without one keeps the
//     DNS-rebinding guard (421).
//   - HEAD /healthz answers as GET without a body; GET /readyz says whether to send traffic.
//   - Tokens with scopes (read < write < admin) from the configuration file: a refusal names
//     the missing scope and the route; a reload replaces the tokens without a restart; no
//     token text ever reaches a log.
//   - The daemon prunes on its own clock (retention from the configuration file).
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/hex.h"
#include "child_process.h"
#include "config/config_file.h"
#include "http_helpers.h"
#include "server/access_control.h"
#include "server/config_reload.h"
#include "server/openapi.h"
#include "server/request_guard.h"
#include "server/route_table.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

using auth::Scope;

const std::string kReadToken = "read-token-7f3a9c";
const std::string kWriteToken = "write-token-51be02";
const std::string kAdminToken = "admin-token-c94d17";

auth::AccessToken Token(const std::string& name, const std::string& text, Scope scope) {
  return {name, auth::Sha256(text), scope};
}

server::ServerOptions ScopedOptions() {
  server::ServerOptions o = TestOptions();
  o.tokens = {Token("grafana", kReadToken, Scope::kRead),
              Token("gateway", kWriteToken, Scope::kWrite),
              Token("ops", kAdminToken, Scope::kAdmin)};
  return o;
}

// What `printf %s TOKEN | sha256sum` prints for a digest.
std::string Hex(const std::string& bytes) { return hex::Encode(bytes); }

Headers Bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// ---- Host policy ------------------------------------------------------------------------

TEST(HostPolicyTest, ATokenListenerAnswersContainerHostsAndALoopbackOneRefusesThem) {
  server::ServerOptions with_token = TestOptions();
  with_token.token = kAdminToken;
  TestServer open(with_token);
  HttpClient http(open.port());
  const std::string port = std::to_string(open.port());
  for (const std::string& host :
       std::vector<std::string>{"statewatch:" + port, "10.244.1.7:" + port,
                                "statewatch.default.svc.cluster.local", "localhost:" + port}) {
    EXPECT_EQ(http.Get("/healthz", {{"Host", host}}).status, 200) << host;
    Headers h = Bearer(kAdminToken);
    h.emplace_back("Host", host);
    EXPECT_EQ(http.Get("/v1/stats", h).status, 200) << host;
  }

  TestServer guarded;  // loopback, no token: a browser may reach it
  HttpClient plain(guarded.port());
  for (const std::string& host : {"statewatch:" + std::to_string(guarded.port()),
                                  "10.244.1.7:" + std::to_string(guarded.port())}) {
    HttpResult r = plain.Get("/v1/clock", {{"Host", host}});
    EXPECT_EQ(r.status, 421) << host;
    EXPECT_EQ(r.error_code(), "misdirected_request") << r.body;
  }
}

TEST(HostPolicyTest, AllowHostNarrowsATokenListenerAndTakesWildcards) {
  server::ServerOptions o;
  o.host = "0.0.0.0";
  o.token = kAdminToken;
  EXPECT_TRUE(server::RequestGuard(o, 7411).HostAllowed("10.244.1.7:7411"));  // any Host
  o.allow_hosts = {"*.svc.cluster.local", "statewatch:7411", "*.example.org:8443"};
  ASSERT_OK(server::ValidateServerOptions(o));
  server::RequestGuard guard(o, 7411);
  for (const char* host : {"statewatch.default.svc.cluster.local", "a.b.svc.cluster.local:9",
                           "STATEWATCH.Default.SVC.cluster.local:7411", "statewatch:7411",
                           "localhost:7411", "127.0.0.1", "[::1]:7411", "gw.example.org:8443"}) {
    EXPECT_TRUE(guard.HostAllowed(host)) << host;
  }
  for (const char* host : {"svc.cluster.local", ".svc.cluster.local", "evil.example", "statewatch",
                           "statewatch:80", "10.244.1.7:7411", "svc.cluster.local.evil.example",
                           "gw.example.org:443", "example.org:8443", "x..svc.cluster.local",
                           "evilsvc.cluster.local", "a.svc.cluster.localhost",
                           "a.svc.cluster.local:0"}) {
    EXPECT_FALSE(guard.HostAllowed(host)) << host;
  }
  // A loopback listener without a token takes wildcards too, and nothing else.
  server::ServerOptions loopback;
  loopback.allow_hosts = {"*.internal"};
  server::RequestGuard strict(loopback, 7411);
  EXPECT_TRUE(strict.HostAllowed("statewatch.internal:1"));
  EXPECT_FALSE(strict.HostAllowed("statewatch:7411"));
  for (const char* bad : {"*", "*.", "a.*.b", "*foo.example", "*.:80", "**.x"}) {
    loopback.allow_hosts = {bad};
    EXPECT_FALSE(server::ValidateServerOptions(loopback).ok()) << bad;
  }
}

// ---- probes -----------------------------------------------------------------------------

TEST(ProbeTest, HeadHealthzAnswersAsGetWithoutABody) {
  TestServer server;
  HttpClient http(server.port());
  const std::string get_body = http.Get("/healthz").body;
  RawConnection raw(server.port());
  ASSERT_TRUE(raw.Send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  const std::string answer = raw.ReadUntilClosed();
  ASSERT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("Content-Length: " + std::to_string(get_body.size())), std::string::npos)
      << answer;
  const std::size_t end = answer.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << answer;
  EXPECT_EQ(answer.substr(end + 4), "") << "a HEAD answer has no body";
  // Kept alive: a HEAD answer followed by a GET on the same connection.
  RawConnection again(server.port());
  ASSERT_TRUE(
      again.Send("HEAD /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                 "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  const std::string both = again.ReadUntilClosed();
  EXPECT_EQ(both.find("HTTP/1.1 200"), 0u) << both;
  EXPECT_NE(both.find("HTTP/1.1 200", 10), std::string::npos) << both;
  EXPECT_NE(both.find(get_body), std::string::npos) << both;
}

// The HEAD of one request says nothing about the next on the connection: an error answer the
// transport writes before routing (here 431, a header over 16 KiB) keeps its body after a HEAD.
TEST(ProbeTest, AnErrorAnswerAfterAHeadOnTheSameConnectionKeepsItsBody) {
  TestServer server;
  RawConnection raw(server.port());
  ASSERT_TRUE(raw.Send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                       "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " +
                       std::string(20 * 1024, 'x') + "\r\n\r\n"));
  const std::string both = raw.ReadUntilClosed();
  const std::size_t second = both.find("HTTP/1.1 431");
  ASSERT_NE(second, std::string::npos) << both.substr(0, 400);
  const std::string answer = both.substr(second);
  const std::size_t end = answer.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << answer;
  EXPECT_NE(answer.find("header_too_large", end), std::string::npos) << answer;
}

TEST(ProbeTest, ReadyzNeedsNoTokenAndSaysReady) {
  TestServer server(ScopedOptions());
  HttpClient http(server.port());
  HttpResult r = http.Get("/readyz");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("status"), json::value("ready"));
  EXPECT_EQ(r.json().at("checks").at("storage"), json::value("ok"));
  EXPECT_EQ(http.Get("/healthz").status, 200);
}

// ---- scopes -----------------------------------------------------------------------------

TEST(ScopeTest, EachTokenReachesItsScopeAndARefusalNamesTheMissingOne) {
  TestServer server(ScopedOptions());
  HttpClient http(server.port());
  const std::string event = json::serialize(HumanMessage(kMain));

  HttpResult r = http.Post("/v1/events", event, Bearer(kReadToken));
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.error_code(), "insufficient_scope");
  EXPECT_EQ(r.error_message(),
            "the token \"grafana\" lacks the \"write\" scope needed for POST /v1/events (it has "
            "\"read\")");
  EXPECT_EQ(http.Get("/v1/stats", Bearer(kReadToken)).json().at("rows"), json::value(0));
  EXPECT_EQ(http.Get("/v1/notices?watcher=" + kMain, Bearer(kReadToken)).status, 200);

  EXPECT_EQ(http.Post("/v1/events", event, Bearer(kWriteToken)).status, 200);
  r = http.Request("POST", "/v1/prune", "", Bearer(kWriteToken));
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.error_message(),
            "the token \"gateway\" lacks the \"admin\" scope needed for POST /v1/prune (it has "
            "\"write\")");
  r = http.Request("DELETE", "/v1/sessions/" + kMain, "", Bearer(kReadToken));
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.error_message().find("DELETE /v1/sessions/{key}"), std::string::npos) << r.body;
  EXPECT_EQ(http.Request("POST", "/v1/prune", "", Bearer(kAdminToken)).status, 200);
  EXPECT_EQ(http.Post("/v1/events", event, Bearer(kAdminToken)).status, 200);  // cumulative

  // Streams need read; a write token may read.
  std::string error;
  EXPECT_NE(WsClient::Connect(server.port(), "/v1/wakes", Bearer(kReadToken), &error), nullptr)
      << error;
  EXPECT_EQ(WsClient::Connect(server.port(), "/v1/wakes", {}, &error), nullptr);
  EXPECT_EQ(error.substr(0, 3), "401") << error;

  // No token, an unknown one: 401 naming how to send one.
  for (const Headers& h :
       {Headers{}, Bearer("not-a-token"), Headers{{"Authorization", "Basic x"}}}) {
    r = http.Get("/v1/stats", h);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer");
    EXPECT_NE(r.error_message().find("Authorization: Bearer <token>"), std::string::npos);
    EXPECT_NE(r.error_message().find("--token-file"), std::string::npos) << r.body;
  }
  // An unknown route with a valid token: 404; without one: 401 first.
  EXPECT_EQ(http.Get("/v1/nothing", Bearer(kReadToken)).status, 404);
  EXPECT_EQ(http.Get("/v1/nothing").status, 401);
}

TEST(ScopeTest, EveryRouteNamesItsScopeInTheTableAndTheDocument) {
  json::object doc = server::OpenApiJson();
  for (const server::RouteSpec& spec : server::Routes()) {
    std::string method(spec.method);
    for (char& c : method) c = static_cast<char>(std::tolower(c));
    const json::value& op = doc.at("paths").at(spec.path).at(method);
    EXPECT_EQ(op.at("x-statewatch-scope"), json::value(auth::ScopeName(spec.scope)))
        << spec.method << " " << spec.path;
    // /mcp carries JSON-RPC: each tool call or subscription through it needs its own scope.
    const bool writes = std::string_view(spec.method) != "GET" && spec.path != "/v1/versions" &&
                        spec.path != "/mcp" &&
                        std::string_view(spec.operation_id) != "session_status" &&
                        std::string_view(spec.operation_id) != "sessions_list" &&
                        std::string_view(spec.operation_id) != "sessions_history";
    if (writes) {
      EXPECT_GE(spec.scope, Scope::kWrite) << spec.method << " " << spec.path;
    }
    if (spec.cluster_only) {
      EXPECT_EQ(spec.scope, Scope::kAdmin) << spec.path;
    }
  }
  for (const char* admin : {"/v1/prune", "/v1/backup", "/v1/rebuild", "/v1/verify", "/v1/sweep"}) {
    auto found = std::find_if(server::Routes().begin(), server::Routes().end(),
                              [&](const server::RouteSpec& s) { return s.path == admin; });
    ASSERT_NE(found, server::Routes().end()) << admin;
    EXPECT_EQ(found->scope, Scope::kAdmin) << admin;
  }
}

TEST(ScopeTest, MetricsNeedReadUnlessOpenMetrics) {
  {
    TestServer server(ScopedOptions());
    HttpClient http(server.port());
    EXPECT_EQ(http.Get("/metrics").status, 401);
    EXPECT_EQ(http.Get("/metrics", Bearer(kReadToken)).status, 200);
  }
  server::ServerOptions o = ScopedOptions();
  o.open_metrics = true;
  TestServer server(o);
  HttpClient http(server.port());
  EXPECT_EQ(http.Get("/metrics").status, 200);
  EXPECT_EQ(http.Get("/v1/stats").status, 401);
}

TEST(ScopeTest, AReloadReplacesTheTokensWithoutARestart) {
  TestServer server(ScopedOptions());
  HttpClient http(server.port());
  EXPECT_EQ(http.Get("/v1/stats", Bearer(kReadToken)).status, 200);
  // The configuration file of the next reload: grafana's token rotated, gateway gone.
  server::ServerOptions next = server.options();
  tools::DaemonConfig config = server::ConfigOf(next);
  ASSERT_OK(tools::ApplyConfigText(R"({"auth": {"tokens": [
      {"name": "grafana", "token": "rotated-token-0d1e", "scope": "read"},
      {"name": "ops", "sha256": ")" + Hex(auth::Sha256(kAdminToken)) +
                                       R"(", "scope": "admin"}]}})",
                                   &config));
  server::ApplyDaemonConfig(config, &next);
  EXPECT_EQ(server::SettingsNeedingRestart(server.options(), next),
            std::vector<std::string>{});         // tokens need no restart
  ASSERT_OK(server.daemon().Reconfigure(next));  // what SIGHUP calls
  EXPECT_EQ(http.Get("/v1/stats", Bearer(kReadToken)).status, 401);
  EXPECT_EQ(http.Get("/v1/stats", Bearer("rotated-token-0d1e")).status, 200);
  EXPECT_EQ(http.Post("/v1/events", json::value(HumanMessage(kMain)), Bearer(kWriteToken)).status,
            401);
  EXPECT_EQ(http.Request("POST", "/v1/prune", "", Bearer(kAdminToken)).status, 200);
  EXPECT_EQ(http.connects(), 1);  // the same connection throughout
}

// A loopback daemon that started with tokens answers any Host (no browser page holds a
// token). A reload that removes every token would leave it open to any page that rebinds a
// name to 127.0.0.1: it is refused, and the running tokens stay.
TEST(ScopeTest, AReloadThatRemovesEveryTokenIsRefused) {
  TestServer server(ScopedOptions());
  HttpClient http(server.port());
  server::ServerOptions next = server.options();
  next.tokens.clear();
  Status s = server.daemon().Reconfigure(next);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("restart"), std::string::npos) << s.message();
  Headers rebound = {{"Host", "rebound.example:" + std::to_string(server.port())}};
  EXPECT_EQ(http.Get("/v1/stats", rebound).status, 401);
  rebound.emplace_back("Authorization", "Bearer " + kReadToken);
  EXPECT_EQ(http.Get("/v1/stats", rebound).status, 200);
}

// The real SIGHUP path of `statewatch serve`: the token file and the config file's tokens are
// read again, and the next request on the same connection is checked against them.
TEST(ScopeTest, SighupReloadsTheTokenFileAndTheConfigTokens) {
  const std::string root = MakeTempDir("statewatch-access-sighup");
  const std::string token_file = root + "/token", config = root + "/statewatch.json",
                    port_file = root + "/port", err = root + "/stderr";
  WriteFile(token_file, "first-flag-token-aa01\n");
  WriteFile(config, R"({"auth": {"tokens": [{"name": "grafana", "token": "first-read-token-bb02",
                                             "scope": "read"}]}})");
  Child child = Spawn(
      {"serve", "--data", root + "/data", "--listen", "127.0.0.1:0", "--port-file", port_file,
       "--token-file", token_file, "--config", config, "--manual-clock", std::to_string(kStartMs)},
      err);
  ASSERT_GT(child.pid, 0);
  FirstLine(child.stdout_fd);  // printed once it listens
  HttpClient http(static_cast<uint16_t>(std::stoi(Slurp(port_file))));
  EXPECT_EQ(http.Get("/v1/stats", Bearer("first-read-token-bb02")).status, 200);
  EXPECT_EQ(http.Request("POST", "/v1/prune", "", Bearer("first-flag-token-aa01")).status, 200);

  WriteFile(token_file, "second-flag-token-cc03\n");
  WriteFile(config, R"({"auth": {"tokens": [{"name": "grafana", "token": "second-read-token-dd04",
                                             "scope": "read"}]}})");
  ASSERT_EQ(kill(child.pid, SIGHUP), 0);
  ASSERT_TRUE(Eventually([&] {
    return http.Get("/v1/stats", Bearer("second-read-token-dd04")).status == 200;
  })) << Slurp(err);
  EXPECT_EQ(http.Get("/v1/stats", Bearer("first-read-token-bb02")).status, 401);
  EXPECT_EQ(http.Request("POST", "/v1/prune", "", Bearer("first-flag-token-aa01")).status, 401);
  EXPECT_EQ(http.Request("POST", "/v1/prune", "", Bearer("second-flag-token-cc03")).status, 200);
  EXPECT_EQ(http.connects(), 1);  // no connection was dropped
  const std::string log = Slurp(err);
  EXPECT_NE(log.find("event=config_reloaded"), std::string::npos) << log;
  EXPECT_EQ(log.find("config_reload_needs_restart"), std::string::npos) << log;
  for (const char* secret : {"flag-token", "read-token"}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << log;
  }
  ASSERT_EQ(kill(child.pid, SIGTERM), 0);
  EXPECT_EQ(Wait(child.pid), 0);
  close(child.stdout_fd);
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

// Regression guard: tokens must never reach a log — the request log, the daemon's log at
// trace level (errors, refusals), a refused configuration's message.
TEST(ScopeTest, NoTokenTextReachesTheLogs) {
  std::ostringstream captured;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  server::ServerOptions o = ScopedOptions();
  o.token = "flag-token-88e2c1";
  const std::string root = MakeTempDir("statewatch-access-log");
  o.access_log = root + "/access.log";
  {
    TestServer server(o);
    HttpClient http(server.port());
    for (const std::string& t :
         {kReadToken, kWriteToken, kAdminToken, o.token, std::string("wrong-token-3b7f")}) {
      http.Get("/v1/stats?x=1", Bearer(t));
      http.Post("/v1/events", json::value(HumanMessage(kMain)), Bearer(t));
      http.Request("POST", "/v1/prune", "", Bearer(t));
    }
    tools::DaemonConfig config;
    Status bad = tools::ApplyConfigText(
        R"({"auth": {"tokens": [{"name": "x", "token": "has space-secret-f00", "scope": "read"}]}})",
        &config);
    EXPECT_FALSE(bad.ok());
    spdlog::error("event=config_reload_refused error=\"{}\"", bad.message());
    bad = tools::ApplyConfigText(
        R"({"auth": {"tokens": [{"name": "x", "sha256": "paste-secret-d00d", "scope": "read"}]}})",
        &config);
    EXPECT_FALSE(bad.ok());
    spdlog::error("event=config_reload_refused error=\"{}\"", bad.message());
    ASSERT_OK(server.daemon().Reconfigure(server.options()));
  }
  spdlog::set_default_logger(previous);
  const std::string logs = captured.str() + Slurp(root + "/access.log");
  EXPECT_NE(logs.find("/v1/stats"), std::string::npos) << "the capture saw the requests";
  EXPECT_NE(logs.find("config_reload_refused"), std::string::npos);
  for (const std::string& secret :
       {kReadToken, kWriteToken, kAdminToken, o.token, std::string("wrong-token-3b7f"),
        std::string("secret-f00"), std::string("secret-d00d")}) {
    EXPECT_EQ(logs.find(secret), std::string::npos) << secret << " in:\n" << logs;
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

// ---- errors that lead somewhere -----------------------------------------------------------

TEST(ErrorsTest, AckingAnUnknownDeliveryIs404) {
  TestServer server;
  HttpClient http(server.port());
  HttpResult r = http.Request("POST", "/v1/deliveries/424242/ack", "");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.error_code(), "not_found");
  EXPECT_NE(r.error_message().find("424242"), std::string::npos) << r.body;
}

// ---- retention on the daemon's clock ------------------------------------------------------

TEST(RetentionTest, TheDaemonPrunesOnItsClockWithTheConfiguredRetention) {
  server::ServerOptions o = TestOptions();
  tools::DaemonConfig config = server::ConfigOf(o);
  ASSERT_OK(tools::ApplyConfigText(
      R"({"retention": {"ms": 86400000, "pruneIntervalMs": 259200000}})", &config));
  server::ApplyDaemonConfig(config, &o);
  EXPECT_EQ(o.retention_ms, kDayMs);
  TestServer server(o);
  HttpClient http(server.port());
  Record(http, HumanMessage(kMain));
  auto rows = [&] { return http.Get("/v1/stats").json().at("rows").to_number<int64_t>(); };
  ASSERT_EQ(rows(), 1);
  // Past the retention, before the next prune (every 3 days): still there, no write since.
  SetClock(http, kStartMs + 2 * kDayMs);
  EXPECT_EQ(rows(), 1);
  // The scheduled prune falls due: gone, with no write and no POST /v1/prune.
  SetClock(http, kStartMs + 3 * kDayMs);
  EXPECT_EQ(rows(), 0);
  HttpResult state = http.Get("/v1/sessions/" + kMain + "/state?changesSince=0");
  ASSERT_EQ(state.status, 200) << state.body;
  EXPECT_TRUE(state.json().at("stateChanges").at("events").as_array().empty()) << state.body;
}

}  // namespace
}  // namespace statewatch::testing
