// TestServer: the real daemon (server::Daemon — engine, Api, Beast transport) running
// in-process on an ephemeral loopback port, on its own thread, over a fresh data directory.
// Stop() shuts it down gracefully (as SIGTERM does) and Start() reopens the same directory,
// so restart tests see exactly what a restarted `statewatch serve` sees.
//
// Not thread-safe: driven by one test thread.
#ifndef STATEWATCH_TESTS_SERVER_TEST_SERVER_H_
#define STATEWATCH_TESTS_SERVER_TEST_SERVER_H_

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server/daemon.h"
#include "status_matchers.h"
#include "test_client.h"

namespace statewatch::testing {

// 2025-11-30T00:00:00Z: the manual clock's start in these tests.
inline constexpr int64_t kStartMs = 1764460800000;
inline constexpr int64_t kDayMs = 24LL * 3600 * 1000;

inline std::string MakeTempDir(const char* prefix = "statewatch-server-test") {
  std::string pattern =
      (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  char* dir = mkdtemp(pattern.data());
  return dir ? std::string(dir) : std::string();
}

// A test with a fresh directory of its own, root_, removed with everything in it afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(const char* prefix) : prefix_(prefix) {}
  void SetUp() override { root_ = MakeTempDir(prefix_); }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  std::string root_;

 private:
  const char* prefix_;
};

// Loopback, port 0, the manual clock at kStartMs, two threads, short timeouts.
inline server::ServerOptions TestOptions() {
  server::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.manual_clock = true;
  o.manual_clock_start_ms = kStartMs;
  o.threads = 2;
  o.durability = Durability::kBuffered;
  o.shutdown_grace_ms = 3000;
  return o;
}

class TestServer {
 public:
  explicit TestServer(server::ServerOptions options = TestOptions())
      : options_(std::move(options)), root_(MakeTempDir()) {
    options_.data_dir = root_ + "/data";
    Start();
  }
  ~TestServer() {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  void Start() {
    auto daemon = server::Daemon::Open(options_);
    ASSERT_OK(daemon);
    daemon_ = std::move(daemon).value();
    thread_ = std::thread([d = daemon_.get()] { d->Run(); });
  }

  void Stop() {
    if (!daemon_) return;
    daemon_->Shutdown();
    thread_.join();
    daemon_.reset();  // closes the database
  }

  // Reopens with a later manual clock (the clock of a restarted daemon starts afresh).
  void Restart(int64_t clock_ms) {
    Stop();
    options_.manual_clock_start_ms = clock_ms;
    Start();
  }

  uint16_t port() const { return daemon_->port(); }
  server::Daemon& daemon() { return *daemon_; }
  server::ServerOptions& options() { return options_; }
  const std::string& root() const { return root_; }

 private:
  server::ServerOptions options_;
  std::string root_;
  std::unique_ptr<server::Daemon> daemon_;
  std::thread thread_;
};

// An Api (server/api.h) over an engine a test opened itself, without a daemon: TestOptions
// but on the engine's own clock, and the metrics it counts into. Destroy it before the engine.
struct EngineApi {
  explicit EngineApi(Engine* engine) : options(TestOptions()) {
    options.manual_clock = false;
    server::ApiServices services;
    services.engine = engine;
    services.metrics = &metrics;
    api = std::make_unique<server::Api>(services, options);
  }

  server::ServerOptions options;
  server::Metrics metrics;
  std::unique_ptr<server::Api> api;
};

// A test with one in-process daemon and an HTTP client on its port.
class ServerTest : public ::testing::Test {
 protected:
  // Starts a daemon with `o` on a fresh data directory (a new one in place of any earlier),
  // and a client on it.
  void StartServer(server::ServerOptions o = TestOptions()) {
    http_.reset();
    server_ = std::make_unique<TestServer>(std::move(o));
    http_ = std::make_unique<HttpClient>(server_->port());
  }
  // StartServer, then `parent` registered with `parent_fields` and `child` in its tree with
  // `child_fields` (the parent may read and watch the child): the end-to-end tests' family.
  void StartWithChild(const std::string& parent, boost::json::object parent_fields,
                      const std::string& child, boost::json::object child_fields = {}) {
    StartServer();
    child_fields["parentSessionKey"] = parent;
    const std::pair<const std::string*, const boost::json::object*> rows[] = {
        {&parent, &parent_fields}, {&child, &child_fields}};
    for (const auto& [key, fields] : rows) {
      HttpResult r = http_->Request("PUT", "/v1/sessions/" + *key, boost::json::serialize(*fields));
      ASSERT_EQ(r.status, 200) << *key << ": " << r.body;
    }
  }
  // Stops the daemon, reopens its directory with the manual clock at `clock_ms`, and puts a
  // fresh client on it: what a gateway sees across a restart.
  void RestartServer(int64_t clock_ms) {
    http_.reset();
    server_->Restart(clock_ms);
    http_ = std::make_unique<HttpClient>(server_->port());
  }

  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> http_;  // destroyed first, while its server still runs
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_TEST_SERVER_H_
