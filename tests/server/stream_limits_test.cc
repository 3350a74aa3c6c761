// WebSocket streams under abuse: an incoming message over the cap closes
// the stream with 1009, streams beyond --max-streams are refused with 503, and a client
// that does not read is dropped once its queue passes the bound while the others are
// still served.
#include <gtest/gtest.h>

#include <string>

#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

// One client-to-server WebSocket text frame (masked, as RFC 6455 requires of clients).
std::string MaskedTextFrame(const std::string& payload) {
  std::string frame(1, static_cast<char>(0x81));  // FIN + text
  std::size_t n = payload.size();
  if (n < 126) {
    frame += static_cast<char>(0x80 | n);
  } else {
    frame += static_cast<char>(0x80 | 126);
    frame += static_cast<char>((n >> 8) & 0xff);
    frame += static_cast<char>(n & 0xff);
  }
  const char mask[4] = {0x11, 0x22, 0x33, 0x44};
  frame.append(mask, 4);
  for (std::size_t i = 0; i < n; ++i) frame += static_cast<char>(payload[i] ^ mask[i % 4]);
  return frame;
}

// The status code of the close frame that starts `bytes` (server frames are unmasked);
// -1 when `bytes` does not start with one.
int CloseCode(const std::string& bytes) {
  if (bytes.size() < 4 || static_cast<unsigned char>(bytes[0]) != 0x88) return -1;
  return (static_cast<unsigned char>(bytes[2]) << 8) | static_cast<unsigned char>(bytes[3]);
}

double MetricValue(HttpClient& http, const std::string& name) {
  std::string body = http.Get("/metrics").body;
  std::size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + name.size() + 2));
}

using StreamLimitsTest = ServerTest;

// Regression: Beast's default read_message_max (16 MiB) let each of 12 connections take
// RSS from 21 to 201 MB. Clients send nothing large here: over a few KiB the stream closes.
TEST_F(StreamLimitsTest, AnIncomingMessageOverTheCapClosesTheStreamWith1009) {
  StartServer();
  for (const std::string target : {"/v1/wakes", "/v1/deliveries"}) {
    RawConnection raw(server_->port());
    ASSERT_NE(raw.Upgrade(target).find(" 101 "), std::string::npos) << target;
    ASSERT_TRUE(raw.Send(MaskedTextFrame(std::string(100, 'a'))));  // small: ignored
    ASSERT_TRUE(raw.Send(MaskedTextFrame(std::string(8 * 1024, 'b'))));
    bool closed = false;
    std::string answer = raw.ReadUntilClosed(kWait, &closed);
    EXPECT_TRUE(closed) << target;
    EXPECT_EQ(CloseCode(answer), 1009) << target << ": " << answer.size() << " bytes";
  }
  EXPECT_EQ(http_->Get("/healthz").status, 200);
}

TEST_F(StreamLimitsTest, StreamsBeyondTheCapAreRefusedWith503) {
  server::ServerOptions o = TestOptions();
  o.max_streams = 2;
  StartServer(o);
  std::string error;
  auto a = WsClient::Connect(server_->port(), "/v1/wakes", {}, &error);
  ASSERT_NE(a, nullptr) << error;
  auto b = WsClient::Connect(server_->port(), "/v1/deliveries", {}, &error);
  ASSERT_NE(b, nullptr) << error;
  EXPECT_EQ(WsClient::Connect(server_->port(), "/v1/wakes", {}, &error), nullptr);
  EXPECT_EQ(error.substr(0, 3), "503") << error;
  EXPECT_NE(error.find("too_many_streams"), std::string::npos) << error;
  EXPECT_NE(error.find("--max-streams"), std::string::npos) << error;
  // HTTP requests are not streams: still served.
  EXPECT_EQ(http_->Get("/healthz").status, 200);
  // A closed stream frees its slot (bounded wait for the server to notice the close).
  a.reset();
  std::unique_ptr<WsClient> c;
  for (int i = 0; i < 200 && !c; ++i) {
    c = WsClient::Connect(server_->port(), "/v1/wakes", {}, &error);
  }
  EXPECT_NE(c, nullptr) << error;
}

// Regression: a client that never read kept every message queued for it. Now it is
// disconnected once its queue passes the bound; a reading client on the same server keeps
// receiving its wakes throughout.
TEST_F(StreamLimitsTest, AClientThatDoesNotReadIsDroppedAndTheOthersAreServed) {
  server::ServerOptions o = TestOptions();
  o.ws_queue_limit = 16;
  o.ws_queue_bytes = 16 * 1024;
  StartServer(o);
  const std::string pad(700, 'p');  // long keys: ~1.5 KB a wake
  const std::string reader_key = "agent:main:reader";
  std::string error;
  auto reader = WsClient::Connect(server_->port(), "/v1/wakes?watcher=" + reader_key, {}, &error);
  ASSERT_NE(reader, nullptr) << error;
  RawConnection stuck(server_->port(), /*receive_buffer_bytes=*/4096);
  ASSERT_NE(stuck.Upgrade("/v1/wakes").find(" 101 "), std::string::npos);

  int64_t now = kStartMs;
  bool dropped = false;
  for (int round = 0; round < 40 && !dropped; ++round) {
    now += 21000;  // past the wake window: the reader's wake of this round is not merged
    SetClock(*http_, now);
    std::string target = "agent:main:t" + std::to_string(round) + pad;
    json::array watchers{json::value(reader_key)};
    for (int i = 0; i < 200; ++i) {
      watchers.emplace_back("agent:w" + std::to_string(round) + "x" + std::to_string(i) + ":" +
                            pad);
    }
    Record(*http_, Event(target, "child_spawned", "agent",
                         {{"actorId", "agent:main:main"}, {"watchers", watchers}}));
    Record(*http_, HumanMessage(target));  // opens 201 notices: 201 wakes
    auto wake = reader->Next();
    ASSERT_TRUE(wake.has_value()) << "round " << round << ": the reading client got no wake";
    EXPECT_EQ(WakeJson(*wake)["reason"], json::value("session-state:" + target));
    dropped = MetricValue(*http_, "statewatch_websocket_dropped_total") >= 1;
  }
  ASSERT_TRUE(dropped) << "the client that does not read was never dropped";
  EXPECT_EQ(MetricValue(*http_, "statewatch_websocket_dropped_total"), 1);
  bool closed = false;
  stuck.ReadUntilClosed(kWait, &closed);
  EXPECT_TRUE(closed);
  // The reader is still served after the drop.
  SetClock(*http_, now + 21000);
  Record(*http_, Event("agent:main:after", "child_spawned", "agent",
                       {{"actorId", "agent:main:main"}, {"watchers", json::array{reader_key}}}));
  Record(*http_, HumanMessage("agent:main:after"));
  auto wake = reader->Next();
  ASSERT_TRUE(wake.has_value());
  EXPECT_EQ(WakeJson(*wake)["reason"], json::value("session-state:agent:main:after"));
}

}  // namespace
}  // namespace statewatch::testing
