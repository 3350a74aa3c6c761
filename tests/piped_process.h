// A program as a child process with its stdout and stderr on pipes, read a line at a time:
// for the tests that follow the real `statewatch` binary (`watch`, `tail`) while it runs.
// Every read and the wait for the exit are bounded by `wait_ms`; a child still running at
// destruction is killed.
#ifndef STATEWATCH_TESTS_PIPED_PROCESS_H_
#define STATEWATCH_TESTS_PIPED_PROCESS_H_

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

extern char** environ;

namespace statewatch::testing {

class PipedProcess {
 public:
  // Starts `program` with `args`; running() is false when it could not be started.
  PipedProcess(const std::string& program, const std::vector<std::string>& args, int wait_ms)
      : wait_ms_(wait_ms) {
    int out[2], err[2];
    if (pipe(out) != 0) return;
    if (pipe(err) != 0) {
      close(out[0]);
      close(out[1]);
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    posix_spawn_file_actions_addclose(&actions, err[0]);
    std::vector<std::string> all = {program};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_.fd = out[0];
    err_.fd = err[0];
  }
  ~PipedProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_.fd >= 0) close(out_.fd);
    if (err_.fd >= 0) close(err_.fd);
  }
  PipedProcess(const PipedProcess&) = delete;
  PipedProcess& operator=(const PipedProcess&) = delete;

  // The next stdout (stderr) line, or "" after wait_ms or at EOF.
  std::string OutLine() { return ReadLine(&out_); }
  std::string ErrLine() { return ReadLine(&err_); }
  // Stderr lines until one contains `part` (returned); "" when none comes in time. The lines
  // passed over are kept in seen().
  std::string ErrLineWith(const std::string& part) {
    for (int i = 0; i < 100; ++i) {
      std::string line = ErrLine();
      if (line.empty() || line.find(part) != std::string::npos) return line;
      seen_ += line + "\n";
    }
    return "";
  }
  const std::string& seen() const { return seen_; }
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  bool running() const { return pid_ > 0; }
  // The exit code (128 + signal when killed), waiting at most wait_ms; -1 when still running.
  int Wait() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms_);
    while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      pollfd none{-1, 0, 0};
      poll(&none, 0, 10);  // waiting for the child, not for timing
    }
    return -1;
  }

 private:
  struct Stream {
    int fd = -1;
    std::string buffer;
  };
  std::string ReadLine(Stream* s) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms_);
    for (;;) {
      if (std::size_t nl = s->buffer.find('\n'); nl != std::string::npos) {
        std::string line = s->buffer.substr(0, nl);
        s->buffer.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0 || s->fd < 0) return "";
      pollfd p{s->fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[4096];
      ssize_t n = read(s->fd, buf, sizeof buf);
      if (n <= 0) return "";
      s->buffer.append(buf, static_cast<std::size_t>(n));
    }
  }

  int wait_ms_;
  pid_t pid_ = -1;
  Stream out_, err_;
  std::string seen_;
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_PIPED_PROCESS_H_
