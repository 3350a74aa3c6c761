// `statewatch --server URL,URL,…`: every mutating request carries a generated X-Request-Id,
// and a lost answer (502 answer_lost) is repeated at the next URL with the same id, so the
// daemon applies it at most once; a read carries none. Two fake daemons on loopback.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "cli/remote.h"
#include "cli_fixture.h"
#include "net/http_listener.h"
#include "statewatch/request_ids.h"
#include "status_matchers.h"

namespace statewatch::cli {
namespace {

// A fake daemon that notes the X-Request-Id of every request and answers `status` `body`.
struct Fake {
  Fake(int status, std::string body) {
    auto bound = net::HttpListener::Bind("127.0.0.1", 0, [=, this](const net::ListenerRequest& r) {
      std::lock_guard<std::mutex> lock(mu);
      ids.push_back(r.Header("x-request-id"));
      return net::ListenerAnswer(status, body);
    });
    EXPECT_OK(bound);
    if (bound.ok()) listener = std::move(*bound);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener->port()); }
  std::vector<std::string> Ids() {
    std::lock_guard<std::mutex> lock(mu);
    return ids;
  }
  std::mutex mu;
  std::vector<std::string> ids;
  std::unique_ptr<net::HttpListener> listener;
};

constexpr char kEventAnswer[] =
    R"({"events":[{"sessionKey":"agent:main:a","sequence":1,"deduplicated":false}]})";

TEST(RemoteRequestIdTest, ALostAnswerIsRepeatedWithTheSameId) {
  Fake lost(502, R"({"error":{"code":"answer_lost","message":"the owner's answer was lost"}})");
  Fake owner(200, kEventAnswer);
  ASSERT_TRUE(lost.listener && owner.listener);
  CliOutput r =
      RunInProcess({"--server", lost.url() + "," + owner.url(), "record", "--session",
                    "agent:main:a", "--kind", "human_direct_message", "--actor-type", "human"});
  EXPECT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(lost.Ids().size(), 1u);
  ASSERT_EQ(owner.Ids().size(), 1u);
  EXPECT_EQ(lost.Ids()[0].size(), 32u) << lost.Ids()[0];
  EXPECT_EQ(owner.Ids()[0], lost.Ids()[0]) << "the retry kept the request's id";
}

TEST(RemoteRequestIdTest, EachRequestHasItsOwnIdAndReadsHaveNone) {
  Fake owner(200, kEventAnswer);
  ASSERT_TRUE(owner.listener);
  for (int i = 0; i < 2; ++i) {
    CliOutput r = RunInProcess({"--server", owner.url(), "record", "--session", "agent:main:a",
                                "--kind", "human_direct_message", "--actor-type", "human"});
    EXPECT_EQ(r.code, 0) << r.err;
  }
  RunInProcess({"--server", owner.url(), "stats"});
  auto ids = owner.Ids();
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_FALSE(ids[0].empty());
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_EQ(ids[2], "") << "a GET carries no request id";
}

TEST(RemoteRequestIdTest, IdsAre32HexDigits) {
  const std::string id = NewRequestId();
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_NE(NewRequestId(), id);
}

}  // namespace
}  // namespace statewatch::cli
