// `statewatch --server URL <verb>`: every verb that has a remote form prints, through a real
// `statewatch serve`, exactly what it prints on a local database given the same history —
// same stdout bytes, same exit code, same stderr — and the local-only verbs refuse
// --server with a usage error.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli.h"
#include "cli_fixture.h"
#include "net/http_listener.h"
#include "status_matchers.h"

extern char** environ;

namespace statewatch::cli {
namespace {
namespace fs = std::filesystem;
namespace json = boost::json;

constexpr int64_t kNow = 1764460800000;  // 2025-11-30T00:00:00Z: both clocks start here
constexpr char kParent[] = "agent:main:main";
constexpr char kChild[] = "agent:main:subagent:8f1c";

// The daemon: the real binary on an ephemeral loopback port with the manual clock.
class Daemon {
 public:
  explicit Daemon(const std::string& data) {
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::vector<std::string> args = {STATEWATCH_BIN, "--data",       data,
                                     "--durability", "buffered",     "serve",
                                     "--listen",     "127.0.0.1:0",  "--manual-clock",
                                     std::to_string(kNow), "--upstream-root",
                                     fs::path(data).parent_path().string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, STATEWATCH_BIN, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    // The first stdout line is {"listening": ..., "port": N}, printed once it listens.
    std::string line;
    char c;
    while (pid_ > 0 && read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    std::error_code ec;
    json::value v = json::parse(line, ec);
    if (!ec && v.is_object()) port_ = v.at("port").to_number<int>();
  }
  ~Daemon() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

class RemoteTest : public CliDirTest {
 protected:
  RemoteTest() : CliDirTest("remote") {}
  void SetUp() override {
    CliDirTest::SetUp();
    daemon_ = std::make_unique<Daemon>((dir_ / "served").string());
    ASSERT_GT(daemon_->port(), 0) << "the daemon did not start";
  }
  void TearDown() override {
    daemon_.reset();
    CliDirTest::TearDown();
  }

  CliOutput Exec(const std::vector<std::string>& args, const std::string& input) {
    return RunInProcess(args, input);
  }
  CliOutput Local(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--data", (dir_ / "local").string(), "--create", "--durability", "buffered",
                               "--now", std::to_string(kNow)});
    return Exec(args, input);
  }
  CliOutput Remote(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--server", daemon_->url()});
    return Exec(args, input);
  }
  // Runs `args` both ways and expects the same bytes and exit code.
  CliOutput Same(const std::vector<std::string>& args, const std::string& input = "") {
    CliOutput local = Local(args, input);
    CliOutput remote = Remote(args, input);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(local.code, remote.code) << shown << "\nlocal: " << local.err << "\nremote: " << remote.err;
    EXPECT_EQ(local.out, remote.out) << shown;
    EXPECT_EQ(local.err, remote.err) << shown;
    return remote;
  }

  std::unique_ptr<Daemon> daemon_;
};

TEST_F(RemoteTest, EveryVerbPrintsWhatItPrintsLocally) {
  EXPECT_EQ(Same({"record", "--session", kChild, "--kind", "child_spawned", "--actor-type",
                  "agent", "--actor-id", kParent, "--run-id", "r1", "--dedupe",
                  "child-spawned:r1", "--watcher", kParent})
                .code,
            0);
  Same({"record", "--session", kChild, "--kind", "child_spawned", "--actor-type", "agent",
        "--dedupe", "child-spawned:r1"});  // deduplicated
  Same({"record", "--batch", "-"},
       "{\"sessionKey\":\"agent:main:subagent:8f1c\",\"kind\":\"human_direct_message\","
       "\"actorType\":\"human\",\"summary\":\"human message via telegram\","
       "\"payload\":{\"channel\":\"telegram\"}}\n"
       "{\"sessionKey\":\"global\",\"agentId\":\"ops\",\"kind\":\"created\",\"actorType\":\"system\"}\n");
  Same({"record", "--session", kChild, "--kind", "agent_message", "--actor-type", "human"});
  Same({"status", "--session", kChild});
  Same({"status", "--session", kChild, "--changes-since", "0", "--limit", "1"});
  Same({"status", "--session", kChild, "--changes-since", "-1"});
  Same({"status", "--session", "global", "--agent", "ops", "--changes-since", "0"});
  Same({"versions", "--session", kChild, "--session", "global", "--agent", "ops"});
  Same({"notices", "--watcher", kParent});
  Same({"cursor", "--watcher", kParent, "--target", kChild});
  Same({"cursor", "--watcher", "agent:ops:main", "--target", kChild});
  Same({"drain", "--watcher", kParent});
  Same({"watch", "--watcher", "agent:ops:main", "--target", kChild});
  Same({"watch", "--watcher", "agent:ops:main", "--target", "agent:bad"});
  Same({"watch", "--watcher", "agent:ops:main", "--target", kChild, "--target", kParent});
  Same({"watch", "--watcher", "agent:ops:two", "--target", kChild, "--target", "agent:bad"});
  Same({"unwatch", "--watcher", "agent:ops:main", "--target", kParent});
  Same({"unwatch", "--watcher", "agent:ops:main", "--target", kChild, "--target", "agent:bad"});
  Same({"sweep"});
  Same({"prune"});
  // verify and rebuild: the same report but for recordsReplayed — the daemon's log also
  // holds the answer record of each request's X-Request-Id (docs/request-ids.md).
  for (const char* verb : {"verify", "rebuild"}) {
    CliOutput local = Local({verb}), remote = Remote({verb});
    EXPECT_EQ(local.code, remote.code) << remote.err;
    json::value l = json::parse(local.out), r = json::parse(remote.out);
    l.as_object().erase("recordsReplayed");
    r.as_object().erase("recordsReplayed");
    EXPECT_EQ(l, r) << verb;
  }
  Same({"export"});
  std::string source = (dir_ / "upstream.jsonl").string();
  std::ofstream(source) << "{\"type\":\"user\"}\n";
  Same({"upstream", "add", "--session", kChild, "--catalog", "c", "--host", "h", "--thread",
        "t", "--path", source, "--upstream-root", dir_.string()});
  Same({"upstream", "list"});
  Same({"upstream", "remove", "--session", kChild});
  Same({"upstream", "remove", "--session", kChild});
  Same({"reset-watcher", "--watcher", kParent});
  Same({"delete-session", "--session", kChild});
  Same({"status", "--session", kChild});

  // stats: the same durable counts; bytes on disk differ between two databases, and the
  // since-open counters (eventsRecorded, walBytes...) between a daemon and a one-shot command.
  json::value local = json::parse(Local({"stats"}).out), remote = json::parse(Remote({"stats"}).out);
  for (const char* field : {"rows", "sessions", "cursors", "pendingNotices", "lastSequence"}) {
    EXPECT_EQ(local.at(field), remote.at(field)) << field;
  }

  // backup: each side names its own directory.
  CliOutput backup = Remote({"backup", "--to", (dir_ / "remote-backup").string()});
  EXPECT_EQ(backup.code, 0) << backup.err;
  EXPECT_TRUE(fs::exists(dir_ / "remote-backup" / "CURRENT"));
  EXPECT_EQ(Remote({"backup", "--to", (dir_ / "remote-backup").string()}).code, 1);
}

TEST_F(RemoteTest, LocalOnlyVerbsRefuseServer) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"serve"}, {"restore", "--from", "x"}, {"openapi"}, {"man"}}) {
    CliOutput r = Remote(args);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_NE(r.err.find("does not take --server"), std::string::npos) << r.err;
  }
}

