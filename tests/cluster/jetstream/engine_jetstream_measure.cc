// cluster_engine_measure: the engine's commit path on a partition stream of a loopback
// three-server JetStream cluster this program starts, against the same engine on its local
// log, one run, as ratios (scripts/cluster-bench.sh runs it). Not a test: it prints figures.
//
//   cluster_engine_measure [--seconds S] [--json FILE]     (default 5 s per figure)
//
// With --json the figures are also written to FILE as one JSON object (`make bench` reads
// it: scripts/bench.sh, bench/report.py).
//
// Figures: events/s with 8 writer threads calling Record (the engine batches them into
// commit groups) — local log with durability sync, then JetStream (R3; local apply
// buffered: the stream is the source of truth); then the takeover: the owner is dropped and
// a node with an empty directory opens as owner (folds the whole stream, fences, sweeps)
// until its first acknowledged Record.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/replicated_log.h"
#include "engine/engine_fixture.h"
#include "log/jetstream/jetstream_log.h"
#include "log/jetstream/nats_connection.h"
#include "nats_test_cluster.h"
#include "statewatch/engine.h"

namespace statewatch::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr int kWriters = 8;

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

EventInput Input(int writer, uint64_t i) {
  EventInput in;
  in.session_key = "agent:main:w" + std::to_string(writer) + "s" + std::to_string(i % 16);
  in.kind = "human_direct_message";
  in.actor_type = ActorType::kHuman;
  in.summary = "event " + std::to_string(i) + " of writer " + std::to_string(writer);
  return in;
}

// Events/s that kWriters threads record for `seconds`; -1 when a Record failed.
double Throughput(Engine& e, double seconds, uint64_t* recorded = nullptr) {
  std::atomic<uint64_t> events{0};
  std::atomic<bool> failed{false};
  auto deadline = SteadyClock::now() + std::chrono::duration<double>(seconds);
  auto start = SteadyClock::now();
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (uint64_t i = 0; SteadyClock::now() < deadline && !failed; ++i) {
        auto r = e.Record(Input(w, i));
        if (!r.ok()) {
          std::fprintf(stderr, "record failed: %s\n", r.status().ToString().c_str());
          failed = true;
        }
        events.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : writers) t.join();
  if (recorded) *recorded = events;
  return failed ? -1 : static_cast<double>(events) / Seconds(SteadyClock::now() - start);
}

std::shared_ptr<log::LogBackend> Stream(const std::string& urls) {
  log::NatsConnectionOptions co;
  co.servers = urls;
  auto c = log::NatsConnection::Connect(co);
  if (!c.ok()) return nullptr;
  auto s = log::JetStreamLog::Open(*c, log::JetStreamLogOptions{});
  return s.ok() ? std::shared_ptr<log::LogBackend>(std::move(*s)) : nullptr;
}

Result<std::unique_ptr<Engine>> OpenEngine(const std::string& dir, Durability durability,
                                           std::shared_ptr<log::LogBackend> stream) {
  EngineOptions o;
  o.durability = durability;
  if (stream) o.wrap_log = OwnerLog(std::move(stream), ReplicatedLogOptions{});
  return Engine::Open(o, dir);
}

int Run(double seconds, const std::string& json_path) {
  std::string root = statewatch::testing::NewTempDir("cluster-measure");
  auto local = OpenEngine(root + "/local", Durability::kSync, nullptr);
  if (!local.ok()) return std::fprintf(stderr, "%s\n", local.status().ToString().c_str()), 1;
  double local_rate = Throughput(**local, seconds);
  local->reset();
  auto cluster = log::testing::NatsTestCluster::Start({});
  if (!cluster.ok()) return std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str()), 1;
  auto owner = OpenEngine(root + "/a", Durability::kBuffered, Stream((*cluster)->Urls()));
  if (!owner.ok()) return std::fprintf(stderr, "%s\n", owner.status().ToString().c_str()), 1;
  uint64_t on_stream = 0;
  double js_rate = Throughput(**owner, seconds, &on_stream);
  owner->reset();  // the owner is gone
  auto start = SteadyClock::now();
  auto next = OpenEngine(root + "/b", Durability::kBuffered, Stream((*cluster)->Urls()));
  if (!next.ok()) return std::fprintf(stderr, "%s\n", next.status().ToString().c_str()), 1;
  Status started = (*next)->Start();
  auto first = (*next)->Record(Input(0, 0));
  double takeover_ms = Seconds(SteadyClock::now() - start) * 1000;
  if (!started.ok() || !first.ok()) return std::fprintf(stderr, "takeover failed\n"), 1;
  if (local_rate < 0 || js_rate < 0) return std::fprintf(stderr, "a Record failed\n"), 1;
  std::printf("writers %d, %.0f s per figure\n", kWriters, seconds);
  std::printf("local log (sync)             : %10.0f events/s\n", local_rate);
  std::printf("JetStream R3 (local buffered): %10.0f events/s  (%.2fx the local log)\n", js_rate,
              js_rate / local_rate);
  std::printf("takeover, empty directory, %llu events to fold: %.0f ms to the first "
              "acknowledged write\n",
              static_cast<unsigned long long>(on_stream),
              takeover_ms);
  next->reset();
  std::filesystem::remove_all(root);
  if (!json_path.empty()) {
    std::ofstream out(json_path, std::ios::trunc);
    out << "{\"writers\": " << kWriters << ", \"seconds\": " << seconds
        << ", \"local_events_per_s\": " << local_rate
        << ", \"jetstream_events_per_s\": " << js_rate
        << ", \"takeover_events\": " << on_stream << ", \"takeover_ms\": " << takeover_ms
        << "}\n";
    if (!out) return std::fprintf(stderr, "cannot write %s\n", json_path.c_str()), 1;
  }
  return 0;
}

}  // namespace
}  // namespace statewatch::cluster

int main(int argc, char** argv) {
  double seconds = 5;
  std::string json_path;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--json") == 0) json_path = argv[i + 1];
  }
  return statewatch::cluster::Run(seconds, json_path);
}
