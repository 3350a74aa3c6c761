// `statewatch serve --cluster`: the daemon as the owner or the standby of one partition whose
// log is a NATS JetStream stream (docs/cluster-internals.md,
// "`statewatch serve --cluster … --partition p --role owner|standby`"). Opening as owner folds what
// the data directory has not applied of the stream and fences the previous owner out: starting it
// on a standby's node is the takeover after a restart; `statewatch takeover` is the live one.
//
// Options: --cluster nats://HOST:PORT[,...] (the NATS servers; without it the daemon is a
// single node), --partition p (default 0), --partitions P (default 1), --role owner|standby.
//
// `statewatch cluster follow --cluster URLS --partition p [--partitions P] [--once]`: the
// standby (cluster/standby.h): folds the partition's stream into --data and keeps
// following it (every 50 ms) until SIGINT/SIGTERM; --once stops at the tail. Prints
// {"partition", "position", "fenceEpoch"} whenever its position moves. Exit 0, 1 on a
// runtime error (a broken hash chain: the message names the position), 2 on a usage error.
//
// Not thread-safe: runs once per process, before the daemon opens.
#ifndef STATEWATCH_CLI_CLUSTER_SERVE_H_
#define STATEWATCH_CLI_CLUSTER_SERVE_H_

#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/verb_table.h"
#include "server/cluster_node.h"
#include "server/server_options.h"
#include "statewatch/status.h"

namespace statewatch::cli {

std::vector<OptionHelp> ClusterServeOptionHelp();

// Reads the cluster options; with --cluster, connects to NATS, opens the partition's stream
// and sets options->wrap_log. InvalidArgument naming the flag and value for bad input;
// IOError when no NATS server answers. Without --cluster: nothing changes.
Status AttachCluster(const Args& args, server::ServerOptions* options);

// --cluster-checkpoint-every N: nullopt when absent, InvalidArgument for a bad value.
std::optional<Result<uint64_t>> ClusterCheckpointEvery(const Args& args);

// Partition p's JetStream stream and checkpoint store on the NATS servers `urls`, each on a
// connection of its own (server/cluster_node.h opens one per partition it serves). IOError
// when no NATS server answers; FailedPrecondition in a build without NATS.
Result<server::PartitionLogs> OpenPartitionLogs(const std::string& urls, uint32_t partition);

std::vector<OptionHelp> ClusterFollowOptionHelp();
int RunClusterFollow(Command& command);

// `serve --cluster URLS --partition p --role standby`: runs server::StandbyDaemon on the
// options ReadServeOptions gave (AttachCluster leaves them alone for a standby). Prints
// {"listening", "port"} as serve does; exit 0 after SIGINT/SIGTERM (as the standby or, after a
// takeover, as the owner), 1 on a runtime error.
bool IsStandbyServe(const Args& args);
int RunStandbyServe(Command& command, const server::ServerOptions& options);

// `statewatch takeover --partition p [--url http://HOST:PORT]`: POST /v1/cluster/takeover to
// a standby daemon; prints its answer {"partition", "role", "epoch", "position"}. Exit 1 with
// the daemon's error (409: it is not a standby; 503: the fence failed) or when it cannot be
// reached, 2 on a usage error.
std::vector<OptionHelp> TakeoverOptionHelp();
int RunTakeover(Command& command);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_CLUSTER_SERVE_H_
