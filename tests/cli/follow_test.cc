// `statewatch watch` (following a daemon's wakes, --drain, reconnection) and `statewatch
// tail`, each against the real binary and a real daemon: the follower is its own process, so
// that its exit codes and signal handling are the real ones. Every read waits at most
// kWaitMs for a line; nothing sleeps for timing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "cli_fixture.h"


namespace statewatch::cli {
namespace {
namespace json = boost::json;

constexpr int kWaitMs = 30000;  // the bound on any one wait for a line
constexpr char kWatcher[] = "agent:main:main";
constexpr char kTarget[] = "agent:main:subagent:f1";
// The notice a human's event on kTarget gives kWatcher, registered at the target's head 0
// (docs/semantics.md, "Catching up: `changesSince`"), byte for byte.
constexpr char kNoticeText[] =
    "Session \"agent:main:subagent:f1\" changed (other actor). Reconcile before acting: "
    "session_status sessionKey \"agent:main:subagent:f1\" changesSince 0.";

// The binary as a child with stdout and stderr on pipes, read a line at a time.
class Process : public testing::PipedProcess {
 public:
  explicit Process(const std::vector<std::string>& args)
      : PipedProcess(STATEWATCH_BIN, args, kWaitMs) {}
};

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// `statewatch serve` on `listen` (127.0.0.1:0 for any port), its port read from the line it
// prints once it listens.
class Daemon {
 public:
  Daemon(const std::string& data, const std::string& listen,
         const std::vector<std::string>& extra = {})
      : process_(With({"--data", data, "--durability", "buffered", "serve", "--listen", listen},
                      extra)) {
    std::error_code ec;
    json::value v = json::parse(process_.OutLine(), ec);
    if (!ec && v.is_object() && v.as_object().contains("port")) {
      port_ = v.at("port").to_number<int>();
    }
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int Stop() {
    process_.Signal(SIGTERM);
    return process_.Wait();
  }

 private:
  Process process_;
  int port_ = 0;
};

// A field's text: the string itself, any other value serialized.
std::string Str(const json::value& v) {
  return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
}

json::object Object(const std::string& line) {
  std::error_code ec;
  json::value v = json::parse(line, ec);
  EXPECT_FALSE(ec) << "not JSON: " << line;
  return !ec && v.is_object() ? v.as_object() : json::object();
}

class FollowTest : public CliDataTest {
 protected:
  FollowTest() : CliDataTest("follow", "served") {}
  void SetUp() override {
    CliDataTest::SetUp();
    daemon_ = std::make_unique<Daemon>(data_, "127.0.0.1:0");
    ASSERT_GT(daemon_->port(), 0) << "the daemon did not start";
  }
  CliOutput Remote(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", daemon_->url()});
    return RunInProcess(args);
  }
  void RecordHumanEvent(const std::string& summary) {
    CliOutput r = Remote({"record", "--session", kTarget, "--kind", "human_direct_message",
                          "--actor-type", "human", "--summary", summary});
    ASSERT_EQ(r.code, 0) << r.err;
  }

