// The real `statewatch` binary as a child process, for the tests that need a process of its
// own (exit codes, signals, file-descriptor limits): spawn with stdout on a pipe and stderr
// in a file, read the first stdout line, wait for the exit code.
#ifndef STATEWATCH_TESTS_SERVER_CHILD_PROCESS_H_
#define STATEWATCH_TESTS_SERVER_CHILD_PROCESS_H_

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace statewatch::testing {

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;
};

// Starts `argv[0]` with the rest as its arguments, stdout on a pipe and stderr into
// `err_file`.
inline Child SpawnProgram(const std::vector<std::string>& args, const std::string& err_file) {
  int out[2];
  if (args.empty() || pipe(out) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
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
  child.stdout_fd = out[0];
  return child;
}

// The statewatch binary with `args`.
inline Child Spawn(const std::vector<std::string>& args, const std::string& err_file) {
  std::vector<std::string> all = {STATEWATCH_BIN};
  all.insert(all.end(), args.begin(), args.end());
  return SpawnProgram(all, err_file);
}

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
  for (int i = 0; i < 200; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_CHILD_PROCESS_H_
