// NatsTestCluster: nats-server processes this test started itself — on free loopback ports,
// with JetStream, file storage under a fresh temporary directory, clustered when there are
// several — and stops (and deletes) when it goes away. No test depends on a server it did
// not start. Every wait is bounded.
//
// The binary: $NATS_SERVER, else nats-server on PATH, else /usr/sbin/nats-server (Debian's
// package installs it there, outside a normal user's PATH).
//
// Not thread-safe.
#ifndef STATEWATCH_TESTS_LOG_JETSTREAM_NATS_TEST_CLUSTER_H_
#define STATEWATCH_TESTS_LOG_JETSTREAM_NATS_TEST_CLUSTER_H_

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::log::testing {

struct NatsTestClusterOptions {
  int servers = 3;
  // Where the servers keep their JetStream files (a directory per server is made inside).
  // Empty: a new temporary directory, deleted afterwards.
  std::string store_root;
  // Bound on start-up: every server listening and a JetStream meta leader elected.
  int64_t ready_timeout_ms = 30'000;
};

class NatsTestCluster {
 public:
  struct Server {
    std::string name;  // "sw-n1", ...: what JetStream reports as a stream leader
    int client_port = 0;
    int cluster_port = 0;
    std::string config_path;
    std::string log_path;
    pid_t pid = -1;  // -1 while stopped
  };

  static Result<std::unique_ptr<NatsTestCluster>> Start(const NatsTestClusterOptions& options);
  ~NatsTestCluster();

  // "nats://127.0.0.1:<port>,..." of every server (running or not).
  std::string Urls() const;
  const std::vector<Server>& servers() const { return servers_; }

  // Sends `signal` to the named server; SIGKILL also reaps it (it is then stopped).
  Status Signal(const std::string& name, int signal);
  // Starts a stopped server again on its ports and store.
  Status Restart(const std::string& name);
  // Waits (bounded) until JetStream answers through a running server — which needs a meta
  // leader — and a stream replicated on every server can be created (and deletes it).
  // REQUIRES: every server running.
  Status WaitForJetStream(int64_t timeout_ms);
  // The last lines of every server's log, for failure messages.
  std::string LogTails() const;

 private:
  NatsTestCluster() = default;
  Status WriteConfigs();
  Status Launch(Server& server);
  void StopAll();

  NatsTestClusterOptions options_;
  std::string root_;
  bool own_root_ = false;
  std::string binary_;
  std::vector<Server> servers_;
};

}  // namespace statewatch::log::testing

#endif  // STATEWATCH_TESTS_LOG_JETSTREAM_NATS_TEST_CLUSTER_H_
