// Crash test (docs/semantics.md, "Restarts and crashes"): a child process runs seeded random
// operations against the engine with Durability::kSync and reports each acknowledged result
// through a pipe; the parent SIGKILLs it after a random number of acknowledgements, reopens
// the database and checks it against the ReferenceModel replaying the acknowledged prefix:
// every acknowledged event is there byte for byte, heads cover every acknowledged sequence,
// new writes never reuse a sequence, the pending notices are the predicted ones, Verify() is
// clean. The one operation in flight at the kill may have landed or not, but never in part:
// the whole state must equal the model either without it or with it. The database lives on
// across rounds, so later rounds also recover what earlier kills left behind.
//
// Why fork + exec: the parent opens engines between rounds, and RocksDB keeps background
// threads for the life of the process; a forked copy of a threaded process may inherit a
// lock held by a thread that no longer exists. So the child re-executes this test binary
// (CrashTest.ChildWriter, inert unless STATEWATCH_CRASH_DIR is set) and starts clean;
// between fork and exec it only calls async-signal-safe functions.
//
// Reproduce: STATEWATCH_CRASH_SEED=<seed> ./build/tests/recovery_tests --gtest_filter='CrashTest.*'
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
#include "engine/model/ops.h"
#include "engine/model/state_check.h"
#include "engine/model_run_options.h"
#include "engine/reference_model.h"
#include "statewatch/engine.h"

extern char** environ;

