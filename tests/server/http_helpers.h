// Shorthands for the end-to-end tests: events, registry entries, tool calls and the manual
// clock over HTTP.
#ifndef STATEWATCH_TESTS_SERVER_HTTP_HELPERS_H_
#define STATEWATCH_TESTS_SERVER_HTTP_HELPERS_H_

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "test_client.h"

namespace statewatch::testing {

namespace json = boost::json;

inline json::object Event(const std::string& key, const std::string& kind,
                          const std::string& actor_type, json::object extra = {}) {
  json::object e = std::move(extra);
  e["sessionKey"] = key;
  e["kind"] = kind;
  e["actorType"] = actor_type;
  return e;
}

inline json::object HumanMessage(const std::string& key) {
  return Event(key, "human_direct_message", "human",
               {{"summary", "human message via telegram"}, {"payload", {{"channel", "telegram"}}}});
}

// Records one event (or an array); returns the sequences, failing the test on an error.
inline std::vector<uint64_t> Record(HttpClient& http, const json::value& body) {
  HttpResult r = http.Post("/v1/events", body);
  EXPECT_EQ(r.status, 200) << r.body;
  std::vector<uint64_t> seqs;
  if (r.status != 200) return seqs;
  json::value body = r.json();
  for (const auto& e : body.at("events").as_array()) {
    seqs.push_back(e.at("sequence").to_number<uint64_t>());
  }
  return seqs;
}

// Registers `key` with `fields` (PUT /v1/sessions/{key}), failing the test unless it is 200.
inline void PutSession(HttpClient& http, const std::string& key, json::object fields,
                       const Headers& headers = {}) {
  HttpResult r = http.Request("PUT", "/v1/sessions/" + key, json::serialize(fields), headers);
  ASSERT_EQ(r.status, 200) << key << ": " << r.body;
}

inline Headers As(const std::string& caller, const std::string& agent = "") {
  Headers h{{"X-Session-Key", caller}};
  if (!agent.empty()) h.emplace_back("X-Agent-Id", agent);
  return h;
}

inline HttpResult Tool(HttpClient& http, const std::string& tool, const std::string& caller,
                       const json::value& params) {
  return http.Post("/v1/tools/" + tool, params, As(caller));
}

inline void SetClock(HttpClient& http, int64_t ms) {
  HttpResult r = http.Post("/v1/clock", json::object{{"now", ms}});
  ASSERT_EQ(r.status, 200) << r.body;
}

inline json::array Notices(HttpClient& http, const std::string& watcher) {
  HttpResult r = http.Get("/v1/notices?watcher=" + watcher);
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return {};
  return r.json().at("notices").as_array();
}

inline json::array Drain(HttpClient& http, const std::string& watcher) {
  HttpResult r = http.Post("/v1/notices/drain", json::object{{"watcher", watcher}});
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return {};
  return r.json().at("notices").as_array();
}

// docs/semantics.md, "One notice, not many", byte-exact (written out here, not taken from
// the engine).
inline std::string NoticeTextFor(const std::string& target, uint64_t since) {
  return "Session \"" + target +
         "\" changed (other actor). Reconcile before acting: "
         "session_status sessionKey \"" +
         target + "\" changesSince " + std::to_string(since) + ".";
}

inline json::object WakeJson(const std::string& message) {
  std::error_code ec;
  json::value v = json::parse(message, ec);
  return ec || !v.is_object() ? json::object() : v.as_object();
}

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_HTTP_HELPERS_H_
