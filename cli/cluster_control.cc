#include "cli/cluster_control.h"

#include <spdlog/spdlog.h>

#include "cli/cluster_serve.h"
#include "cli/command.h"
#include "control/controller.h"
#include "control/etcd_client.h"
#include "control/operator.h"
#include "server/cluster_node.h"

namespace statewatch::cli {
namespace {

OptionHelp EtcdOption() {
  return {"etcd", "http://HOST:PORT[,...]", "",
          "The etcd members' client URLs (the control plane); a call fails over between them.",
          true};
}
OptionHelp ClusterNameOption() {
  return {"cluster-name", "NAME", "statewatch",
          "The cluster's name: its keys in etcd are under /sw/NAME/."};
}
OptionHelp TimeoutOption(const char* fallback) {
  return {"timeout-ms", "MS", fallback, "How long to wait for the controller to finish."};
}

struct ControlArgs {
  std::shared_ptr<control::EtcdClient> etcd;
  control::ClusterKeys keys{"statewatch"};
  std::string cluster;
};

Result<ControlArgs> ReadControlArgs(const Args& args) {
  auto urls = args.Get("etcd");
  if (!urls) return Status::InvalidArgument("missing --etcd http://HOST:PORT[,...]");
  auto endpoints = control::ParseEndpoints(*urls);
  if (!endpoints.ok()) return endpoints.status();
  ControlArgs out;
  out.cluster = args.Get("cluster-name").value_or("statewatch");
  if (Status s = control::ValidateNodeId(out.cluster); !s.ok()) {
    return Status::InvalidArgument("--cluster-name must be 1 to 64 characters of A-Z a-z 0-9 . _ - (got \"" +
                                   out.cluster + "\")");
  }
  out.keys = control::ClusterKeys(out.cluster);
  control::EtcdOptions eo;
  eo.endpoints = *endpoints;
  auto etcd = control::EtcdClient::Make(eo);
  if (!etcd.ok()) return etcd.status();
  out.etcd = std::move(*etcd);
  return out;
}

Result<control::WaitOptions> ReadWait(const Args& args, int64_t fallback_ms) {
  control::WaitOptions wait;
  wait.timeout = std::chrono::milliseconds(fallback_ms);
  if (auto text = args.Get("timeout-ms")) {
    auto n = ParseIntOption("timeout-ms", *text);
    if (!n.ok()) return n.status();
    if (*n < 1) return Status::InvalidArgument("--timeout-ms must be at least 1 (got " + *text + ")");
    wait.timeout = std::chrono::milliseconds(*n);
  }
  return wait;
}

// What a move or a drain reads: ReadControlArgs, then ReadWait into *wait.
Result<ControlArgs> ReadRequestArgs(const Args& args, int64_t fallback_ms,
                                    control::WaitOptions* wait) {
  auto control = ReadControlArgs(args);
  if (!control.ok()) return control.status();
  auto read = ReadWait(args, fallback_ms);
  if (!read.ok()) return read.status();
  *wait = *read;
  return control;
}

int Print(Command& c, const Result<std::string>& answer) {
  if (!answer.ok()) {
    if (answer.status().IsInvalidArgument()) return UsageError(c, answer.status().message());
    return RuntimeError(c, answer.status());
  }
  c.out << *answer << '\n';
  return kExitOk;
}

}  // namespace

std::vector<OptionHelp> ClusterNodeOptionHelp() {
  return {
      {"etcd", "http://HOST:PORT[,...]", "",
       "With --cluster: run as a node under the control plane on these etcd members — a "
       "lease, the elected controller, partitions assigned and failed over automatically "
       "(no --partition or --role then)."},
      {"node-id", "ID", "", "With --etcd: this node's name in the cluster (A-Z a-z 0-9 . _ -)."},
      ClusterNameOption(),
      {"lease-ttl", "SECONDS", "5",
       "With --etcd: the node's lease; a node that stops keeping it alive loses its "
       "partitions after this long."},
  };
}

bool IsNodeServe(const Args& args) { return args.Has("etcd"); }

int RunNodeServe(Command& c, const server::ServerOptions& options) {
  auto control = ReadControlArgs(c.args);
  if (!control.ok()) return UsageError(c, control.status().message());
  auto nats = c.args.Get("cluster");
  if (!nats) return UsageError(c, "--etcd needs --cluster nats://HOST:PORT[,...] (the partitions' logs)");
  for (const char* flag : {"partition", "role"}) {
    if (c.args.Has(flag)) {
      return UsageError(c, "--" + std::string(flag) +
                               " is decided by the controller under --etcd; leave it out");
    }
  }
  if (!options.tls_cert_file.empty() || !options.tls_client_ca_file.empty()) {
    // The node's own port and its forwarding to the slots are plain HTTP (docs/http-api.md).
    return UsageError(c, "--tls-cert is not supported with --etcd: a node's port speaks plain "
                         "HTTP; put a TLS-terminating proxy in front of it");
  }
  auto node_id = c.args.Get("node-id");
  if (!node_id) return UsageError(c, "--etcd needs --node-id ID");
  server::ClusterNodeOptions no;
  no.server = options;
  no.etcd = control->etcd->endpoints();
  no.cluster = control->cluster;
  no.node_id = *node_id;
  auto partitions = c.args.Get("partitions");
  if (!partitions) return UsageError(c, "--etcd needs --partitions P (the same on every node)");
  auto p = ParseIntOption("partitions", *partitions);
  if (!p.ok()) return UsageError(c, p.status().message());
  if (*p < 1 || *p > 65535) {
    return UsageError(c, "--partitions must be from 1 to 65535 (got " + *partitions + ")");
  }
  no.partitions = static_cast<uint32_t>(*p);
  if (auto ttl = c.args.Get("lease-ttl")) {
    auto n = ParseIntOption("lease-ttl", *ttl);
    if (!n.ok()) return UsageError(c, n.status().message());
    if (*n < 1 || *n > 3600) return UsageError(c, "--lease-ttl must be from 1 to 3600 (got " + *ttl + ")");
    no.lease_ttl_seconds = *n;
  }
  if (auto every = ClusterCheckpointEvery(c.args)) {
    if (!every->ok()) return UsageError(c, every->status().message());
    no.checkpoint_every = **every;
    no.server.checkpoint_min_records = std::min<uint64_t>(no.server.checkpoint_min_records, **every);
  }
  const std::string urls = *nats;
  no.open_partition = [urls](uint32_t partition) { return OpenPartitionLogs(urls, partition); };
  auto node = server::ClusterNode::Start(std::move(no));
  if (!node.ok()) {
    if (node.status().IsInvalidArgument()) return UsageError(c, node.status().message());
    return RuntimeError(c, node.status());
  }
  (*node)->HandleSignals();
  spdlog::info("event=listening role=node addr={}:{} node={}", options.host, (*node)->port(), *node_id);
  c.out << "{\"listening\":\"" << options.host << ":" << (*node)->port()
        << "\",\"port\":" << (*node)->port() << ",\"node\":\"" << *node_id << "\"}\n";
  c.out.flush();
  (*node)->Run();
  node->reset();
  return kExitOk;
}

std::vector<OptionHelp> ClusterStatusOptionHelp() { return {EtcdOption(), ClusterNameOption()}; }

std::vector<OptionHelp> ClusterMoveOptionHelp() {
  return {EtcdOption(), ClusterNameOption(),
          {"partition", "p", "", "The partition to move.", true},
          {"to", "ID", "", "The node to move it to (a live node).", true},
          TimeoutOption("60000")};
}

std::vector<OptionHelp> ClusterDrainOptionHelp() {
  return {EtcdOption(), ClusterNameOption(),
          {"node", "ID", "", "The node to move every partition and standby off.", true},
          TimeoutOption("120000")};
}

int RunClusterStatus(Command& c) {
  auto control = ReadControlArgs(c.args);
  if (!control.ok()) return UsageError(c, control.status().message());
  auto view = control::ReadClusterView(*control->etcd, control->keys);
  if (!view.ok()) return RuntimeError(c, view.status());
  return Print(c, control::ClusterStatusJson(*view, control->cluster));
}

int RunClusterMove(Command& c) {
  control::WaitOptions wait;
  auto control = ReadRequestArgs(c.args, 60000, &wait);
  if (!control.ok()) return UsageError(c, control.status().message());
  auto text = c.args.Get("partition");
  auto to = c.args.Get("to");
  if (!text || !to) return UsageError(c, "cluster move needs --partition p and --to NODE");
  auto p = ParseIntOption("partition", *text);
  if (!p.ok()) return UsageError(c, p.status().message());
  if (*p < 0 || *p > 65535) return UsageError(c, "--partition must be from 0 to 65535 (got " + *text + ")");
  return Print(c, control::RequestMove(*control->etcd, control->keys, static_cast<uint32_t>(*p),
                                       *to, wait));
}

int RunClusterDrain(Command& c) {
  control::WaitOptions wait;
  auto control = ReadRequestArgs(c.args, 120000, &wait);
  if (!control.ok()) return UsageError(c, control.status().message());
  auto node = c.args.Get("node");
  if (!node) return UsageError(c, "cluster drain needs --node NODE");
  return Print(c, control::RequestDrain(*control->etcd, control->keys, *node, wait));
}

}  // namespace statewatch::cli
