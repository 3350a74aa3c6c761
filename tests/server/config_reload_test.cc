// The tool policy as configuration: `statewatch serve --config FILE` (flags override the
// file; a bad file is refused at start with the key's path) and SIGHUP, which applies a new
// policy to the next tool call on the same, still open connection.
#include "server/config_reload.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "child_process.h"
#include "http_helpers.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

constexpr char kSpawnRefusal[] =
    "Tool sessions_spawn is not allowed by tools.profile=messaging (add it to tools.alsoAllow "
    "to allow it).";

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// ---- in-process: Daemon::Reconfigure and the SIGHUP watcher ----------------------------------

TEST(ConfigReloadTest, SighupAppliesANewPolicyOnTheOpenConnection) {
  TestServer server;
  HttpClient http(server.port());
  PutSession(http, kMain, {{"kind", "main"}});
  EXPECT_EQ(Tool(http, "sessions_spawn", kMain, json::object{{"task", "t"}}).status, 200);

  std::promise<Status> applied;
  auto reload = server::ReloadSignal::Start([&] {
    server::ServerOptions next = server.options();
    next.messaging.tool_policy.profile = tools::ToolProfile::kMessaging;
    applied.set_value(server.daemon().Reconfigure(next));
  });
  ASSERT_OK(reload);
  std::future<Status> done = applied.get_future();
  ASSERT_EQ(raise(SIGHUP), 0);
  ASSERT_EQ(done.wait_for(kWait), std::future_status::ready);
  ASSERT_OK(done.get());

  HttpResult refused = Tool(http, "sessions_spawn", kMain, json::object{{"task", "t"}});
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_EQ(refused.error_message(), kSpawnRefusal);
  EXPECT_EQ(Tool(http, "sessions_list", kMain, json::object{}).status, 200);
  EXPECT_EQ(http.connects(), 1);  // the same connection throughout
}

TEST(ConfigReloadTest, AnInvalidPolicyIsRefusedAndTheRunningOneStays) {
  TestServer server;
  server::ServerOptions next = server.options();
  next.messaging.max_ping_pong_turns = 21;
  EXPECT_EQ(server.daemon().Reconfigure(next).message(),
            "session.agentToAgent.maxPingPongTurns must be an integer from 0 to 20 (got 21)");
  EXPECT_EQ(server.daemon().messaging().options().max_ping_pong_turns, 5);
}

TEST(ConfigReloadTest, TheFileMapsOntoServerOptionsAndBack) {
  server::ServerOptions o;
  tools::DaemonConfig c = server::ConfigOf(o);
  ASSERT_OK(tools::ApplyConfigText(
      R"({"tools": {"sessions": {"visibility": "all"}, "profile": "minimal"},
                      "session": {"agentToAgent": {"maxPingPongTurns": 0}},
                      "upstream": {"intervalMs": 1000}})",
      &c));
  server::ServerOptions after = o;
  server::ApplyDaemonConfig(c, &after);
  EXPECT_EQ(after.tools.visibility, tools::Visibility::kAll);
  EXPECT_EQ(after.messaging.tool_policy.profile, tools::ToolProfile::kMinimal);
  EXPECT_EQ(after.messaging.max_ping_pong_turns, 0);
  EXPECT_EQ(after.upstream.tick_interval_ms, 1000);
  EXPECT_EQ(server::SettingsNeedingRestart(o, after),
            std::vector<std::string>{"upstream.intervalMs"});
}

// ---- the binary: serve --config, SIGHUP ------------------------------------------------------

class ServeConfigTest : public TempDirTest {
 protected:
  ServeConfigTest() : TempDirTest("statewatch-serve-config") {}
};

