// Shared pieces of the benchmarks: temporary directories, resident memory, the standard
// event every benchmark records (built the same way for statewatch and for the SQLite
// reference so that both do the same work), and InterleavedRun, which measures a figure and
// its baseline in the same loop.
//
// Not thread-safe.
#ifndef STATEWATCH_BENCH_BENCH_UTIL_H_
#define STATEWATCH_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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
// (`agent:main:subagent:<uuid>`).
std::string SessionKey(uint64_t i);
// Watcher `i`: an agent's main session (`agent:w<i>:main`), woken at once when notified.
std::string WatcherKey(uint64_t i);
// The agent id every benchmark session belongs to.
inline const std::string kAgent = "main";

// The standard event: a human message to session `i` (a notifying kind, ~200 bytes
// serialized), with the fields a gateway fills in.
EventInput StandardEvent(uint64_t session);
RefEventInput StandardRefEvent(uint64_t session);
// Converts an engine input to the reference's (same fields; occurred_at = now).
RefEventInput ToRef(const EventInput& in);

// `count` batches of `batch_size` standard events, session numbers cycling over `sessions`.
std::vector<std::vector<EventInput>> StandardBatches(uint64_t sessions, std::size_t batch_size,
                                                     std::size_t count);
std::vector<std::vector<RefEventInput>> ToRef(const std::vector<std::vector<EventInput>>& b);

// Size in bytes of the standard event serialized as a schema Event (FlatBuffers), the value
// size the raw RocksDB floor writes.
std::size_t SerializedEventBytes();

// Ends the benchmark with the error when `st` is not OK. Returns st.ok().
bool CheckOk(benchmark::State& state, const Status& st, const char* what);
template <typename T>
bool CheckOk(benchmark::State& state, const Result<T>& r, const char* what) {
  return CheckOk(state, r.status(), what);
}

int64_t NowMs();

// Measures several operations (statewatch and its baselines) in one benchmark loop: every
// iteration calls each operation once, rotating which goes first, and times each call on its
// own. The machine is shared and its fsync latency swings tenfold within seconds; measured
// in separate benchmarks minutes apart, a figure and its baseline see different machines,
// measured in alternation they see the same one.
//
// After the loop it sets, per operation, the counter `<name>_per_s` (items per second of
// that operation's own time) and `<name>_us` (microseconds per call), and per declared ratio
// `<ratio name>` = rate(a) / rate(b). With repetitions, Google Benchmark's median of each
// counter is what bench/report.py reads.
class InterleavedRun {
 public:
  using Op = std::function<Status()>;
  // `op` is timed; `before` and `after` (optional) run untimed around it, e.g. to put the
  // system back into the state the timed call expects.
  void Add(std::string name, Op op, double items_per_call = 1, Op before = {}, Op after = {});
  void AddRatio(std::string name, std::string numerator_op, std::string denominator_op);
  // Runs the benchmark loop; stops with the error of the first failing call.
  void Run(benchmark::State& state);

 private:
  struct Entry {
    std::string name;
    Op op, before, after;
    double items = 1;
    double seconds = 0;
    int64_t calls = 0;
  };
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
