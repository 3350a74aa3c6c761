// PartitionRouter: any node answers any session's request (docs/cluster-internals.md,
// "One address per node: any node answers any session"). A node's own port
// (server/cluster_node.h) hands it every request that is not one of the node's own routes;
// the router finds the partitions the request concerns and forwards it over HTTP to each
// one's owner — the slot URL the owner publishes in its etcd record — relaying the answer
// with two headers, so that a client may go direct next time:
//   X-Statewatch-Partition: p      X-Statewatch-Owner: <node id>
//
// Which partitions, by route (the partition of a session is XXH64(agentId) mod P):
//   one session   /v1/sessions/{key}[/…] (agent: ?agentId=, X-Agent-Id, the body's agentId,
//                 else the key's own or "main"); POST /v1/watches and GET /v1/cursors (the
//                 target's: the cursor lives with its target); /v1/upstream-links/{key} and
//                 POST /v1/upstream-links (sessionKey); the session tools (the caller's, from
//                 X-Session-Key and X-Agent-Id — sessions_send and the rest naming a
//                 session of another partition answer 421 misdirected there), except:
//   sessions_list   every partition, under the caller's visibility: the caller's home
//                 partition resolves it (POST /v1/internal/caller-context: the tool policy,
//                 the sandbox clamp, the agent-to-agent settings), every partition answers
//                 a window of its list under it (POST /v1/internal/tools/sessions_list), the
//                 windows are merged in the single node's order and cut into the page, with
//                 the single node's byte budget. `cursor` (the nextCursor of a page: opaque
//                 base64url JSON of the last row's sort key) continues after that row; a bad
//                 one is 400 invalid_parameter naming it. A partition that cannot answer
//                 fails the list with 503 unavailable (a list must not silently miss rows);
//   session_status, sessions_history naming an agent-scoped key of another partition: the
//                 home partition resolves the caller's context as above and the session's
//                 partition answers under it (POST /v1/internal/tools/{tool});
//   /v1/internal/…  403: only between the cluster's own processes (server/internal_call.h);
//   POST /v1/events  the events' sessions; a batch whose events span partitions is refused
//                 with 400 cross_partition_batch naming two of them (a batch is atomic only
//                 within one partition), and nothing is written;
//   POST /v1/versions  split by partition, asked in parallel, answered in the request's order;
//   GET /v1/notices, POST /v1/notices/drain  the partitions the watcher directory lists
//                 (a superset of those holding the watcher's cursors; every partition when
//                 it cannot be read), in parallel; the notices
//                 in partition order. A drain carries the client's X-Request-Id, else one
//                 the node mints (answered in X-Request-Id), to every partition, and asks a
//                 partition again under it while its answer was lost after sending or it
//                 answers 409 request_in_progress (within retry_for): its acknowledged
//                 notices are only in its recorded answer. A partition that does not answer
//                 leaves its notices pending and the answer says "incomplete": true with
//                 "missingPartitions" and "partitionErrors" (each one's status and error); a
//                 partition's refusal (4xx) is its part of the answer, never the whole answer
//                 (the others' acknowledged notices are only in it), unless every partition
//                 refused; X-Statewatch-Owners lists "p=node" for those that answered;
//   /v1/runs/{id}/…, POST /v1/deliveries/{id}/ack  ?partition=p, else each partition in turn
//                 until one does not answer 404 (ids are not partitioned);
//   GET /v1/openapi.json, GET /v1/clock  any owner;
//   every other route (export, verify, stats, prune, sweep, backup, rebuild, the upstream-link
//                 list, POST /v1/clock)  ?partition=p (400 without it: they act on one
//                 partition's engine).
// The WebSocket feeds are relayed by the node (server/stream_relay.h); a request for one
// without an upgrade gets 426 here.
//
// A fan-out asks each partition once, without retries: a partition failing over is reported
// missing rather than holding the answer up (an owner the node has not read yet is read from
// the directory before that one attempt: OwnerForAttempt).
//
// Forwarding: a request refused before it landed — the owner could not be reached, or answered
// 503 standby / switching / partition_moved (a failover or a move under way) — is sent again
// to the owner the directory names after a refresh, until `retry_for` has passed (then 503
// with Retry-After: 1). A request whose answer was lost after it was sent is answered 502
// answer_lost: its outcome is unknown, and the client retries with the same dedupe key.
//
// Thread-safe: Route runs concurrently on the listener's connection threads.
#ifndef STATEWATCH_SERVER_PARTITION_ROUTER_H_
#define STATEWATCH_SERVER_PARTITION_ROUTER_H_

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "net/http_listener.h"