TEST_F(ServeConfigTest, FlagsOverrideTheFileAndSighupReloadsIt) {
  std::string config = root_ + "/statewatch.json", port_file = root_ + "/port",
              err = root_ + "/stderr";
  WriteFile(config, R"({"tools": {"profile": "full", "sessions": {"visibility": "self"}}})");
  Child child = Spawn(
      {"serve", "--data", root_ + "/data", "--listen", "127.0.0.1:0", "--port-file", port_file,
       "--manual-clock", std::to_string(kStartMs), "--config", config, "--visibility", "agent"},
      err);
  ASSERT_GT(child.pid, 0);
  FirstLine(child.stdout_fd);  // printed once it listens
  uint16_t port = static_cast<uint16_t>(std::stoi(Slurp(port_file)));
  HttpClient http(port);
  PutSession(http, kMain, {{"kind", "main"}});
  PutSession(http, "agent:main:other", {{"kind", "other"}});
  // --visibility agent overrides the file's self: the other session is visible.
  EXPECT_EQ(
      Tool(http, "session_status", kMain, json::object{{"sessionKey", "agent:main:other"}}).status,
      200);
  EXPECT_EQ(Tool(http, "sessions_spawn", kMain, json::object{{"task", "t"}}).status, 200);

  WriteFile(config, R"({"tools": {"profile": "messaging"}})");
  ASSERT_EQ(kill(child.pid, SIGHUP), 0);
  ASSERT_TRUE(Eventually([&] {
    return Tool(http, "sessions_spawn", kMain, json::object{{"task", "t"}}).status == 403;
  })) << Slurp(err);
  EXPECT_EQ(Tool(http, "sessions_spawn", kMain, json::object{{"task", "t"}}).error_message(),
            kSpawnRefusal);
  EXPECT_EQ(http.connects(), 1);  // no connection was dropped

  // A broken file is refused and the running policy stays.
  WriteFile(config, R"({"tools": {"profile": "mesaging"}})");
  ASSERT_EQ(kill(child.pid, SIGHUP), 0);
  ASSERT_TRUE(Eventually(
      [&] { return Slurp(err).find("event=config_reload_refused") != std::string::npos; }));
  EXPECT_NE(Slurp(err).find("tools.profile must be minimal, coding, messaging or full"),
            std::string::npos);
  EXPECT_EQ(Tool(http, "sessions_spawn", kMain, json::object{{"task", "t"}}).status, 403);

  ASSERT_EQ(kill(child.pid, SIGTERM), 0);
  EXPECT_EQ(Wait(child.pid), 0);
  close(child.stdout_fd);
}

TEST_F(ServeConfigTest, ABadFileIsRefusedAtStartWithTheKeyPath) {
  std::string config = root_ + "/bad.json", err = root_ + "/stderr";
  WriteFile(config, R"({"agents": {"list": [{"id": "ops", "subagents": {"maxSpawnDepth": 0}}]}})");
  Child child = Spawn(
      {"serve", "--data", root_ + "/data", "--listen", "127.0.0.1:0", "--config", config}, err);
  ASSERT_GT(child.pid, 0);
  EXPECT_EQ(Wait(child.pid), 2);
  close(child.stdout_fd);
  EXPECT_NE(
      Slurp(err).find(config + ": agents.list[0].subagents.maxSpawnDepth must be an integer from 1 "
                               "to 5 (got 0)"),
      std::string::npos)
      << Slurp(err);
  EXPECT_FALSE(std::filesystem::exists(root_ + "/data"));  // refused before opening anything
}

TEST_F(ServeConfigTest, ConfigCheckPrintsTheEffectivePolicy) {
  std::string config = root_ + "/ok.json", err = root_ + "/stderr";
  WriteFile(config, R"({"tools": {"profile": "messaging"}, "agents": {"list": [{"id": "ops"}]}})");
  Child child = Spawn({"config", "check", config}, err);
  ASSERT_GT(child.pid, 0);
  std::string out;
  char c;
  while (read(child.stdout_fd, &c, 1) == 1) out += c;
  EXPECT_EQ(Wait(child.pid), 0) << Slurp(err);
  close(child.stdout_fd);
  json::value doc = json::parse(out);
  EXPECT_EQ(doc.at("ok"), true);
  EXPECT_EQ(doc.at("effective").at("tools").at("profile"), "messaging");
  EXPECT_EQ(doc.at("effective").at("resolved").at("agents").at("ops").at("profile"), "messaging");
}

}  // namespace
}  // namespace statewatch::testing
