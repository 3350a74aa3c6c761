// A program as a child process, for the tests that need one of its own: the real `statewatch`
// binary's exit codes, signals and file-descriptor limits, and the verbs that follow it while
// it runs (`watch`, `tail`). Two ways to hold one, over the one StartChild:
//   - Spawn / SpawnProgram, FirstLine, Wait: stdout on a pipe and stderr in a file, read with
//     blocking reads (a daemon prints its first line once it listens);
//   - PipedProcess: stdout and stderr both on pipes, read a line at a time, every read and the
//     wait for the exit bounded by `wait_ms`; a child still running at destruction is killed.
#ifndef STATEWATCH_TESTS_CHILD_PROCESS_H_
#define STATEWATCH_TESTS_CHILD_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "poll_until.h"

extern char** environ;

namespace statewatch::testing {

struct Child {
  pid_t pid = -1;      // -1 when it could not be started
  int stdout_fd = -1;  // the read end of its stdout
  int stderr_fd = -1;  // the read end of its stderr; -1 when stderr went into a file
};

// Starts `args[0]` with the rest as its arguments and stdout on a pipe; stderr into the file
// `*stderr_file` (created or truncated), or on a second pipe when `stderr_file` is null.
inline Child StartChild(const std::vector<std::string>& args, const std::string* stderr_file) {
  int out[2], err[2] = {-1, -1};
  if (args.empty() || pipe(out) != 0) return {};
  if (stderr_file == nullptr && pipe(err) != 0) {
    close(out[0]);
    close(out[1]);
    return {};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  if (stderr_file != nullptr) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file->c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  } else {
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, err[0]);
  }
  std::vector<std::string> all = args;
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child child;
  if (posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    child.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (err[1] >= 0) close(err[1]);
  child.stdout_fd = out[0];
  child.stderr_fd = err[0];
  return child;
}

// Starts `argv[0]` with the rest as its arguments, stdout on a pipe and stderr into
// `err_file`.
inline Child SpawnProgram(const std::vector<std::string>& args, const std::string& err_file) {
  return StartChild(args, &err_file);
}

#ifdef STATEWATCH_BIN
// The statewatch binary with `args`.
inline Child Spawn(const std::vector<std::string>& args, const std::string& err_file) {
  std::vector<std::string> all = {STATEWATCH_BIN};
  all.insert(all.end(), args.begin(), args.end());
  return SpawnProgram(all, err_file);
}
#endif

// The first stdout line (blocking read: the daemon prints it once it listens).
inline std::string FirstLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

inline int Wait(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Asks again until `pred` holds, at most 200 times 50 ms (10 s): for what a child process
// does on its own thread after a signal (a SIGHUP reload), so that one that never lands
// fails the test instead of hanging it.
template <typename Pred>
bool Eventually(Pred pred) {
  return PollUntil(pred, 200, std::chrono::milliseconds(50));
}

class PipedProcess {
 public:
  // Starts `program` with `args`; running() is false when it could not be started.
  PipedProcess(const std::string& program, const std::vector<std::string>& args, int wait_ms)
      : wait_ms_(wait_ms) {
    std::vector<std::string> all = {program};
    all.insert(all.end(), args.begin(), args.end());
    Child child = StartChild(all, /*stderr_file=*/nullptr);
    pid_ = child.pid;
    out_.fd = child.stdout_fd;
    err_.fd = child.stderr_fd;
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

#endif  // STATEWATCH_TESTS_CHILD_PROCESS_H_