namespace statewatch::server {

// Where a partition's owner answers.
struct OwnerAddress {
  std::string node;  // its node id
  std::string url;   // its slot URL: http://HOST:PORT
};

// The owner of partition p as last read, or nullopt while it has none. With refresh, the
// directory is read again first (after a refusal).
using OwnerLookup = std::function<std::optional<OwnerAddress>(uint32_t partition, bool refresh)>;

// The owner to try on attempt `attempt` (0 first) of a forwarded call: the directory as last
// read on the first attempt — read again at once when it names no owner yet (a node that
// started a moment ago; a call of one attempt must not fail for that) — and read again before
// every later attempt (they follow a refusal).
std::optional<OwnerAddress> OwnerForAttempt(const OwnerLookup& owner, uint32_t partition,
                                            int64_t attempt);

// One HTTP exchange with an owner (SendOverHttp in production; a fake in tests).
using OwnerSend = std::function<Result<net::HttpAnswer>(
    const std::string& url, const std::string& method, const std::string& target,
    const std::string& body, const net::HttpRequestOptions& options)>;

// The one partition a body of one item, or an array of items, names by each item's
// (key_field, agent_field), as the engine resolves the session: nullopt when no item names a
// session the engine would accept (any owner refuses the body alike); InvalidArgument with
// the message of a cross_partition_batch answer ("events[0] belongs to partition 1 and
// events[2] to partition 2 of 3: …") when two items name different partitions, since an
// array is atomic only within one. `label` names the items in that message.
Result<std::optional<uint32_t>> OnePartitionOfBatch(const boost::json::value& body,
                                                    std::string_view label,
                                                    std::string_view key_field,
                                                    std::string_view agent_field,
                                                    uint32_t partitions);

// net::HttpRequest, as an OwnerSend.
Result<net::HttpAnswer> SendOverHttp(const std::string& url, const std::string& method,
                                     const std::string& target, const std::string& body,
                                     const net::HttpRequestOptions& options);

struct PartitionRouterOptions {
  uint32_t partitions = 1;
  OwnerLookup owner;
  OwnerSend send;
  // Waits between attempts (a real sleep in production; a manual clock in tests).
  std::function<void(std::chrono::milliseconds)> sleep;
  // How long a request refused before it landed is retried; each wait is retry_wait.
  std::chrono::milliseconds retry_for{10000};
  std::chrono::milliseconds retry_wait{100};
  // One forwarded exchange; a session tool's may wait longer (its own timeoutSeconds).
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds tool_timeout{330000};
  // How long a fan-out (notices, drain, versions) waits for each partition (A5).
  std::chrono::milliseconds fanout_timeout{1000};
  // The partitions that may hold cursors of `watcher` (its home partition's watcher
  // directory, server/watcher_sagas.h), or nullopt when that could not be read. A peek or
  // drain asks only those; unset or nullopt: every partition.
  std::function<std::optional<std::vector<uint32_t>>(const std::string& watcher)>
      watcher_partitions;
  // The cluster's secret (server/internal_call.h): the router signs its internal calls with
  // it. Empty: sessions_list is the caller's partition's and session_status /
  // sessions_history of another partition's session answer 421 (no internal calls).
  std::string secret;
};

// {"error": {"code", "message"}} with `status`: how a node's own port refuses.
net::ListenerAnswer JsonErrorAnswer(int status, const std::string& code,
                                    const std::string& message);

class PartitionRouter {
 public:
  explicit PartitionRouter(PartitionRouterOptions options);

  net::ListenerAnswer Route(const net::ListenerRequest& request) const;

 private:
  struct Target;
  // `internal_target`: a signed internal call to that target (POST) with the request's
  // headers, instead of the request itself.
  net::ListenerAnswer ToPartition(uint32_t partition, const net::ListenerRequest& request,
                                  const std::string& body, std::chrono::milliseconds timeout,
                                  std::chrono::milliseconds retry_for,
                                  const std::string* internal_target = nullptr) const;
  // Reads across partitions (server/partition_router_reads.cc).
  net::ListenerAnswer CallerContext(uint32_t home, const net::ListenerRequest& request,
                                    const std::string& tool) const;
  net::ListenerAnswer ListAcross(const net::ListenerRequest& request, uint32_t home) const;
  net::ListenerAnswer RemoteRead(const net::ListenerRequest& request, const std::string& tool,
                                 uint32_t home, uint32_t partition) const;
  std::vector<net::ListenerAnswer> RemoteReads(const net::ListenerRequest& request,
                                               const std::string& tool, uint32_t home,
                                               const std::vector<uint32_t>& partitions,
                                               bool widen = false) const;
  // session_status / sessions_history naming a session id (or a bare key): the caller's home
  // first; when it answers 404 or 403, every other partition too (partition_router_reads.cc).
  net::ListenerAnswer ReadAnywhere(const net::ListenerRequest& request, const std::string& tool,
                                   uint32_t home) const;
  // sessions_send with `label` and an `agentId` of partition `partition`: the label looked
  // up there, then the call to the home by key (partition_router_reads.cc).
  net::ListenerAnswer SendByLabel(const net::ListenerRequest& request, uint32_t home,
                                  uint32_t partition) const;
  // sessions_send naming a session id its home does not know: looked up in the other
  // partitions, then the call to the home by key, under an X-Request-Id made from the
  // client's so that a retry replays it (partition_router_reads.cc).
  net::ListenerAnswer SendBySessionId(const net::ListenerRequest& request, uint32_t home) const;
  // Fan-outs (server/partition_router.cc).
  net::ListenerAnswer Notices(const net::ListenerRequest& request) const;
  // The partitions a peek or drain asks, ascending: those the watcher directory lists, else
  // all of them.
  std::vector<uint32_t> NoticePartitions(const net::ListenerRequest& request) const;
  net::ListenerAnswer Versions(const net::ListenerRequest& request) const;
  net::ListenerAnswer Probe(const net::ListenerRequest& request) const;

  const PartitionRouterOptions options_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_PARTITION_ROUTER_H_
