// libFuzzer target over everything statewatch reads from outside: HTTP requests as the daemon
// parses them, the JSON bodies its routes decode, and the FlatBuffers records it reads back
// from disk. Built with clang in its own tree (scripts/fuzz.sh; `make fuzz`), with ASan and
// UBSan, so that any crash, overflow or undefined behaviour stops the run.
//
// The first input byte picks the surface; the rest is the input:
//   0  an HTTP request: Beast's request parser with the daemon's limits, then the request
//      guard on its header, the target split and percent-decoding, and the body as JSON;
//   1  a JSON body through every decoder of a route (events and their validation, registry
//      upserts, upstream links, run replies and finishes, changesSince);
//   2  a persisted record through every FlatBuffers decoder of engine/records.h; a record
//      that decodes must re-encode into one that decodes again;
//   3  transcript text through the sessions_history sanitizer.
// Invariants are checked with Require(), which aborts (a finding) when one fails.
//
// `statewatch_fuzz --write-seeds=DIR` writes the seed corpus (one valid input per surface and
// record type) and exits; fuzz/corpus holds its output.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codecs/json_codec.h"
#include "codecs/registry_codec.h"
#include "engine/event_validation.h"
#include "engine/records.h"
#include "engine/table_codecs.h"
#include "monitor/upstream_link_json.h"
#include "server/request_guard.h"
#include "server/url.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_key.h"
#include "tools/history_sanitizer.h"
#include "tools/session_messaging.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using namespace statewatch;  // NOLINT: a fuzz target touches every layer

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "invariant failed: %s\n", what);
  std::abort();
}

std::optional<std::string_view> Field(const http::request<http::string_body>& req,
                                      http::field f) {
  auto it = req.find(f);
  if (it == req.end()) return std::nullopt;
  return std::string_view(it->value().data(), it->value().size());
}

// Parses JSON without letting Boost.JSON throw (the daemon's ParseBody does the same).
std::optional<json::value> ParseJson(std::string_view text) {
  std::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return std::nullopt;
  return v;
}

void FuzzHttp(std::string_view bytes) {
  static const server::ServerOptions options = [] {
    server::ServerOptions o;
    o.allow_origins = {"http://localhost:3000"};
    o.allow_hosts = {"statewatch.internal", "gw.example:8080"};
    return o;
  }();
  static const server::RequestGuard guard(options, 7411);
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(64 * 1024);
  parser.eager(true);
  beast::error_code ec;
  parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  if (!parser.is_header_done()) return;
  const auto& req = parser.get();
  server::RequestHead head;
  head.version = req.version();
  head.host = Field(req, http::field::host);
  head.origin = Field(req, http::field::origin);
  head.content_type = Field(req, http::field::content_type);
  auto length = parser.content_length();
  head.has_body = parser.chunked() || (length && *length > 0);
  auto refusal = guard.Check(head);
  if (refusal) {
    Require(refusal->status >= 400 && refusal->status < 500, "a refusal is a 4xx");
    Require(!refusal->message.empty(), "a refusal says why");
  }
  if (auto auth = Field(req, http::field::authorization)) {
    Require(server::BearerToken(*auth).size() <= auth->size(), "the token is inside the header");
  }
  std::string_view target(req.target().data(), req.target().size());
  server::Target t = server::SplitTarget(target);
  Require(t.path.size() + t.query.size() <= target.size(), "split stays inside the target");
  if (auto decoded = server::PercentDecode(t.path, /*plus_is_space=*/false)) {
    Require(decoded->size() <= t.path.size(), "decoding never grows");
  }
  bool malformed = false;
  (void)server::QueryParam(t.query, "watcher", &malformed);
  if (parser.is_done()) (void)ParseJson(req.body());
}

void FuzzEventInput(const json::value& v) {
  static const engine::KindTable kinds(DefaultKinds());
  auto input = tools::EventInputFromJson(v);
  if (!input.ok()) {
    Require(!input.status().message().empty(), "an error says what was wrong");
    return;
  }
  auto prepared = engine::PrepareEvent(*input, kinds, /*now_ms=*/1764460800000, 512);
  if (prepared.ok()) {
    Require(prepared->event.summary.size() <= 512, "summaries are capped");
    Require(IsValidUtf8(prepared->event.session_key), "stored keys are UTF-8");
  }
}

