#include "cli/cluster_serve.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/remote.h"

#ifdef STATEWATCH_HAVE_NATS
#include "cluster/replicated_log.h"
#include "cluster/standby.h"
#include "log/jetstream/jetstream_checkpoints.h"
#include "log/jetstream/jetstream_log.h"
#include "log/jetstream/nats_connection.h"
#include "server/cluster_routes.h"
#include "server/standby_daemon.h"
#endif

namespace statewatch::cli {
namespace {

Result<uint32_t> PartitionOption(const Args& args, const char* name, int64_t fallback,
                                 int64_t min) {
  auto text = args.Get(name);
  if (!text) return static_cast<uint32_t>(fallback);
  auto n = ParseIntOption(name, *text);
  if (!n.ok()) return n.status();
  if (*n < min || *n > 65535) {
    return Status::InvalidArgument("--" + std::string(name) + " must be from " +
                                   std::to_string(min) + " to 65535 (got " + *text + ")");
  }
  return static_cast<uint32_t>(*n);
}

struct PartitionArgs {
  std::string urls;
  uint32_t partition = 0;
  uint32_t partitions = 1;
};

Result<PartitionArgs> ReadPartitionArgs(const Args& args) {
  PartitionArgs out;
  out.urls = args.Get("cluster").value_or("");
  auto partitions = PartitionOption(args, "partitions", 1, 1);
  if (!partitions.ok()) return partitions.status();
  auto partition = PartitionOption(args, "partition", 0, 0);
  if (!partition.ok()) return partition.status();
  if (*partition >= *partitions) {
    return Status::InvalidArgument("--partition " + std::to_string(*partition) +
                                   " must be below --partitions " + std::to_string(*partitions));
  }
  out.partition = *partition;
  out.partitions = *partitions;
  return out;
}

#ifdef STATEWATCH_HAVE_NATS
// Store::Open(connection, options with the partition) on a connection of its own to the
// partition's NATS servers: the stream and the checkpoints (SW_CKPT,
// docs/cluster-internals.md, "Checkpoints and purge") each get one, so that a checkpoint's
// publish never queues behind the commit path's appends.
template <typename Interface, typename Store, typename StoreOptions>
Result<std::shared_ptr<Interface>> OpenOnOwnConnection(const PartitionArgs& p) {
  log::NatsConnectionOptions co;
  co.servers = p.urls;
  auto connection = log::NatsConnection::Connect(co);
  if (!connection.ok()) return connection.status();
  StoreOptions o;
  o.partition = p.partition;
  auto store = Store::Open(*connection, o);
  if (!store.ok()) return store.status();
  return std::shared_ptr<Interface>(std::move(*store));
}

Result<std::shared_ptr<log::LogBackend>> OpenStream(const PartitionArgs& p) {
  return OpenOnOwnConnection<log::LogBackend, log::JetStreamLog, log::JetStreamLogOptions>(p);
}

Result<std::shared_ptr<log::CheckpointStore>> OpenCheckpoints(const PartitionArgs& p) {
  return OpenOnOwnConnection<log::CheckpointStore, log::JetStreamCheckpoints,
                             log::JetStreamCheckpointsOptions>(p);
}

// --cluster-checkpoint-every: sets the cluster's and the engine's checkpoint intervals.
Status ReadCheckpointEvery(const Args& args, server::ServerOptions* options,
                           cluster::ReplicatedLogOptions* log) {
  auto every = ClusterCheckpointEvery(args);
  if (!every) return Status::OK();
  if (!every->ok()) return every->status();
  log->checkpoint_every = **every;
  options->checkpoint_min_records = std::min<uint64_t>(options->checkpoint_min_records, **every);
  return Status::OK();
}

std::atomic<bool> stop_following{false};
extern "C" void StopFollowing(int) { stop_following = true; }
#endif

}  // namespace

std::optional<Result<uint64_t>> ClusterCheckpointEvery(const Args& args) {
  auto text = args.Get("cluster-checkpoint-every");
  if (!text) return std::nullopt;
  auto n = ParseIntOption("cluster-checkpoint-every", *text);
  if (!n.ok()) return Result<uint64_t>(n.status());
  if (*n < 1) {
    return Result<uint64_t>(Status::InvalidArgument(
        "--cluster-checkpoint-every must be at least 1 (got " + *text + ")"));
  }
  return Result<uint64_t>(static_cast<uint64_t>(*n));
}

Result<server::PartitionLogs> OpenPartitionLogs(const std::string& urls, uint32_t partition) {
#ifdef STATEWATCH_HAVE_NATS
  PartitionArgs p;
  p.urls = urls;
  p.partition = partition;
  auto stream = OpenStream(p);
  if (!stream.ok()) return stream.status();
  auto checkpoints = OpenCheckpoints(p);
  if (!checkpoints.ok()) return checkpoints.status();
  return server::PartitionLogs{*stream, *checkpoints};
#else
  (void)partition;
  return Status::FailedPrecondition("--cluster " + urls +
                                    ": this build has no NATS support (STATEWATCH_WITH_NATS=OFF)");
#endif
}

std::vector<OptionHelp> ClusterServeOptionHelp() {
  return {
      {"cluster", "nats://HOST:PORT[,...]", "",
       "Cluster mode: the partition's log is a JetStream stream on these NATS servers; "
       "starting folds what this node missed and fences the previous owner out."},
      {"partition", "p", "0", "The partition this node owns (with --cluster)."},
      {"partitions", "P", "1", "Partitions in the cluster (with --cluster)."},
      {"role", "owner|standby", "owner",
       "With --cluster: owner (fences the previous owner out and serves), or standby (folds "
       "the stream continuously, serves reads, refuses writes with 503 until "
       "`statewatch takeover` makes it the owner)."},
      {"cluster-checkpoint-every", "N", "100000",
       "With --cluster: write a checkpoint of this node's state to SW_CKPT and purge the "
       "stream below it once N stream positions were applied since the last one (the "
       "engine's own checkpoint then runs at least every N records)."},
  };
}

Status AttachCluster(const Args& args, server::ServerOptions* options) {
  auto urls = args.Get("cluster");
  if (!urls) {
    for (const char* flag : {"partition", "partitions", "role", "cluster-checkpoint-every",
                             "etcd"}) {
      if (args.Has(flag)) {
        return Status::InvalidArgument("--" + std::string(flag) + " needs --cluster");
      }
    }
  }
  if (!args.Has("etcd")) {
    for (const char* flag : {"node-id", "cluster-name", "lease-ttl"}) {
      if (args.Has(flag)) {
        return Status::InvalidArgument("--" + std::string(flag) + " needs --etcd");
      }
    }
  }
  if (!urls) return Status::OK();
  if (args.Has("etcd")) return Status::OK();  // RunNodeServe: the controller assigns roles
  std::string role = args.Get("role").value_or("owner");
  if (role != "owner" && role != "standby") {
    return Status::InvalidArgument("--role must be owner or standby (got \"" + role + "\")");
  }
  auto p = ReadPartitionArgs(args);
  if (!p.ok()) return p.status();
#ifdef STATEWATCH_HAVE_NATS
  if (role == "standby") return Status::OK();  // RunStandbyServe opens the stream
  auto stream = OpenStream(*p);
  if (!stream.ok()) return stream.status();
  cluster::ReplicatedLogOptions ro;
  ro.partition = p->partition;
  ro.partitions = p->partitions;
  ro.node = options->host + ":" + std::to_string(options->port);
  ro.state = std::make_shared<cluster::PartitionState>(p->partition);
  SW_RETURN_IF_ERROR(ReadCheckpointEvery(args, options, &ro));
  auto checkpoints = OpenCheckpoints(*p);
  if (!checkpoints.ok()) return checkpoints.status();
  ro.checkpoints = *checkpoints;
  options->gate = std::make_shared<server::ClusterGate>(ro.state, server::ClusterGate::Hooks{});
  options->wrap_log = cluster::OwnerLog(*stream, ro);
  options->partition = p->partition;  // the engine numbers n * P + p
  options->partitions = p->partitions;
  spdlog::info("event=cluster_owner servers={} partition={} partitions={}", *urls,
               p->partition, p->partitions);
  return Status::OK();
#else
  return Status::InvalidArgument("--cluster " + *urls +
                                 ": this build has no NATS support (STATEWATCH_WITH_NATS=OFF)");
#endif
}

std::vector<OptionHelp> ClusterFollowOptionHelp() {
  return {
      {"cluster", "nats://HOST:PORT[,...]", "", "The NATS servers holding the stream.", true},
      {"partition", "p", "0", "The partition to follow."},
      {"partitions", "P", "1", "Partitions in the cluster."},
      {"once", "", "off", "Stop at the stream's tail instead of following it."},
  };
}

int RunClusterFollow(Command& c) {
  auto p = ReadPartitionArgs(c.args);
  if (!p.ok()) return UsageError(c, p.status().message());
  if (p->urls.empty()) return UsageError(c, "cluster follow needs --cluster nats://HOST:PORT");
#ifdef STATEWATCH_HAVE_NATS
  auto stream = OpenStream(*p);
  if (!stream.ok()) return RuntimeError(c, stream.status());
  auto checkpoints = OpenCheckpoints(*p);
  if (!checkpoints.ok()) return RuntimeError(c, checkpoints.status());
  cluster::FoldOptions fold;
  fold.checkpoints = *checkpoints;
  auto standby = cluster::Standby::Open(c.global.data_dir, *stream, p->partition, p->partitions,
                                        std::move(fold));
  if (!standby.ok()) return RuntimeError(c, standby.status());
  const std::string once_value = c.args.Get("once").value_or("false");
  if (once_value != "true" && once_value != "false") {
    return UsageError(c, "--once must be true or false (got \"" + once_value + "\")");
  }
  const bool once = once_value == "true";
  std::signal(SIGINT, StopFollowing);
  std::signal(SIGTERM, StopFollowing);
  uint64_t printed = ~uint64_t{0};
  while (!stop_following) {
    Status st = (*standby)->CatchUp();
    if (!st.ok() && (once || st.code() == Status::Code::kCorruption)) return RuntimeError(c, st);
    // Otherwise (a leader election, a lost connection) the next round retries.
    if (!st.ok()) spdlog::warn("event=follow_retry error=\"{}\"", st.ToString());
    const cluster::AppliedState& a = (*standby)->applied();
    if (a.position != printed) {
      c.out << "{\"partition\":" << p->partition << ",\"position\":" << a.position
            << ",\"fenceEpoch\":" << a.chain.fence_epoch << "}\n";
      c.out.flush();
      printed = a.position;
    }
    if (once) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return kExitOk;
#else
  return UsageError(c, "--cluster " + p->urls +
                           ": this build has no NATS support (STATEWATCH_WITH_NATS=OFF)");
#endif
}

}  // namespace statewatch::cli

namespace statewatch::cli {

bool IsStandbyServe(const Args& args) {
  return args.Has("cluster") && args.Get("role").value_or("owner") == "standby";
}

int RunStandbyServe(Command& c, const server::ServerOptions& options) {
  auto p = ReadPartitionArgs(c.args);
  if (!p.ok()) return UsageError(c, p.status().message());
#ifdef STATEWATCH_HAVE_NATS
  auto stream = OpenStream(*p);
  if (!stream.ok()) return RuntimeError(c, stream.status());
  server::StandbyDaemonOptions so;
  so.server = options;
  so.remote = *stream;
  so.log.partition = p->partition;
  so.log.partitions = p->partitions;
  so.log.node = options.host + ":" + std::to_string(options.port);
  if (Status st = ReadCheckpointEvery(c.args, &so.server, &so.log); !st.ok()) {
    return UsageError(c, st.message());
  }
  auto checkpoints = OpenCheckpoints(*p);
  if (!checkpoints.ok()) return RuntimeError(c, checkpoints.status());
  so.log.checkpoints = *checkpoints;
  auto daemon = server::StandbyDaemon::Open(std::move(so));
  if (!daemon.ok()) return RuntimeError(c, daemon.status());
  (*daemon)->HandleSignals();
  spdlog::info("event=listening role=standby addr={}:{} partition={} servers={}", options.host,
               (*daemon)->port(), p->partition, p->urls);
  c.out << "{\"listening\":\"" << options.host << ":" << (*daemon)->port()
        << "\",\"port\":" << (*daemon)->port() << "}\n";
  c.out.flush();
  Status run = (*daemon)->Run();
  daemon->reset();
  if (!run.ok()) return RuntimeError(c, run);
  spdlog::info("event=stopped data={}", options.data_dir);
  return kExitOk;
#else
  (void)options;
  return UsageError(c, "--cluster " + p->urls +
                           ": this build has no NATS support (STATEWATCH_WITH_NATS=OFF)");
#endif
}

std::vector<OptionHelp> TakeoverOptionHelp() {
  return {
      {"partition", "p", "0", "The partition to take over (the standby must serve it)."},
      {"url", "http://HOST:PORT", "--server, else http://127.0.0.1:7411",
       "The standby daemon (`serve --cluster ... --role standby`)."},
  };
}

int RunTakeover(Command& c) {
  auto partition = PartitionOption(c.args, "partition", 0, 0);
  if (!partition.ok()) return UsageError(c, partition.status().message());
  std::string url = c.args.Get("url").value_or(
      c.global.server.empty() ? std::string("http://127.0.0.1:7411") : c.global.server);
  // The fold to the tail, the fence and the restart sweep all run before the answer.
  constexpr int kTakeoverTimeoutMs = 10 * 60 * 1000;
  auto answer = HttpRequest(url, "POST", "/v1/cluster/takeover",
                            "{\"partition\":" + std::to_string(*partition) + "}", c.global.token,
                            kTakeoverTimeoutMs);
  if (!answer.ok()) {
    if (answer.status().IsInvalidArgument()) return UsageError(c, answer.status().message());
    return RuntimeError(c, Status::IOError("daemon at " + url + ": " + answer.status().message()));
  }
  std::string body = answer->body;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  if (answer->status != 200) {
    c.err << "statewatch: takeover of partition " << *partition << " at " << url
          << " refused (HTTP " << answer->status << "): " << body << '\n';
    return kExitRuntimeError;
  }
  c.out << body << '\n';
  return kExitOk;
}

}  // namespace statewatch::cli
