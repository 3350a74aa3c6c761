// The real `statewatch serve` binary: it reports its ephemeral port, serves, shuts down
// gracefully on SIGTERM (exit 0, database closed so that another process can open it), and
// refuses unsafe listen options before touching the network.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

extern char** environ;

namespace statewatch::testing {
namespace {

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;
};

// Starts the binary with stdout on a pipe and stderr into `err_file`.
Child Spawn(const std::vector<std::string>& args, const std::string& err_file) {
  int out[2];
  if (pipe(out) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all = {STATEWATCH_BIN};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child child;
  if (posix_spawn(&child.pid, STATEWATCH_BIN, &actions, nullptr, argv.data(), environ) != 0) {
    child.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  child.stdout_fd = out[0];
  return child;
}

// The first stdout line (blocking read: the daemon prints it once it listens).
std::string FirstLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

int Wait(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ServeBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = MakeTempDir("statewatch-serve-bin"); }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  std::string root_;
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
  std::string err = root_ + "/stderr";
  Child no_token = Spawn({"serve", "--data", root_ + "/d1", "--listen", "0.0.0.0:0"}, err);
  EXPECT_EQ(Wait(no_token.pid), 2);
  close(no_token.stdout_fd);
  EXPECT_NE(Slurp(err).find("needs --token"), std::string::npos) << Slurp(err);

  Child manual = Spawn(
      {"serve", "--data", root_ + "/d2", "--listen", "0.0.0.0:0", "--token", "t", "--manual-clock"},
      err);
  EXPECT_EQ(Wait(manual.pid), 2);
  close(manual.stdout_fd);
  EXPECT_NE(Slurp(err).find("--manual-clock"), std::string::npos) << Slurp(err);

  Child bad = Spawn({"serve", "--data", root_ + "/d3", "--visibility", "everyone"}, err);
  EXPECT_EQ(Wait(bad.pid), 2);
  close(bad.stdout_fd);
  EXPECT_NE(Slurp(err).find("--visibility must be"), std::string::npos) << Slurp(err);

  // --now is a one-shot command's clock; a daemon refuses it (before binding anything).
  Child now = Spawn({"--now", std::to_string(kStartMs), "serve", "--data", root_ + "/d4"}, err);
  EXPECT_EQ(Wait(now.pid), 2);
  close(now.stdout_fd);
  EXPECT_NE(Slurp(err).find("--manual-clock START_MS"), std::string::npos) << Slurp(err);

  Child turns = Spawn({"serve", "--data", root_ + "/d5", "--max-ping-pong-turns", "21"}, err);
  EXPECT_EQ(Wait(turns.pid), 2);
  close(turns.stdout_fd);
  EXPECT_NE(Slurp(err).find("--max-ping-pong-turns must be from 0 to 20 (got 21)"),
            std::string::npos)
      << Slurp(err);

  Child tick = Spawn({"serve", "--data", root_ + "/d6", "--upstream-interval-ms", "0"}, err);
  EXPECT_EQ(Wait(tick.pid), 2);
  close(tick.stdout_fd);
  EXPECT_NE(Slurp(err).find("--upstream-interval-ms must be positive"), std::string::npos)
      << Slurp(err);
}

}  // namespace
}  // namespace statewatch::testing