  std::unique_ptr<Daemon> daemon_;
};

TEST_F(FollowTest, WatchPrintsAWakeAndWithDrainTheDrainedNotice) {
  ASSERT_EQ(Remote({"watch", "--watcher", kWatcher, "--target", kTarget}).out,
            "{\"watched\":true}\n");
  Process watch({"--server", daemon_->url(), "watch", "--watcher", kWatcher, "--drain",
                 "--count", "1"});
  // The daemon subscribes a stream before it answers the upgrade, and the line comes after
  // the connection's first drain: from here on, the wake comes first, then its notice.
  ASSERT_NE(watch.ErrLineWith("following wakes of agent:main:main"), "");
  RecordHumanEvent("human message via telegram");

  json::object wake = Object(watch.OutLine());
  EXPECT_EQ(Str(wake["watcher"]), kWatcher);
  EXPECT_EQ(Str(wake["reason"]), std::string("session-state:") + kTarget);
  EXPECT_TRUE(wake.contains("at"));
  json::object notice = Object(watch.OutLine());
  EXPECT_EQ(Str(notice["targetSessionKey"]), kTarget);
  EXPECT_EQ(Str(notice["text"]), kNoticeText);
  EXPECT_EQ(watch.Wait(), 0);  // --count 1
  // Drained: nothing is pending any more.
  EXPECT_EQ(Remote({"notices", "--watcher", kWatcher}).out, "{\"notices\":[]}\n");
}

TEST_F(FollowTest, WatchWithoutAWatcherFollowsEveryWatcherAndStopsOnSigterm) {
  ASSERT_EQ(Remote({"watch", "--watcher", kWatcher, "--target", kTarget}).code, 0);
  Process watch({"--server", daemon_->url(), "watch"});
  ASSERT_NE(watch.ErrLineWith("following wakes of every watcher"), "");
  RecordHumanEvent("one");
  EXPECT_EQ(Str(Object(watch.OutLine())["watcher"]), kWatcher);
  watch.Signal(SIGTERM);
  EXPECT_EQ(watch.Wait(), 0);
}

// Wakes fired while the follower is disconnected are lost with the connection; the notice
// is not: after the daemon restarts, the follower reconnects and drains it once.
TEST_F(FollowTest, WatchReconnectsAfterTheDaemonRestartsAndDrainsOnce) {
  ASSERT_EQ(Remote({"watch", "--watcher", kWatcher, "--target", kTarget}).code, 0);
  const int port = daemon_->port();
  Process watch({"--server", daemon_->url(), "watch", "--watcher", kWatcher, "--drain"});
  ASSERT_NE(watch.ErrLineWith("following wakes"), "");
  ASSERT_EQ(daemon_->Stop(), 0);
  ASSERT_NE(watch.ErrLineWith("lost the daemon"), "");
  // While it is down, an event lands in the database directly.
  CliOutput local = RunInProcess({"--data", data_, "record", "--session", kTarget, "--kind",
                                  "human_direct_message", "--actor-type", "human"});
  ASSERT_EQ(local.code, 0) << local.err;
  daemon_ = std::make_unique<Daemon>(data_, "127.0.0.1:" + std::to_string(port));
  ASSERT_EQ(daemon_->port(), port) << "the port was taken meanwhile";
  ASSERT_NE(watch.ErrLineWith("following wakes"), "");
  json::object notice = Object(watch.OutLine());
  EXPECT_EQ(Str(notice["text"]), kNoticeText);
  watch.Signal(SIGINT);
  EXPECT_EQ(watch.Wait(), 0);
}

TEST_F(FollowTest, TailPrintsAnEventRecordedAfterItStarted) {
  RecordHumanEvent("before");
  Process tail({"--server", daemon_->url(), "tail", "--session", kTarget, "--interval-ms", "20",
                "--count", "1"});
  ASSERT_NE(tail.ErrLineWith("tailing 1 session"), "");
  RecordHumanEvent("after");
  json::object event = Object(tail.OutLine());
  EXPECT_EQ(Str(event["sessionKey"]), kTarget);
  EXPECT_EQ(Str(event["agentId"]), "main");
  EXPECT_EQ(Str(event["kind"]), "human_direct_message");
  EXPECT_EQ(Str(event["summary"]), "after");  // not "before": tail starts at the head
  EXPECT_EQ(tail.Wait(), 0);
}

TEST_F(FollowTest, TailFromChangesSinceZeroPrintsTheHistory) {
  RecordHumanEvent("first");
  Process tail({"--server", daemon_->url(), "tail", "--session", kTarget, "--changes-since", "0",
                "--count", "1"});
  EXPECT_EQ(Str(Object(tail.OutLine())["summary"]), "first");
  EXPECT_EQ(tail.Wait(), 0);
}

TEST_F(FollowTest, TheFirstConnectionMustSucceed) {
  Process watch({"--server", "http://127.0.0.1:1", "watch", "--watcher", kWatcher});
  EXPECT_EQ(watch.Wait(), 1);
  EXPECT_NE(watch.ErrLine().find("127.0.0.1:1"), std::string::npos);
}

// The token goes with the upgrade and with every drain, as --token-file does for every
// remote verb; without it the daemon's 401 ends the follower (no retry loop).
TEST_F(FollowTest, WatchSendsTheTokenFile) {
  const std::string token_file = (dir_ / "token").string();
  std::ofstream(token_file) << "follow-token-5e1f\n";
  Daemon guarded((dir_ / "guarded").string(), "127.0.0.1:0", {"--token-file", token_file});
  ASSERT_GT(guarded.port(), 0);
  Process refused({"--server", guarded.url(), "watch", "--watcher", kWatcher});
  EXPECT_EQ(refused.Wait(), 1);
  EXPECT_NE(refused.ErrLine().find("401"), std::string::npos);
  Process watch({"--server", guarded.url(), "--token-file", token_file, "watch", "--watcher",
                 kWatcher, "--drain"});
  EXPECT_NE(watch.ErrLineWith("following wakes of agent:main:main"), "");
  watch.Signal(SIGTERM);
  EXPECT_EQ(watch.Wait(), 0);
}

TEST_F(FollowTest, UsageErrors) {
  auto usage = [](const std::vector<std::string>& args, const std::string& part) {
    CliOutput r = RunInProcess(args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  };
  const std::string data = (dir_ / "local").string();
  usage({"--data", data, "watch", "--watcher", kWatcher}, "give --server URL");
  usage({"--data", data, "tail", "--session", kTarget}, "give --server URL");
  usage({"--server", daemon_->url(), "watch", "--drain"}, "'watch --drain' needs --watcher");
  usage({"--server", daemon_->url(), "watch", "--watcher", kWatcher, "--target", kTarget,
         "--drain"},
        "--drain is for following wakes");
  usage({"--server", daemon_->url(), "watch", "--target", kTarget}, "'watch' needs --watcher");
  usage({"--server", daemon_->url(), "watch", "--count", "0"}, "--count must be at least 1");
  usage({"--server", daemon_->url(), "tail", "--session", kTarget, "--interval-ms", "1"},
        "--interval-ms must be");
  EXPECT_FALSE(std::filesystem::exists(data));
  // An https:// --server is no usage error: it is followed over wss (tests/server/tls_test.cc),
  // and here nothing listens.
  CliOutput tls =
      RunInProcess({"--server", "https://127.0.0.1:1", "watch", "--watcher", kWatcher});
  EXPECT_EQ(tls.code, 1) << tls.err;
  EXPECT_NE(tls.err.find("cannot connect to 127.0.0.1:1"), std::string::npos) << tls.err;
}

}  // namespace
}  // namespace statewatch::cli
