// The real `statewatch serve` binary: it reports its ephemeral port, serves, shuts down
// gracefully on SIGTERM (exit 0, database closed so that another process can open it), and
// refuses unsafe listen options before touching the network.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "child_process.h"
#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

class ServeBinaryTest : public TempDirTest {
 protected:
  ServeBinaryTest() : TempDirTest("statewatch-serve-bin") {}
  // Runs the binary with `args`: a usage error (exit 2) whose stderr holds `message`.
  void ExpectUsageError(const std::vector<std::string>& args, const std::string& message) {
    std::string err = root_ + "/stderr";
    Child child = Spawn(args, err);
    EXPECT_EQ(Wait(child.pid), 2) << Slurp(err);
    close(child.stdout_fd);
    EXPECT_NE(Slurp(err).find(message), std::string::npos) << Slurp(err);
  }
};

TEST_F(ServeBinaryTest, ServesOnAnEphemeralPortAndStopsGracefullyOnSigterm) {
  std::string data = root_ + "/data", port_file = root_ + "/port", err = root_ + "/stderr";
  Child child = Spawn({"serve", "--data", data, "--listen", "127.0.0.1:0", "--port-file", port_file,
                       "--manual-clock", std::to_string(kStartMs)},
                      err);
  ASSERT_GT(child.pid, 0);
  std::string line = FirstLine(child.stdout_fd);
  json::value listening = json::parse(line);
  uint16_t port = listening.at("port").to_number<uint16_t>();
  ASSERT_GT(port, 0);
  EXPECT_EQ(std::stoi(Slurp(port_file)), port);

  {
    HttpClient http(port);
    EXPECT_EQ(http.Get("/healthz").status, 200);
    auto seqs = Record(http, Event("agent:main:subagent:x", "child_spawned", "agent",
                                   {{"actorId", "agent:main:main"},
                                    {"watchers", json::array{"agent:main:main"}}}));
    Record(http, HumanMessage("agent:main:subagent:x"));
    EXPECT_EQ(Notices(http, "agent:main:main").size(), 1u);
    EXPECT_EQ(http.Get("/v1/clock").json().at("now"), json::value(kStartMs));
  }

  ASSERT_EQ(kill(child.pid, SIGTERM), 0);
  EXPECT_EQ(Wait(child.pid), 0) << Slurp(err);
  close(child.stdout_fd);
  std::string log = Slurp(err);
  EXPECT_NE(log.find("level=info event=listening"), std::string::npos) << log;
  EXPECT_NE(log.find("event=stopped"), std::string::npos) << log;

  // The database was closed cleanly: another process opens it and sees the notice.
  Child stats = Spawn({"--data", data, "notices", "--watcher", "agent:main:main"}, err);
  std::string notices = FirstLine(stats.stdout_fd);
  EXPECT_EQ(Wait(stats.pid), 0) << Slurp(err);
  close(stats.stdout_fd);
  EXPECT_NE(notices.find("changesSince 1."), std::string::npos) << notices;
}

TEST_F(ServeBinaryTest, RefusesUnsafeListenOptions) {
  ExpectUsageError({"serve", "--data", root_ + "/d1", "--listen", "0.0.0.0:0"}, "needs --token");
  ExpectUsageError(
      {"serve", "--data", root_ + "/d2", "--listen", "0.0.0.0:0", "--token", "t", "--manual-clock"},
      "--manual-clock");
  ExpectUsageError({"serve", "--data", root_ + "/d3", "--visibility", "everyone"},
                   "--visibility must be");
  // --now is a one-shot command's clock; a daemon refuses it (before binding anything).
  ExpectUsageError({"--now", std::to_string(kStartMs), "serve", "--data", root_ + "/d4"},
                   "--manual-clock START_MS");
  ExpectUsageError({"serve", "--data", root_ + "/d5", "--max-ping-pong-turns", "21"},
                   "--max-ping-pong-turns must be from 0 to 20 (got 21)");
  ExpectUsageError({"serve", "--data", root_ + "/d6", "--upstream-interval-ms", "0"},
                   "--upstream-interval-ms must be positive");
}

// A port in use is refused before the database is opened: no data directory is left behind.
TEST_F(ServeBinaryTest, APortInUseLeavesNoDataDirectory) {
  int taken = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(taken, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(taken, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(taken, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(taken, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  const std::string data = root_ + "/fresh/data";
  std::string err = root_ + "/stderr";
  Child child = Spawn({"serve", "--data", data, "--listen", "127.0.0.1:" + port}, err);
  EXPECT_EQ(Wait(child.pid), 1) << Slurp(err);
  close(child.stdout_fd);
  close(taken);
  EXPECT_NE(Slurp(err).find("cannot bind 127.0.0.1:" + port), std::string::npos) << Slurp(err);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/fresh")) << "a data directory was created";
}

// --token-file keeps the token out of the process's command line (ps shows --token T).
TEST_F(ServeBinaryTest, TokenFileKeepsTheTokenOffTheCommandLine) {
  std::string data = root_ + "/data", token_file = root_ + "/token", err = root_ + "/stderr";
  std::ofstream(token_file) << "file-token-123\n";
  Child child = Spawn({"serve", "--data", data, "--listen", "127.0.0.1:0", "--token-file",
                       token_file, "--manual-clock", std::to_string(kStartMs)},
                      err);
  ASSERT_GT(child.pid, 0);
  uint16_t port = json::parse(FirstLine(child.stdout_fd)).at("port").to_number<uint16_t>();
  std::string cmdline = Slurp("/proc/" + std::to_string(child.pid) + "/cmdline");
  EXPECT_EQ(cmdline.find("file-token-123"), std::string::npos);
  {
    HttpClient http(port);
    EXPECT_EQ(http.Get("/v1/notices?watcher=agent:main:main").status, 401);
    EXPECT_EQ(http.Get("/v1/notices?watcher=agent:main:main",
                       {{"Authorization", "bearer file-token-123"}})
                  .status,
              200);
  }
  ASSERT_EQ(kill(child.pid, SIGTERM), 0);
  EXPECT_EQ(Wait(child.pid), 0) << Slurp(err);
  close(child.stdout_fd);
  EXPECT_EQ(Slurp(err).find("file-token-123"), std::string::npos);
}

TEST_F(ServeBinaryTest, RefusesMalformedAccessOptions) {
  std::ofstream(root_ + "/empty-token") << "\n";
  struct Case {
    std::string option, value, message;
  };
  const Case cases[] = {
      {"--token-file", root_ + "/empty-token",
       "--token-file " + root_ + "/empty-token holds no token on its first line"},
      {"--token-file", root_ + "/missing", "--token-file: cannot read \"" + root_ + "/missing\""},
      {"--allow-origin", "localhost:3000",
       "--allow-origin must be an origin such as http://localhost:3000"},
      {"--allow-host", "http://x/", "--allow-host must be a host name"},
      {"--upstream-root", root_ + "/nowhere",
       "--upstream-root must be an existing directory (got \"" + root_ + "/nowhere\")"},
      {"--max-connections", "0", "--max-connections must be positive (got 0)"},
      {"--max-streams", "0", "--max-streams must be positive (got 0)"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.option + " " + c.value);
    std::string data = root_ + "/d" + std::to_string(++n);  // a fresh directory each
    ExpectUsageError({"serve", "--data", data, c.option, c.value}, c.message);
  }
}

}  // namespace
}  // namespace statewatch::testing
