#include "nats_test_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "log/jetstream/nats_connection.h"

namespace statewatch::log::testing {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

std::string FindBinary() {
  if (const char* env = std::getenv("NATS_SERVER"); env != nullptr && *env != '\0') return env;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      fs::path candidate = fs::path(dir) / "nats-server";
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

// Ports the kernel hands out for port 0, held open together so that they differ, then
// released for the servers to bind. Another process could take one in between; Start()
// retries with fresh ports when a server fails to come up.
Result<std::vector<int>> FreePorts(int count) {
  std::vector<int> fds, ports;
  Status error;
  for (int i = 0; i < count && error.ok(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      error = Status::IOError("no free loopback port: " + std::string(strerror(errno)));
    } else {
      ports.push_back(ntohs(addr.sin_port));
    }
    if (fd >= 0) fds.push_back(fd);
  }
  for (int fd : fds) close(fd);
  if (!error.ok()) return error;
  return ports;
}

bool Listening(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// Account info answers once a meta leader exists; a replicated stream can be placed only
// once every server has reported to it. Create and delete one to know.
Status ProbeStreamPlacement(NatsConnection& conn, int replicas) {
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = "SW_TEST_PROBE";
  const char* subjects[] = {"sw.test.probe"};
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Replicas = replicas;
  jsStreamInfo* info = nullptr;
  jsErrCode je = jsErrCode(0);
  natsStatus s = js_AddStream(&info, conn.jetstream(), &cfg, nullptr, &je);
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (s != NATS_OK)
    return NatsStatus("probe stream with " + std::to_string(replicas) + " replicas", s, je);
  s = js_DeleteStream(conn.jetstream(), "SW_TEST_PROBE", nullptr, &je);
  if (s != NATS_OK) return NatsStatus("delete the probe stream", s, je);
  return Status::OK();
}

bool Exited(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

std::string NewRoot() {
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() /
                 ("statewatch-nats-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(dir);
  return dir;
}

}  // namespace

Result<std::unique_ptr<NatsTestCluster>> NatsTestCluster::Start(
    const NatsTestClusterOptions& options) {
  std::string binary = FindBinary();
  if (binary.empty()) {
    return Status::NotFound(
        "nats-server not found ($NATS_SERVER, PATH, /usr/sbin): run scripts/install-deps.sh");
  }
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::unique_ptr<NatsTestCluster> cluster(new NatsTestCluster());
    cluster->options_ = options;
    cluster->binary_ = binary;
    cluster->own_root_ = options.store_root.empty();
    cluster->root_ = cluster->own_root_ ? NewRoot() : options.store_root;
    Result<std::vector<int>> ports = FreePorts(2 * options.servers);
    if (!ports.ok()) return ports.status();
    for (int i = 0; i < options.servers; ++i) {
      Server s;
      s.name = "sw-n" + std::to_string(i + 1);
      s.client_port = (*ports)[2 * i];
      s.cluster_port = (*ports)[2 * i + 1];
      s.config_path = (fs::path(cluster->root_) / (s.name + ".conf")).string();
      s.log_path = (fs::path(cluster->root_) / (s.name + ".log")).string();
      cluster->servers_.push_back(s);
    }
    last = cluster->WriteConfigs();
    for (Server& s : cluster->servers_) {
      if (last.ok()) last = cluster->Launch(s);
    }
    if (last.ok()) last = cluster->WaitForJetStream(options.ready_timeout_ms);
    if (last.ok()) return cluster;
    last = Status::IOError(last.message() + "\n" + cluster->LogTails());
  }
  return last;
}

Status NatsTestCluster::WriteConfigs() {
  for (const Server& s : servers_) {
    std::ofstream out(s.config_path);
    out << "server_name: \"" << s.name << "\"\n"
        << "listen: \"127.0.0.1:" << s.client_port << "\"\n"
        << "jetstream {\n  store_dir: \"" << (fs::path(root_) / s.name).string() << "\"\n"
        << "  max_memory_store: 256MB\n  max_file_store: 8GB\n}\n";
    if (servers_.size() > 1) {
      out << "cluster {\n  name: \"sw-test\"\n  listen: \"127.0.0.1:" << s.cluster_port
          << "\"\n  routes: [";
      for (size_t i = 0; i < servers_.size(); ++i) {
        out << (i ? ", " : "") << "\"nats-route://127.0.0.1:" << servers_[i].cluster_port << "\"";
      }
      out << "]\n}\n";
    }
    if (!out) return Status::IOError("cannot write " + s.config_path);
  }
  return Status::OK();
}

Status NatsTestCluster::Launch(Server& server) {
  const std::string log_path = server.log_path;
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return Status::IOError("fork: " + std::string(strerror(errno)));
  if (pid == 0) {
    // The server dies with the test, even when the test crashes.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl(binary_.c_str(), "nats-server", "-c", server.config_path.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  server.pid = pid;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.ready_timeout_ms);
  while (!Listening(server.client_port)) {
    if (Exited(pid)) {
      server.pid = -1;
      return Status::IOError("nats-server " + server.name + " exited at start (port " +
                             std::to_string(server.client_port) + " taken?)");
    }
    if (Clock::now() > deadline) return Status::IOError(server.name + " never listened");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::OK();
}

Status NatsTestCluster::WaitForJetStream(int64_t timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  Status last = Status::IOError("not tried");
  while (Clock::now() < deadline) {
    NatsConnectionOptions o;
    o.servers = Urls();
    o.connect_timeout_ms = 500;
    o.request_timeout_ms = 1000;
    o.max_reconnect = 0;
    Result<std::shared_ptr<NatsConnection>> conn = NatsConnection::Connect(o);
    if (conn.ok()) {
      jsAccountInfo* info = nullptr;
      jsErrCode je = jsErrCode(0);
      natsStatus s = js_GetAccountInfo(&info, (*conn)->jetstream(), nullptr, &je);
      if (info != nullptr) jsAccountInfo_Destroy(info);
      last = NatsStatus("JetStream account info", s, je);
      if (s == NATS_OK) {
        last = ProbeStreamPlacement(**conn, static_cast<int>(servers_.size()));
        if (last.ok()) return last;
      }
    } else {
      last = conn.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::IOError("JetStream not ready after " + std::to_string(timeout_ms) +
                         " ms: " + last.message());
}

std::string NatsTestCluster::Urls() const {
  std::string urls;
  for (const Server& s : servers_) {
    urls += (urls.empty() ? "" : ",") + std::string("nats://127.0.0.1:") +
            std::to_string(s.client_port);
  }
  return urls;
}

Status NatsTestCluster::Signal(const std::string& name, int signal) {
  for (Server& s : servers_) {
    if (s.name != name) continue;
    if (s.pid < 0) return Status::FailedPrecondition(name + " is not running");
    if (kill(s.pid, signal) != 0) return Status::IOError("kill " + name + ": " + strerror(errno));
    if (signal == SIGKILL) {
      int status = 0;
      waitpid(s.pid, &status, 0);
      s.pid = -1;
    }
    return Status::OK();
  }
  return Status::NotFound("no server named " + name);
}

Status NatsTestCluster::Restart(const std::string& name) {
  for (Server& s : servers_) {
    if (s.name != name) continue;
    if (s.pid >= 0) return Status::FailedPrecondition(name + " is running");
    return Launch(s);
  }
  return Status::NotFound("no server named " + name);
}

std::string NatsTestCluster::LogTails() const {
  std::string out;
  for (const Server& s : servers_) {
    std::ifstream in(s.log_path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    out += "--- " + s.name + " (" + s.log_path + "), last lines:\n";
    for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i) {
      out += lines[i] + "\n";
    }
  }
  return out;
}

void NatsTestCluster::StopAll() {
  for (Server& s : servers_) {
    if (s.pid > 0) kill(s.pid, SIGTERM);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (Server& s : servers_) {
    if (s.pid <= 0) continue;
    while (!Exited(s.pid)) {
      if (Clock::now() > deadline) {
        kill(s.pid, SIGKILL);
        waitpid(s.pid, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    s.pid = -1;
  }
}

NatsTestCluster::~NatsTestCluster() {
  StopAll();
  if (own_root_) {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
}

}  // namespace statewatch::log::testing
