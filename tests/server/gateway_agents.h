// Simulated agents for the end-to-end tests of the session tools: a WebSocket client on the
// delivery feed (GET /v1/deliveries) that takes deliveries and answers them through the
// gateway routes (reply, finish, ack). Every wait is bounded by the test client's.
#ifndef STATEWATCH_TESTS_SERVER_GATEWAY_AGENTS_H_
#define STATEWATCH_TESTS_SERVER_GATEWAY_AGENTS_H_

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <future>
#include <memory>
#include <string>

#include "http_helpers.h"
#include "test_client.h"

namespace statewatch::testing {

// One delivery feed connection.
class FeedAgent {
 public:
  FeedAgent(uint16_t port, const std::string& agent_id) {
    std::string error;
    ws_ = WsClient::Connect(port, "/v1/deliveries?agentId=" + agent_id, {}, &error);
    EXPECT_NE(ws_, nullptr) << error;
  }
  bool connected() const { return ws_ != nullptr; }

  // The next delivery as JSON (an empty object after the bounded wait).
  json::object Next() {
    if (!ws_) return {};
    auto m = ws_->Next();
    EXPECT_TRUE(m.has_value()) << "no delivery within the bounded wait";
    return m ? WakeJson(*m) : json::object();
  }

 private:
  std::unique_ptr<WsClient> ws_;
};

inline std::string Str(const json::object& o, const char* name) {
  const json::value* v = o.if_contains(name);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

inline HttpResult Reply(HttpClient& http, const std::string& run_id, const std::string& text) {
  return http.Post("/v1/runs/" + run_id + "/reply", json::object{{"text", text}});
}

inline HttpResult Finish(HttpClient& http, const std::string& run_id, const std::string& status,
                         const std::string& result = "") {
  json::object body{{"status", status}};
  if (!result.empty()) body["result"] = result;
  return http.Post("/v1/runs/" + run_id + "/finish", body);
}

inline HttpResult Ack(HttpClient& http, const json::object& delivery) {
  return http.Post(
      "/v1/deliveries/" + std::to_string(delivery.at("deliveryId").to_number<uint64_t>()) + "/ack",
      std::string());
}

// A tool call on its own connection and thread, for calls that park until a reply.
inline std::future<HttpResult> ToolAsync(uint16_t port, const std::string& tool,
                                         const std::string& caller, json::object params) {
  return std::async(std::launch::async, [=] {
    HttpClient http(port);
    return Tool(http, tool, caller, params);
  });
}

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_GATEWAY_AGENTS_H_
