// Shared pieces of the benchmarks: temporary directories, resident memory, the standard
// event every benchmark records (built the same way for statewatch and for the SQLite
// reference so that both do the same work), the session picker that decides which session
// each event goes to, and InterleavedRun, which measures a figure and its baselines in the
// same loop.
//
// Not thread-safe.
#ifndef STATEWATCH_BENCH_BENCH_UTIL_H_
#define STATEWATCH_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/sqlite_reference.h"
#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::bench {

// A fresh directory under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Resident set size of this process in bytes (/proc/self/statm).
uint64_t ResidentBytes();
// Returns freed heap memory to the OS, so that a following ResidentBytes() delta counts new
// memory only (glibc keeps freed pages otherwise).
void TrimHeap();

// The session key of benchmark session `i`: a sub-agent key shaped like the gateway's
// (`agent:main:subagent:<uuid>`). Every i < 2^32 gives a key of the same length, so
// events differ only in which session they name, never in size.
std::string SessionKey(uint64_t i);
// Session `i`'s incarnation id (a uuid-shaped string of fixed length).
std::string SessionId(uint64_t i);
// Watcher `i`: an agent's main session (`agent:w<i>:main`), woken at once when notified.
std::string WatcherKey(uint64_t i);
// The agent id every benchmark session belongs to.
inline const std::string kAgent = "main";

// The standard event: a human message to session `i` (a notifying kind, ~300 bytes
// stored), with the fields a gateway fills in.
EventInput StandardEvent(uint64_t session);
RefEventInput StandardRefEvent(uint64_t session);
// Converts an engine input to the reference's (same fields; occurred_at = now).
RefEventInput ToRef(const EventInput& in);
// Points an input at session `i` (its key and incarnation id), keeping every other field.
void SetSession(uint64_t session, EventInput* in);
void SetSession(uint64_t session, RefEventInput* in);

// `count` batches of `batch_size` standard events, session numbers cycling over `sessions`.
std::vector<std::vector<EventInput>> StandardBatches(uint64_t sessions, std::size_t batch_size,
                                                     std::size_t count);
std::vector<std::vector<RefEventInput>> ToRef(const std::vector<std::vector<EventInput>>& b);

// Which session each next event goes to: always 0 for one session, otherwise uniformly at
// random over `sessions` from a fixed seed. Two pickers built alike give the same sequence,
// so statewatch and its baselines record the same sessions in the same order.
class SessionPicker {
 public:
  explicit SessionPicker(uint64_t sessions, uint64_t seed = 20240611)
      : sessions_(sessions), rng_(seed), dist_(0, sessions == 0 ? 0 : sessions - 1) {}
  uint64_t Next() { return sessions_ <= 1 ? 0 : dist_(rng_); }
  uint64_t sessions() const { return sessions_; }

 private:
  uint64_t sessions_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<uint64_t> dist_;
};

// The bytes of one stored journal row of the standard event, read back from a database
// the engine wrote (key + value of its `journal` column family, averaged over 100 rows). The
// raw RocksDB floor writes rows of this size, and the WAL figure divides by it. When the
// database cannot be read that way, falls back to the serialized schema Event and a 17-byte
// key and says so (`probed` = false). Computed once per process.
struct RowBytes {
  double key = 0;
  double value = 0;
  bool probed = false;
  double total() const { return key + value; }
};
const RowBytes& StandardJournalRow();

// Ends the benchmark with the error when `st` is not OK. Returns st.ok().
bool CheckOk(benchmark::State& state, const Status& st, const char* what);
template <typename T>
bool CheckOk(benchmark::State& state, const Result<T>& r, const char* what) {
  return CheckOk(state, r.status(), what);
}

// The fixture `*slot` holds, built by `build` on first use and kept for the benchmarks and
// repetitions after it (until the slot is reset); nullptr, with the benchmark ended on the
// error, when building failed.
template <typename Fixture>
Fixture* BuildOnce(benchmark::State& state, std::unique_ptr<Fixture>* slot,
                   Status (*build)(Fixture*), const char* what) {
  if (*slot == nullptr) {
    auto fixture = std::make_unique<Fixture>();
    if (!CheckOk(state, build(fixture.get()), what)) return nullptr;
    *slot = std::move(fixture);
  }
  return slot->get();
}

int64_t NowMs();

// The environment's BENCH_SCALE (default 1): benchmarks with a fixed amount of work multiply
// it by this, so that a development run can be short (BENCH_SCALE=0.05). A full run (the
// one quoted in docs/benchmarks.md, "The last run") uses 1; bench/report.py says when it
// was not.
double BenchScale();
// `n` scaled by BenchScale(), at least 1.
int64_t Scaled(int64_t n);

// Measures several operations (statewatch and its baselines) in one benchmark loop: every
// iteration calls each operation once, rotating which goes first, and times each call on its
// own. The machine is shared and its fsync latency swings tenfold within seconds; measured
// in separate benchmarks minutes apart, a figure and its baseline see different machines,
// measured in alternation they see the same one.
//
// After the loop it sets, per operation, the counter `<name>_per_s` (items per second of
// that operation's own time) and `<name>_us` (microseconds per call), and per declared ratio
// `<ratio name>` = rate(a) / rate(b). With repetitions, bench/report.py reads every
// repetition's counters (the median, and the spread that marks a figure as noisy).
class InterleavedRun {
 public:
  using Op = std::function<Status()>;
  struct OpOptions {
    double items = 1;  // items (events, pages, ...) one call handles
    // Call the operation on every `every`-th iteration only: for a baseline so much slower
    // than statewatch that calling it as often would take the whole time budget. Its rate
    // is still items per second of its own time.
    int every = 1;
    Op before, after;  // untimed, around the timed call (e.g. to prepare its input)
  };
  void Add(std::string name, Op op, OpOptions options);
  void Add(std::string name, Op op) { Add(std::move(name), std::move(op), OpOptions{}); }
  void AddRatio(std::string name, std::string numerator_op, std::string denominator_op);
  // Runs the benchmark loop; stops with the error of the first failing call.
  void Run(benchmark::State& state);
  // Seconds spent in `name`'s timed calls so far.
  double Seconds(const std::string& name) const;

 private:
  struct Entry {
    std::string name;
    Op op;
    OpOptions options;
    double seconds = 0;
    int64_t calls = 0;
  };
  const Entry* Find(const std::string& name) const;
  double Rate(const std::string& name) const;
  std::vector<Entry> ops_;
  std::vector<std::vector<std::string>> ratios_;
};

// A row cap no benchmark reaches: appends never prune.
inline constexpr uint64_t kNoRowCap = uint64_t{1} << 40;

// Opens an engine on `path` with the system clock and the given durability and row cap.
Result<std::unique_ptr<Engine>> OpenEngine(const std::string& path, Durability durability,
                                           uint64_t max_rows = kNoRowCap);
const char* DurabilityName(Durability d);  // "sync" | "buffered"

}  // namespace statewatch::bench

#endif  // STATEWATCH_BENCH_BENCH_UTIL_H_
