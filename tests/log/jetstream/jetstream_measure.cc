// log_jetstream_measure: what JetStreamLog costs on a loopback three-server R3 cluster that
// this program starts itself (scripts/cluster-bench.sh runs it, also with the JetStream store
// on a sync-mounted filesystem). Not a test: it asserts nothing, it prints figures.
//
//   log_jetstream_measure [--store-root DIR] [--seconds S] [--label TEXT]
//
// Figures, each on a fresh partition stream, each for S seconds (default 5):
//   append, one writer, synchronous (Append, CAS + Msg-Id), a commit group of 1 event (~300 B)
//   and of 100 events (~30 KB): appends/s, events/s, p50/p99 latency of an append;
//   the same pipelined (AppendPipelined, 64 resp. 16 records in flight);
//   sealing a frame (ChainWriter: FlatBuffers + SHA-256) of each size;
//   reading back: ReadFrom 8 records at a time (one leader get each) and streamed (one
//   ordered consumer).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "log/append_resolver.h"
#include "log/chain_writer.h"
#include "log/jetstream/jetstream_log.h"
#include "nats_test_cluster.h"

namespace statewatch::log {
namespace {

using SteadyClock = std::chrono::steady_clock;

double Ms(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Args {
  std::string store_root;
  double seconds = 5;
  std::string label = "plain";
};

struct Figure {
  std::string name;
  double per_second = 0;  // appends (or records) per second
  int events_per_record = 1;
  double p50_ms = -1, p99_ms = -1;  // -1: not applicable
};

std::string Cell(double ms) {
  if (ms < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", ms);
  return buf;
}

void Print(const Args& args, const Figure& f) {
  std::printf("%-10s | %-62s | %10.0f | %10.0f | %8s | %8s\n", args.label.c_str(), f.name.c_str(),
              f.per_second, f.per_second * f.events_per_record, Cell(f.p50_ms).c_str(),
              Cell(f.p99_ms).c_str());
  std::fflush(stdout);
}

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

// An owner appending sealed frames for `seconds`; one record = one commit group of `events`.
class Owner {
 public:
  Owner(JetStreamLog& log, uint32_t p, int events)
      : log_(log),
        writer_(*ChainWriter::Make(GenesisChainState(p, 512, 1), 1)),
        body_(static_cast<size_t>(events) * 300, 'e'),
        events_(events) {}

  // Appends the owner's fence. A new stream may take a moment to elect its leader: the
  // append is settled with retries.
  Status Fence() {
    SealedFrame fence = *writer_.SealFence("measure");
    AppendOptions o;
    o.dedupe_id = fence.dedupe_id;
    Result<LogPosition> r = AppendResolved(log_, fence.bytes, o, {40, RetryPolicy::Backoff()});
    if (!r.ok()) return r.status();
    last_ = *r;
    writer_.Advance(fence);
    return Status::OK();
  }

  Figure Synchronous(double seconds) {
    std::vector<double> lat;
    const auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
    const auto start = SteadyClock::now();
    while (SteadyClock::now() < end) {
      SealedFrame f = *writer_.SealCommitGroup(body_, events_);
      AppendOptions o;
      o.expected_last = last_;
      o.dedupe_id = f.dedupe_id;
      const auto t0 = SteadyClock::now();
      Result<LogPosition> r = log_.Append(f.bytes, o);
      lat.push_back(Ms(SteadyClock::now() - t0));
      if (!r.ok()) {
        std::fprintf(stderr, "append failed: %s\n", r.status().ToString().c_str());
        break;
      }
      last_ = *r;
      writer_.Advance(f);
    }
    const double secs = Ms(SteadyClock::now() - start) / 1000;
    return {"", lat.size() / secs, events_, Percentile(lat, 0.5), Percentile(lat, 0.99)};
  }

  Figure Pipelined(double seconds, size_t depth) {
    std::vector<double> lat;
    size_t appended = 0;
    const auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
    const auto start = SteadyClock::now();
    while (SteadyClock::now() < end) {
      std::vector<SealedFrame> frames;
      ChainWriter ahead = writer_;
      for (size_t i = 0; i < depth; ++i) {
        frames.push_back(*ahead.SealCommitGroup(body_, events_));
        ahead.Advance(frames.back());
      }
      std::vector<PendingAppend> batch;
      for (const SealedFrame& f : frames) batch.push_back({f.bytes, f.dedupe_id});
      const auto t0 = SteadyClock::now();
      std::vector<Result<LogPosition>> results = log_.AppendPipelined(batch, last_);
      lat.push_back(Ms(SteadyClock::now() - t0));
      if (!results.back().ok()) {
        std::fprintf(stderr, "pipelined append failed: %s\n",
                     results.back().status().ToString().c_str());
        break;
      }
      last_ = *results.back();
      writer_ = ahead;
      appended += depth;
    }
    const double secs = Ms(SteadyClock::now() - start) / 1000;
    // Latency: of a whole batch (the wait of its first record's caller).
    return {"", appended / secs, events_, Percentile(lat, 0.5), Percentile(lat, 0.99)};
  }

  Figure Seal(double seconds) {
    size_t n = 0;
    const auto end = SteadyClock::now() + std::chrono::duration<double>(seconds);
    const auto start = SteadyClock::now();
    while (SteadyClock::now() < end) {
      for (int i = 0; i < 100; ++i, ++n) {
        SealedFrame f = *writer_.SealCommitGroup(body_, events_);
        if (f.bytes.empty()) std::abort();
        (void)HashFrame(f.bytes);  // what Advance() adds
      }
    }
    const double secs = Ms(SteadyClock::now() - start) / 1000;
    return {"", n / secs, events_, 1000.0 * secs / n, -1};  // the mean, in the p50 column
  }

  LogPosition last() const { return last_; }

 private:
  JetStreamLog& log_;
  ChainWriter writer_;
  std::string body_;
  int events_;
  LogPosition last_ = 0;
};

Figure ReadBack(JetStreamLog& log, LogPosition tail, size_t page) {
  size_t n = 0;
  const auto start = SteadyClock::now();
  for (LogPosition next = 1; next <= tail;) {
    Result<std::vector<LogRecord>> r = log.ReadFrom(next, page);
    if (!r.ok() || r->empty()) {
      std::fprintf(stderr, "read failed at %llu: %s\n", static_cast<unsigned long long>(next),
                   r.ok() ? "empty" : r.status().ToString().c_str());
      break;
    }
    next = r->back().position + 1;
    n += r->size();
  }
  const double secs = Ms(SteadyClock::now() - start) / 1000;
  return {"", n / secs, 1, -1, -1};
}

int Fail(const char* what, const Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  return 1;
}

int Run(const Args& args) {
  testing::NatsTestClusterOptions co;
  co.store_root = args.store_root;
  Result<std::unique_ptr<testing::NatsTestCluster>> cluster = testing::NatsTestCluster::Start(co);
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str());
    return 1;
  }
  NatsConnectionOptions no;
  no.servers = (*cluster)->Urls();
  Result<std::shared_ptr<NatsConnection>> connected = NatsConnection::Connect(no);
  if (!connected.ok()) return Fail("connect", connected.status());
  std::shared_ptr<NatsConnection> conn = *connected;
  uint32_t partition = 0;
  auto open = [&]() {
    JetStreamLogOptions o;
    o.partition = partition++;
    return JetStreamLog::Open(conn, o);
  };
  std::printf("%-10s | %-62s | %10s | %10s | %8s | %8s\n", "store", "figure", "records/s",
              "events/s", "p50 ms", "p99 ms");
  for (int events : {1, 100}) {
    const std::string size = events == 1 ? "1 event (~300 B)" : "100 events (~30 KB)";
    Result<std::unique_ptr<JetStreamLog>> log = open();
    if (!log.ok()) return Fail("open", log.status());
    Owner sync_owner(**log, partition - 1, events);
    if (Status s = sync_owner.Fence(); !s.ok()) return Fail("fence", s);
    Figure f = sync_owner.Synchronous(args.seconds);
    f.name = "append sync, " + size;
    Print(args, f);
    const size_t depth = events == 1 ? 64 : 16;
    Result<std::unique_ptr<JetStreamLog>> plog = open();
    if (!plog.ok()) return Fail("open", plog.status());
    Owner pipe_owner(**plog, partition - 1, events);
    if (Status s = pipe_owner.Fence(); !s.ok()) return Fail("fence", s);
    f = pipe_owner.Pipelined(args.seconds, depth);
    f.name = "append pipelined x" + std::to_string(depth) + ", " + size + " (batch ms)";
    Print(args, f);
    f = sync_owner.Seal(1);
    f.name = "seal a frame + SHA-256, " + size + " (mean ms)";
    Print(args, f);
    if (events == 1) {
      f = ReadBack(**plog, pipe_owner.last(), 8);
      f.name = "read, 8 records per ReadFrom (leader gets)";
      Print(args, f);
      f = ReadBack(**plog, pipe_owner.last(), 1 << 20);
      f.name = "read, streamed (ordered consumer)";
      Print(args, f);
    }
  }
  return 0;
}

}  // namespace
}  // namespace statewatch::log

int main(int argc, char** argv) {
  statewatch::log::Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--store-root" && i + 1 < argc) {
      args.store_root = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      args.seconds = std::atof(argv[++i]);
    } else if (a == "--label" && i + 1 < argc) {
      args.label = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--store-root DIR] [--seconds S] [--label TEXT]\n", argv[0]);
      return 2;
    }
  }
  if (args.seconds <= 0) {
    std::fprintf(stderr, "--seconds must be positive (got %g)\n", args.seconds);
    return 2;
  }
  return statewatch::log::Run(args);
}
