#include "bench/bench_util.h"

#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>

#include "bench/rocksdb_inspect.h"
#include "schema/statewatch_generated.h"

namespace statewatch::bench {

TempDir::TempDir() {
  char tmpl[] = "/tmp/statewatch-bench-XXXXXX";
  const char* p = mkdtemp(tmpl);
  path_ = p ? p : "/tmp/statewatch-bench-fallback";
  if (!p) std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint64_t ResidentBytes() {
  unsigned long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

void TrimHeap() { malloc_trim(0); }

std::string SessionKey(uint64_t i) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "agent:main:subagent:%08llx-7c1e-4a2b-9f00-%012llx",
                static_cast<unsigned long long>(i),
                static_cast<unsigned long long>((i * 2654435761u) & 0xffffffffffffu));
  return buf;
}

std::string SessionId(uint64_t i) {
  return "3f2a9c1e-55d0-4b7e-8a41-" + std::to_string(100000000000 + i % 100000000000);
}

std::string WatcherKey(uint64_t i) { return "agent:w" + std::to_string(i) + ":main"; }

void SetSession(uint64_t session, EventInput* in) {
  in->session_key = SessionKey(session);
  in->session_id = SessionId(session);
}

void SetSession(uint64_t session, RefEventInput* in) {
  in->session_key = SessionKey(session);
  in->session_id = SessionId(session);
}

EventInput StandardEvent(uint64_t session) {
  EventInput in;
  SetSession(session, &in);
  in.kind = "human_direct_message";
  in.actor_type = ActorType::kHuman;
  in.summary = "human message via telegram";
  in.payload_json = R"({"channel":"telegram"})";
  return in;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

RefEventInput ToRef(const EventInput& in) {
  RefEventInput r;
  r.session_key = in.session_key;
  r.agent_id = in.agent_id.empty() ? kAgent : in.agent_id;
  r.session_id = in.session_id;
  r.kind = in.kind;
  r.actor_type = ActorTypeName(in.actor_type);  // the reference stores it as text
  r.actor_id = in.actor_id;
  r.run_id = in.run_id;
  r.occurred_at_ms = in.occurred_at_ms.value_or(NowMs());
  r.summary = in.summary;
  r.payload_json = in.payload_json;
  r.dedupe_key = in.dedupe_key;
  r.watchers = in.watchers;
  return r;
}

RefEventInput StandardRefEvent(uint64_t session) { return ToRef(StandardEvent(session)); }

std::vector<std::vector<EventInput>> StandardBatches(uint64_t sessions, std::size_t batch_size,
                                                     std::size_t count) {
  std::vector<std::vector<EventInput>> batches(count);
  uint64_t next = 0;
  for (auto& batch : batches) {
    for (std::size_t i = 0; i < batch_size; ++i) batch.push_back(StandardEvent(next++ % sessions));
  }
  return batches;
}

std::vector<std::vector<RefEventInput>> ToRef(const std::vector<std::vector<EventInput>>& b) {
  std::vector<std::vector<RefEventInput>> out;
  for (const auto& batch : b) {
    out.emplace_back();
    for (const EventInput& in : batch) out.back().push_back(ToRef(in));
  }
  return out;
}

namespace {

// The standard event serialized as a schema Event: the journal value of the first format,
// used only when the engine's database cannot be read back.
std::size_t SerializedEventBytes() {
  EventInput in = StandardEvent(0);
  flatbuffers::FlatBufferBuilder fbb(256);
  auto event = schema::CreateEventDirect(
      fbb, /*sequence=*/123456789, in.session_key.c_str(), kAgent.c_str(), in.session_id.c_str(),
      in.kind.c_str(), schema::ActorType::Human, /*actor_id=*/nullptr, /*run_id=*/nullptr, NowMs(),
      in.summary.c_str(), in.payload_json.c_str(), /*dedupe_key=*/nullptr);
  fbb.Finish(event);
  return fbb.GetSize();
}

// Records 100 standard events into a scratch engine, closes it and reads its journal back.
Result<RowBytes> ProbeJournalRow() {
  TempDir dir;
  {
    auto engine = OpenEngine(dir.Sub("db"), Durability::kBuffered);
    if (!engine.ok()) return engine.status();
    auto batches = StandardBatches(/*sessions=*/10, /*batch_size=*/100, /*count=*/1);
    SW_RETURN_IF_ERROR((*engine)->RecordMany(batches[0]).status());
  }
  auto family = MeasureFamily(dir.Sub("db"), "journal");
  if (!family.ok()) return family.status();
  if (family->rows == 0) return Status::NotFound("the journal family holds no rows");
  double rows = static_cast<double>(family->rows);
  return RowBytes{family->key_bytes / rows, family->value_bytes / rows, /*probed=*/true};
}

}  // namespace

const RowBytes& StandardJournalRow() {
  static const RowBytes row = [] {
    Result<RowBytes> probed = ProbeJournalRow();
    if (probed.ok()) return *probed;
    std::fprintf(stderr, "bench: could not read the journal rows back (%s); using the "
                 "serialized schema Event size\n", probed.status().ToString().c_str());
    return RowBytes{17, static_cast<double>(SerializedEventBytes()), /*probed=*/false};
  }();
  return row;
}

Result<std::unique_ptr<Engine>> OpenEngine(const std::string& path, Durability durability,
                                           uint64_t max_rows) {
  EngineOptions options;
  options.durability = durability;
  options.max_rows = max_rows;
  return Engine::Open(options, path);
}

double BenchScale() {
  static const double scale = [] {
    const char* v = std::getenv("BENCH_SCALE");
    double s = v ? std::atof(v) : 1.0;
    return s > 0 ? s : 1.0;
  }();
  return scale;
}

int64_t Scaled(int64_t n) {
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * BenchScale()));
}

