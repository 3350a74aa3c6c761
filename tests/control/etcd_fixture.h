// EtcdFixture: a real etcd for a test suite (/usr/bin/etcd, one member on free loopback
// ports, started once per suite, killed after it) and a client of it in each test. Tests
// skip with a message when etcd is not installed.
#ifndef STATEWATCH_TESTS_CONTROL_ETCD_FIXTURE_H_
#define STATEWATCH_TESTS_CONTROL_ETCD_FIXTURE_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "control/etcd_client.h"
#include "net/http_client.h"
#include "status_matchers.h"

extern char** environ;

namespace statewatch::control {
namespace fs = std::filesystem;

inline constexpr char kEtcd[] = "/usr/bin/etcd";

// Ports the kernel handed out as free a moment ago (all held open together, so distinct);
// nothing listens on them once this returns.
inline std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ports.push_back(0);
    } else {
      ports.push_back(ntohs(addr.sin_port));
    }
    fds.push_back(fd);
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  return ports;
}

inline std::string Url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

class EtcdFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(kEtcd)) return;
    std::string tmpl = (fs::temp_directory_path() / "sw_etcd_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      start_error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    std::vector<int> ports = FreePorts(2);
    url_ = Url(ports[0]);
    std::string peer = Url(ports[1]);
    std::vector<std::string> args = {kEtcd,
                                     "--name", "default",
                                     "--data-dir", dir_ + "/data",
                                     "--listen-client-urls", url_,
                                     "--advertise-client-urls", url_,
                                     "--listen-peer-urls", peer,
                                     "--initial-advertise-peer-urls", peer,
                                     "--initial-cluster", "default=" + peer};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    std::string log = dir_ + "/etcd.log";
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    if (posix_spawn(&pid_, kEtcd, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    if (pid_ <= 0) {
      start_error_ = "posix_spawn " + std::string(kEtcd) + " failed";
      return;
    }
    // Up once /health answers 200; bounded at 10 s, polled every 50 ms.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      int wstatus = 0;
      if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
        pid_ = -1;
        start_error_ = "etcd exited at start: " + Log();
        return;
      }
      auto health = net::HttpRequest(url_, "GET", "/health", "", "", 500);
      if (health.ok() && health->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    start_error_ = "etcd did not answer /health within 10 s: " + Log();
  }

  static void TearDownTestSuite() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  void SetUp() override {
    if (!fs::exists(kEtcd)) GTEST_SKIP() << kEtcd << " is not installed (apt-get install etcd-server)";
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    auto client = EtcdClient::Make(EtcdOptions{{url_}, 2000});
    ASSERT_OK(client);
    client_ = std::move(*client);
  }

  static std::string Log() {
    std::ifstream in(dir_ + "/etcd.log");
    std::stringstream s;
    s << in.rdbuf();
    std::string text = s.str();
    return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  }

  static inline pid_t pid_ = -1;
  static inline std::string dir_;
  static inline std::string url_;
  static inline std::string start_error_;
  std::unique_ptr<EtcdClient> client_;
};

}  // namespace statewatch::control

#endif  // STATEWATCH_TESTS_CONTROL_ETCD_FIXTURE_H_