// Regression: a daemon that could not start printed its error twice (a log line and the
// runtime error). It is printed once, as "statewatch: ...", with exit 1.
TEST_F(RemoteTest, AServeStartFailureIsPrintedOnce) {
  CliOutput r =
      Exec({"--data", (dir_ / "served").string(), "serve", "--listen", "127.0.0.1:0"}, "");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("statewatch: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(RemoteTest, UnreachableDaemonIsARuntimeError) {
  CliOutput r = Exec({"--server", "http://127.0.0.1:1", "stats"}, "");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("statewatch: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("127.0.0.1:1"), std::string::npos) << r.err;
  EXPECT_EQ(Exec({"--server", "ftp://x", "stats"}, "").code, 2);
}

// --server with several URLs (a cluster's nodes): a request that did not land goes to the
// next URL; so is a lost answer, under the request's X-Request-Id.
TEST_F(RemoteTest, AServerListFailsOverWhereNothingLanded) {
  int standby_hits = 0;
  auto standby = net::HttpListener::Bind("127.0.0.1", 0, [&](const net::ListenerRequest&) {
    ++standby_hits;
    return net::ListenerAnswer(503, R"({"error":{"code":"standby","message":"a standby"}})");
  });
  ASSERT_OK(standby);
  auto lost = net::HttpListener::Bind("127.0.0.1", 0, [](const net::ListenerRequest&) {
    return net::ListenerAnswer(502, R"({"error":{"code":"answer_lost","message":"lost"}})");
  });
  ASSERT_OK(lost);
  const std::string standby_url = "http://127.0.0.1:" + std::to_string((*standby)->port());
  const std::string lost_url = "http://127.0.0.1:" + std::to_string((*lost)->port());

  CliOutput direct = Remote({"stats"});
  CliOutput listed =
      Exec({"--server", "http://127.0.0.1:1," + standby_url + "," + daemon_->url(), "stats"}, "");
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_EQ(listed.out, direct.out);
  EXPECT_EQ(standby_hits, 1);

  // A lost answer: the request goes again under its X-Request-Id, with or without a dedupe
  // key (tests/cli/remote_request_id_test.cc checks the id is the same).
  const std::string session = "agent:fo:main";
  CliOutput unkeyed = Exec({"--server", lost_url + "," + daemon_->url(), "record", "--session",
                            session, "--kind", "human_direct_message", "--actor-type", "human"},
                           "");
  EXPECT_EQ(unkeyed.code, 0) << unkeyed.err;
  CliOutput keyed = Exec({"--server", lost_url + "," + daemon_->url(), "record", "--session",
                          session, "--kind", "human_direct_message", "--actor-type", "human",
                          "--dedupe", "k1"},
                         "");
  EXPECT_EQ(keyed.code, 0) << keyed.err;
  EXPECT_EQ(Exec({"--server", "http://127.0.0.1:1,ftp://x", "stats"}, "").code, 2);
}

// `statewatch takeover` talks to a standby daemon (tests/server/cluster_standby_test.cc and
// scripts/cluster-smoke.sh run the real one); here only what a caller gets wrong.
TEST_F(RemoteTest, TakeoverOnADaemonThatIsNoStandbyIsARuntimeError) {
  CliOutput single = Exec({"takeover", "--url", daemon_->url()}, "");
  EXPECT_EQ(single.code, 1);
  EXPECT_NE(single.err.find("takeover of partition 0 at " + daemon_->url() + " refused (HTTP 404)"),
            std::string::npos)
      << single.err;
  CliOutput unreachable = Exec({"takeover", "--url", "http://127.0.0.1:1"}, "");
  EXPECT_EQ(unreachable.code, 1);
  EXPECT_NE(unreachable.err.find("127.0.0.1:1"), std::string::npos) << unreachable.err;
  EXPECT_EQ(Exec({"takeover", "--partition", "-1", "--url", daemon_->url()}, "").code, 2);
  EXPECT_EQ(Exec({"takeover", "--url", "ftp://x"}, "").code, 2);  // as --server ftp://x
}

}  // namespace
}  // namespace statewatch::cli