void FuzzJson(std::string_view bytes) {
  std::optional<json::value> v = ParseJson(bytes);
  if (!v) return;
  if (v->is_array()) {
    for (const json::value& e : v->as_array()) FuzzEventInput(e);
  } else {
    FuzzEventInput(*v);
  }
  (void)tools::SessionRecordFromJson(*v, SessionName{"main", "agent:main:main"});
  bool marker_given = false;
  (void)monitor::UpstreamLinkFromJson(*v, &marker_given);
  (void)tools::RunReplyFromJson(*v);
  (void)tools::RunFinishFromJson(*v);
  if (v->is_object()) {
    (void)tools::ParseChangesSince(v->as_object().if_contains("changesSince"));
  }
  (void)tools::DescribeJson(*v);
}

// Decodes `bytes` with `decode`; a record that decodes re-encodes into one that decodes.
template <typename Decode, typename Encode>
void RoundTrip(std::string_view bytes, Decode decode, Encode encode, const char* what) {
  auto decoded = decode(bytes);
  if (!decoded.ok()) return;
  std::string again = encode(*decoded);
  Require(decode(again).ok(), what);
}

// A commit group's log record that decodes re-encodes into one that decodes.
void FuzzGroup(std::string_view bytes) {
  engine::GroupRec group;
  if (!engine::DecodeGroup(bytes, &group).ok()) return;
  engine::GroupEncoder encoder;
  engine::GroupRec again;
  Require(engine::DecodeGroup(encoder.Encode(group), &again).ok(), "GroupRecord re-decodes");
}

void FuzzRecords(std::string_view b) {
  RoundTrip(
      b, engine::DecodeEvent, [](const Event& e) { return engine::EncodeEvent(e); },
      "Event re-decodes");
  RoundTrip(b, engine::DecodeHead, engine::EncodeHead, "Head re-decodes");
  RoundTrip(b, engine::DecodeCursor, engine::EncodeCursor, "Cursor re-decodes");
  RoundTrip(b, engine::DecodeSessionName, engine::EncodeSessionName, "SessionName re-decodes");
  FuzzGroup(b);
  RoundTrip(b, engine::DecodeSessionRecord, engine::EncodeSessionRecord,
            "SessionRecord re-decodes");
  RoundTrip(b, engine::DecodeTranscriptMessage, engine::EncodeTranscriptMessage,
            "TranscriptMessage re-decodes");
  RoundTrip(b, engine::DecodeRun, engine::EncodeRun, "Run re-decodes");
  RoundTrip(b, engine::DecodeDelivery, engine::EncodeDelivery, "Delivery re-decodes");
  RoundTrip(b, engine::DecodeUpstreamLink, engine::EncodeUpstreamLink, "UpstreamLink re-decodes");
  RoundTrip(b, engine::DecodeMeta, engine::EncodeMeta, "Meta re-decodes");
  RoundTrip(b, DecodeRequestRecord, EncodeRequestRecord, "RequestRecord re-decodes");
}

void FuzzText(std::string_view text) {
  tools::CleanText clean = tools::SanitizeText(text, 200);
  (void)clean;
  bool redacted = false;
  (void)tools::RedactSecrets(text, &redacted);
  (void)tools::StripScaffolding(text);
}