const char* DurabilityName(Durability d) { return d == Durability::kSync ? "sync" : "buffered"; }

void InterleavedRun::Add(std::string name, Op op, OpOptions options) {
  if (options.every < 1) options.every = 1;
  ops_.push_back({std::move(name), std::move(op), std::move(options)});
}

void InterleavedRun::AddRatio(std::string name, std::string numerator_op,
                              std::string denominator_op) {
  ratios_.push_back({std::move(name), std::move(numerator_op), std::move(denominator_op)});
}

const InterleavedRun::Entry* InterleavedRun::Find(const std::string& name) const {
  for (const Entry& e : ops_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

double InterleavedRun::Seconds(const std::string& name) const {
  const Entry* e = Find(name);
  return e ? e->seconds : 0;
}

double InterleavedRun::Rate(const std::string& name) const {
  const Entry* e = Find(name);
  return e && e->seconds > 0 ? e->options.items * e->calls / e->seconds : 0;
}

void InterleavedRun::Run(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  std::size_t first = 0;
  int64_t iteration = 0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      Entry& e = ops_[(first + k) % ops_.size()];
      if (iteration % e.options.every != 0) continue;
      const OpOptions& o = e.options;
      if (o.before && !CheckOk(state, o.before(), (e.name + " (before)").c_str())) return;
      auto t0 = Clock::now();
      Status st = e.op();
      e.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      ++e.calls;
      if (!CheckOk(state, st, e.name.c_str())) return;
      if (o.after && !CheckOk(state, o.after(), (e.name + " (after)").c_str())) return;
    }
    first = (first + 1) % ops_.size();
    ++iteration;
  }
  for (const Entry& e : ops_) {
    state.counters[e.name + "_per_s"] = Rate(e.name);
    state.counters[e.name + "_us"] = e.calls > 0 ? e.seconds * 1e6 / e.calls : 0;
  }
  for (const auto& r : ratios_) {
    double den = Rate(r[2]);
    state.counters[r[0]] = den > 0 ? Rate(r[1]) / den : 0;
  }
}

bool CheckOk(benchmark::State& state, const Status& st, const char* what) {
  if (st.ok()) return true;
  state.SkipWithError((std::string(what) + ": " + st.message()).c_str());
  return false;
}

}  // namespace statewatch::bench