namespace statewatch::model {
namespace {

constexpr int64_t kStart = 1764460800000;  // 2025-11-30T00:00:00Z
constexpr int kMaxOps = 200;               // per round; the child is killed long before
constexpr int kMaxKillAfter = 40;          // acknowledged operations before the kill
constexpr int kAckFd = 3;                  // the child's end of the acknowledgement pipe
constexpr int kReadTimeoutMs = 120000;     // bound on every wait for the child

// What a test case runs: the operation mix and the engine options around it.
struct Profile {
  const char* name;
  bool maintenance;  // deletes, resets, pruning and a small row cap
};

EngineOptions OptionsFor(const Profile& p, std::shared_ptr<Clock> clock) {
  EngineOptions o = ModelRunOptions(std::move(clock), Durability::kSync);
  if (p.maintenance) {
    o.retention_ms = 2 * kDayMs;
    o.max_rows = 30;
    o.checkpoint_min_records = 8;  // checkpoints (and their log truncation) under fire
  }
  return o;
}

OpMix MixFor(const Profile& p) {
  OpMix mix = OpMixFor(OptionsFor(p, nullptr));
  mix.record = 55;
  mix.watch = 15;
  mix.drain = 15;
  mix.acknowledge = 5;
  mix.sweep = 3;
  mix.reset = p.maintenance ? 2 : 0;
  mix.remove = p.maintenance ? 2 : 0;
  mix.prune = p.maintenance ? 4 : 0;
  mix.big_step_percent = p.maintenance ? 3 : 0;
  mix.dedupe_pool = 6;
  return mix;
}

const Profile kJournal{"journal", false};
const Profile kMaintenance{"maintenance", true};

OpGenerator RoundGenerator(const Profile& p, uint64_t seed, int round, int64_t start_ms) {
  return OpGenerator(seed * 1000003 + static_cast<uint64_t>(round), Universe::Small(), MixFor(p),
                     start_ms);
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// ---- the child --------------------------------------------------------------------------------

bool WriteAll(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

[[noreturn]] void RunChild() {
  const Profile& p = Env("STATEWATCH_CRASH_PROFILE") == "maintenance" ? kMaintenance : kJournal;
  uint64_t seed = std::stoull(Env("STATEWATCH_CRASH_SEED_VALUE"));
  int round = std::stoi(Env("STATEWATCH_CRASH_ROUND"));
  int64_t start = std::stoll(Env("STATEWATCH_CRASH_START"));
  auto clock = std::make_shared<ManualClock>(start);
  auto engine = Engine::Open(OptionsFor(p, clock), Env("STATEWATCH_CRASH_DIR"));
  if (!engine.ok()) {
    WriteAll(kAckFd, "open-failed " + engine.status().ToString() + "\n");
    ::_exit(2);
  }
  OpGenerator gen = RoundGenerator(p, seed, round, start);
  for (int i = 0; i < kMaxOps; ++i) {
    Op op = gen.Next();
    clock->Set(op.now_ms);
    std::string line = std::to_string(i) + " " +
                       DescribeResult(ApplyToEngine(**engine, op),
                                      /*compact=*/true) +
                       "\n";
    // One write of at most PIPE_BUF bytes is atomic: the parent never sees half a line.
    if (line.size() > PIPE_BUF) line = std::to_string(i) + " line-too-long\n";
    if (!WriteAll(kAckFd, line)) ::_exit(3);
  }
  ::_exit(0);
}

// Inert in a normal run; the entry point of the child process the crash test starts.
TEST(CrashTest, ChildWriter) {
  if (Env("STATEWATCH_CRASH_DIR").empty()) GTEST_SKIP() << "child entry point of CrashTest.*";
  RunChild();
}

// ---- the parent -------------------------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  int ack_fd = -1;
};

// Starts this binary again as CrashTest.ChildWriter with `env` added; its output goes to
// `log`. Everything is prepared before fork(): the child only dup2()s and execve()s.
Child SpawnChild(const std::vector<std::string>& env, const std::string& log) {
  std::vector<std::string> strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s = *e;
    if (s.rfind("GTEST_SHARD", 0) == 0 || s.rfind("GTEST_TOTAL_SHARDS", 0) == 0) continue;
    strings.push_back(s);
  }
  for (const std::string& s : env) strings.push_back(s);
  std::vector<char*> envp;
  for (std::string& s : strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=CrashTest.ChildWriter";
  char* argv[] = {exe.data(), filter.data(), nullptr};

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (fds[1] == kAckFd)
      ::fcntl(kAckFd, F_SETFD, 0);
    else
      ::dup2(fds[1], kAckFd);
    ::execve(exe.c_str(), argv, envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(log_fd);
  if (pid < 0) {
    ::close(fds[0]);
    return {};
  }
  return Child{pid, fds[0]};
}

// Reads whole lines from the child's pipe, each wait bounded.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  ~LineReader() { ::close(fd_); }
  // The next line; nullopt at end of stream; an error string on timeout.
  std::optional<std::string> Next(std::string* error) {
    for (;;) {
      std::size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, kReadTimeoutMs);
      if (r == 0) {
        *error = "timed out waiting for the child";
        return std::nullopt;
      }
      if (r < 0 && errno == EINTR) continue;
      char chunk[4096];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;  // end of stream; a partial line is not acknowledged
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
};

class CrashRounds {
 public:
  CrashRounds(const Profile& p, uint64_t seed)
      : profile_(p), seed_(seed), rng_(seed), model_(ModelOptionsFor(OptionsFor(p, nullptr))) {}
  ~CrashRounds() {
    std::filesystem::remove_all(dir_);
    std::filesystem::remove(dir_ + ".child.log");
  }

  ::testing::AssertionResult Round(int round) {
    round_ = round;
    OpGenerator gen = RoundGenerator(profile_, seed_, round, start_ms_);
    std::vector<Op> ops;
    for (int i = 0; i < kMaxOps; ++i) ops.push_back(gen.Next());
    int kill_after = static_cast<int>(rng_() % (kMaxKillAfter + 1));

    std::vector<std::string> acks;
    if (auto r = RunChildUntilKilled(kill_after, &acks); !r) return r;
    if (auto r = ReplayAcks(ops, acks); !r) return r;
    std::optional<Op> in_flight;
    if (acks.size() < ops.size()) in_flight = ops[acks.size()];
    int64_t now = in_flight ? in_flight->now_ms : ops.back().now_ms;
    if (auto r = CheckReopened(in_flight, now); !r) return r;
    start_ms_ = ops.back().now_ms + 1000;
    return ::testing::AssertionSuccess();
  }

  uint64_t acknowledged() const { return total_acked_; }
  uint64_t landed_in_flight() const { return landed_in_flight_; }

 private:
  ::testing::AssertionResult Fail(const std::string& what) {
    std::ifstream log(dir_ + ".child.log");
    std::stringstream tail;
    tail << log.rdbuf();
    return ::testing::AssertionFailure()
           << "profile=" << profile_.name << " seed=" << seed_ << " round=" << round_ << ": "
           << what << "\nchild output:\n"
           << tail.str().substr(0, 4000);
  }

  ::testing::AssertionResult RunChildUntilKilled(int kill_after, std::vector<std::string>* acks) {
    Child child = SpawnChild(
        {"STATEWATCH_CRASH_DIR=" + dir_, "STATEWATCH_CRASH_SEED_VALUE=" + std::to_string(seed_),
         "STATEWATCH_CRASH_ROUND=" + std::to_string(round_),
         "STATEWATCH_CRASH_START=" + std::to_string(start_ms_),
         std::string("STATEWATCH_CRASH_PROFILE=") + profile_.name},
        dir_ + ".child.log");
    if (child.pid < 0) return Fail("could not start the child");
    LineReader reader(child.ack_fd);
    std::string error;
    while (static_cast<int>(acks->size()) < kill_after) {
      std::optional<std::string> line = reader.Next(&error);
      if (!line) break;
      acks->push_back(*line);
    }
    ::kill(child.pid, SIGKILL);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    if (!error.empty()) return Fail(error);
    // The child is gone: what it wrote before dying is still in the pipe, all of it
    // acknowledged (its operations had returned).
    while (std::optional<std::string> line = reader.Next(&error)) acks->push_back(*line);
    if (!error.empty()) return Fail(error);
    if (!acks->empty() && acks->front().rfind("open-failed", 0) == 0) return Fail(acks->front());
    bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    if (!killed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      return Fail("the child ended on its own with status " + std::to_string(status));
    }
    return ::testing::AssertionSuccess();
  }

  // The model replays the acknowledged prefix; each acknowledgement must be its answer.
  ::testing::AssertionResult ReplayAcks(const std::vector<Op>& ops,
                                        const std::vector<std::string>& acks) {
    for (std::size_t i = 0; i < acks.size(); ++i) {
      OpResult want = ApplyToModel(model_, ops[i]);
      std::string expected = std::to_string(i) + " " + DescribeResult(want, /*compact=*/true);
      if (acks[i] != expected) {
        return Fail("acknowledgement " + std::to_string(i) + " of " + DescribeOp(ops[i]) +
                    "\n  child: " + acks[i] + "\n  model: " + expected);
      }
      Remember(ops[i], want);
    }
    total_acked_ += acks.size();
    return ::testing::AssertionSuccess();
  }

  void Remember(const Op& op, const OpResult& r) {
    for (const RecordResult& rr : r.records) {
      SessionName s{rr.event.agent_id, rr.event.session_key};
      if (!rr.deduplicated) acked_events_.push_back({s, rr.event.sequence});
      max_acked_ = std::max(max_acked_, rr.event.sequence);
    }
    if (op.type == Op::Type::kDelete) MarkDeleted(op.target);
  }
  void MarkDeleted(const SessionName& target) {
    if (auto s = Resolve(target.session_key, target.agent_id)) deleted_.insert(DescribeName(*s));
  }

  // `now`: the time of the operation in flight (or of the last one).
  ::testing::AssertionResult CheckReopened(const std::optional<Op>& in_flight, int64_t now) {
    auto clock = std::make_shared<ManualClock>(now);
    auto engine = Engine::Open(OptionsFor(profile_, clock), dir_);
    if (!engine.ok()) return Fail("reopen: " + engine.status().ToString());
    const Universe u = Universe::Small();
    auto same = SameState(**engine, model_, u);
    if (!same && in_flight) {
      ReferenceModel with = model_;
      ApplyToModel(with, *in_flight);
      auto same_with = SameState(**engine, with, u);
      if (!same_with) {
        return Fail(std::string("the reopened state is neither the acknowledged prefix:\n") +
                    same.message() + "\nnor the prefix plus the operation in flight (" +
                    DescribeOp(*in_flight) + "):\n" + same_with.message());
      }
      model_ = with;
      ++landed_in_flight_;
      if (in_flight->type == Op::Type::kDelete) MarkDeleted(in_flight->target);
    }
    if (auto r = CheckAcknowledgedEvents(**engine); !r) return r;
    if (auto r = CheckNewWrite(**engine, *clock); !r) return r;
    auto v = (*engine)->Verify();
    if (!v.ok() || !v->ok) {
      std::string diffs = v.ok() ? "" : v.status().ToString();
      if (v.ok())
        for (const std::string& d : v->differences) diffs += "\n  " + d;
      return Fail("Verify after the crash: " + diffs);
    }
    return ::testing::AssertionSuccess();
  }

  // Every acknowledged event the model still retains is there, byte for byte; every head
  // covers the acknowledged sequences of its session (unless the session was deleted).
  ::testing::AssertionResult CheckAcknowledgedEvents(const Engine& engine) {
    std::map<std::string, Sequence> max_per_session;
    for (const auto& [s, seq] : acked_events_) {
      if (!profile_.maintenance && !model_.Retains(s, seq)) {
        return Fail("the model lost acknowledged event #" + std::to_string(seq));
      }
      Sequence& m = max_per_session[DescribeName(s)];
      m = std::max(m, seq);
      if (!model_.Retains(s, seq)) continue;
      auto page = engine.ChangesSince(s, seq - 1, 1);
      ChangesPage want = model_.ChangesSince(s, seq - 1, 1);
      if (!page.ok() || page->events.empty() || page->events[0].sequence != seq ||
          DescribeEvent(page->events[0]) != DescribeEvent(want.events.at(0))) {
        return Fail("acknowledged event #" + std::to_string(seq) + " of " + DescribeName(s) +
                    " is not there byte for byte: " +
                    (page.ok() ? DescribePage(*page) : page.status().ToString()));
      }
    }
    for (const auto& [name, seq] : max_per_session) {
      if (deleted_.count(name)) continue;
      std::size_t slash = name.find('/');
      auto head = engine.StateVersion(SessionName{name.substr(0, slash), name.substr(slash + 1)});
      if (!head.ok() || *head < seq) {
        return Fail("head of " + name + " is below acknowledged sequence " + std::to_string(seq));
      }
    }
    return ::testing::AssertionSuccess();
  }

  // A new write after the reopen never reuses a sequence.
  ::testing::AssertionResult CheckNewWrite(Engine& engine, ManualClock& clock) {
    clock.Advance(1);
    EventInput in;
    in.session_key = "agent:main:main";
    in.kind = "created";
    in.summary = "after crash " + std::to_string(round_);
    auto r = engine.Record(in);
    if (!r.ok()) return Fail("write after reopen: " + r.status().ToString());
    auto want = model_.RecordMany({in}, clock.NowMs());
    if (r->event.sequence <= max_acked_ || r->event.sequence != want->at(0).event.sequence) {
      return Fail("write after reopen got sequence " + std::to_string(r->event.sequence) +
                  "; highest acknowledged " + std::to_string(max_acked_) + ", model " +
                  std::to_string(want->at(0).event.sequence));
    }
    max_acked_ = r->event.sequence;
    return ::testing::AssertionSuccess();
  }

  const Profile& profile_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  ReferenceModel model_;
  std::string dir_ = statewatch::testing::NewTempDir("crash");
  int64_t start_ms_ = kStart;
  int round_ = 0;
  std::vector<std::pair<SessionName, Sequence>> acked_events_;
  std::set<std::string> deleted_;
  Sequence max_acked_ = 0;
  uint64_t total_acked_ = 0, landed_in_flight_ = 0;
};

uint64_t SeedFromEnv(uint64_t fallback) {
  std::string s = Env("STATEWATCH_CRASH_SEED");
  return s.empty() ? fallback : std::stoull(s, nullptr, 0);
}

void RunRounds(const Profile& p, int rounds, uint64_t default_seed) {
  uint64_t seed = SeedFromEnv(default_seed);
  std::cout << "[ crash    ] profile=" << p.name << " seed=" << seed << " rounds=" << rounds
            << std::endl;
  CrashRounds crash(p, seed);
  for (int round = 0; round < rounds; ++round) {
    auto r = crash.Round(round);
    ASSERT_TRUE(r) << "reproduce with STATEWATCH_CRASH_SEED=" << seed;
  }
  std::cout << "[ crash    ]   acknowledged=" << crash.acknowledged()
            << " in-flight operations that landed=" << crash.landed_in_flight() << std::endl;
}

TEST(CrashTest, AcknowledgedJournalSurvivesKill) { RunRounds(kJournal, 30, 0xc0ffee01); }

TEST(CrashTest, CursorsPruningAndCheckpointsSurviveKill) {
  RunRounds(kMaintenance, 30, 0xc0ffee02);
}

}  // namespace
}  // namespace statewatch::model