// ---- the seed corpus -------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> HttpAndJsonSeeds() {
  const std::string event =
      R"({"sessionKey":"agent:main:subagent:a1","kind":"child_spawned","actorType":"agent",)"
      R"("actorId":"agent:main:main","runId":"a1","dedupeKey":"child-spawned:a1",)"
      R"("watchers":["agent:main:main"],"payload":{"outcome":"ok"},"occurredAt":1764460800000})";
  auto post = [](const std::string& target, const std::string& body, const std::string& extra) {
    return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1:7411\r\n" + extra +
           "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };
  return {
      {"http-events", '\0' + post("/v1/events", event, "")},
      {"http-tool", '\0' + post("/v1/tools/session_status?x=%41+b",
                                 R"({"sessionKey":"agent:main:a","changesSince":"12"})",
                                 "X-Session-Key: agent:main:main\r\nAuthorization: bearer token\r\n")},
      {"http-upgrade", std::string(1, '\0') +
                           "GET /v1/wakes?watcher=agent%3Amain%3Amain HTTP/1.1\r\nHost: localhost\r\n"
                           "Origin: http://localhost:3000\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"},
      {"http-chunked", std::string(1, '\0') +
                           "POST /v1/notices/drain HTTP/1.1\r\nHost: [::1]:7411\r\n"
                           "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "5\r\n{\"wa\r\n0\r\n\r\n"},
      {"json-event", '\1' + event},
      {"json-batch", '\1' + ("[" + event + R"(,{"sessionKey":"global","kind":"human_direct_message",)"
                                            R"("actorType":"human","summary":"hi\nthere"}])")},
      {"json-session", '\1' + std::string(R"({"kind":"main","channel":"telegram","label":"ops",)"
                                           R"("parentSessionKey":"agent:main:main",)"
                                           R"("contextTokens":12,"sandboxed":true})")},
      {"json-link", '\1' + std::string(R"({"sessionKey":"agent:main:claude:t","catalogId":"c",)"
                                        R"("hostId":"h","threadId":"t","upstreamKind":"jsonl",)"
                                        R"("upstreamRef":{"path":"/srv/t.jsonl"},"marker":3})")},
      {"json-finish", '\1' + std::string(R"({"status":"ok","result":"done","text":"r"})")},
      {"text-history", '\3' + std::string("<think>x</think>[Tool Call: a]\nAuthorization: Bearer "
                                           "abc.def.ghi password=hunter2 <|im_end|> \xef\xbd\x9c")},
  };
}

std::vector<std::pair<std::string, std::string>> RecordSeeds() {
  Event e;
  e.sequence = 7;
  e.session_key = "agent:main:subagent:a1";
  e.agent_id = "main";
  e.kind = "human_direct_message";
  e.actor_type = ActorType::kHuman;
  e.occurred_at_ms = 1764460800000;
  e.summary = "human message via telegram";
  e.payload_json = R"({"channel":"telegram"})";
  e.dedupe_key = "d1";
  projections::HeadState head;
  head.head = 9;
  head.watermark = 2;
  head.material_latest = 9;
  projections::CursorRec cursor;
  cursor.last_seen = 3;
  cursor.notified = 9;
  cursor.material = 9;
  engine::GroupRec group;
  group.committed_at = 1764460800000;
  group.events = {SessionRef{3}, SessionRef{4}};
  projections::LogOp ack;
  ack.type = projections::LogOp::Type::kAck;
  ack.sequence = 9;
  ack.session = SessionRef{3};
  ack.refs = {SessionRef{4}};
  group.ops = {ack};
  engine::GroupEncoder group_encoder;
  SessionRecord session;
  session.name = {"main", "agent:main:main"};
  session.kind = "main";
  session.context_tokens = 12;
  TranscriptMessage message;
  message.role = "user";
  message.content_json = R"("hello")";
  RunRecord run;
  run.run_id = "r1";
  run.kind = "send";
  run.requester = {"main", "agent:main:main"};
  run.target = {"ops", "agent:ops:main"};
  Delivery delivery;
  delivery.id = 4;
  delivery.type = "task";
  delivery.text = "do it";
  UpstreamLink link;
  link.session = {"main", "agent:main:claude:t"};
  link.upstream_kind = "jsonl";
  link.upstream_ref = "/srv/t.jsonl";
  link.marker = 10;
  engine::MetaRec meta;
  meta.last_sequence = 9;
  auto seed = [](std::string bytes) { return '\2' + bytes; };
  return {
      {"record-event", seed(engine::EncodeEvent(e))},
      {"record-head", seed(engine::EncodeHead(head))},
      {"record-cursor", seed(engine::EncodeCursor(cursor))},
      {"record-name", seed(engine::EncodeSessionName(session.name))},
      {"record-group", seed(std::string(group_encoder.Encode(group)))},
      {"record-session", seed(engine::EncodeSessionRecord(session))},
      {"record-message", seed(engine::EncodeTranscriptMessage(message))},
      {"record-run", seed(engine::EncodeRun(run))},
      {"record-delivery", seed(engine::EncodeDelivery(delivery))},
      {"record-link", seed(engine::EncodeUpstreamLink(link))},
      {"record-meta", seed(engine::EncodeMeta(meta))},
  };
}

int WriteSeeds(const std::string& dir) {
  auto seeds = HttpAndJsonSeeds();
  for (auto& s : RecordSeeds()) seeds.push_back(std::move(s));
  for (const auto& [name, bytes] : seeds) {
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out) {
      std::fprintf(stderr, "cannot write %s/%s\n", dir.c_str(), name.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const std::string flag = "--write-seeds=";
  for (int i = 1; i < *argc; ++i) {
    std::string arg = (*argv)[i];
    if (arg.rfind(flag, 0) == 0) std::exit(WriteSeeds(arg.substr(flag.size())));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      FuzzHttp(rest);
      break;
    case 1:
      FuzzJson(rest);
      break;
    case 2:
      FuzzRecords(rest);
      break;
    case 3:
      FuzzText(rest);
      break;
  }
  return 0;
}
