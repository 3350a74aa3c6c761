// The control plane from the command line (docs/cluster-internals.md, "Ownership on etcd"):
//
// `statewatch serve --cluster NATS --etcd ETCD --node-id ID --partitions P
//      [--cluster-name NAME] [--lease-ttl S]`: a node under the control plane
//   (server/cluster_node.h). Prints {"listening", "port", "node"} once its own port
//   listens; exit 0 after SIGINT/SIGTERM, 1 on a runtime error (etcd unreachable at start,
//   another running node with this id, a partition count that differs from the cluster's).
//
// `statewatch cluster status|move|drain --etcd ETCD [--cluster-name NAME] ...`: what
//   control/operator.h reads and asks for, printed as one JSON line. Exit 1 with the reason
//   (etcd unreachable, no such node, a timeout naming where the move stood), 2 on a usage
//   error.
//
// Not thread-safe: one command, one thread.
#ifndef STATEWATCH_CLI_CLUSTER_CONTROL_H_
#define STATEWATCH_CLI_CLUSTER_CONTROL_H_

#include <vector>

#include "cli/args.h"
#include "cli/verb_table.h"
#include "server/server_options.h"

namespace statewatch::cli {

// The serve options of a control-plane node (added to serve's own).
std::vector<OptionHelp> ClusterNodeOptionHelp();
// True when serve was given --etcd.
bool IsNodeServe(const Args& args);
int RunNodeServe(Command& command, const server::ServerOptions& options);

std::vector<OptionHelp> ClusterStatusOptionHelp();
std::vector<OptionHelp> ClusterMoveOptionHelp();
std::vector<OptionHelp> ClusterDrainOptionHelp();
int RunClusterStatus(Command& command);
int RunClusterMove(Command& command);
int RunClusterDrain(Command& command);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_CLUSTER_CONTROL_H_
