// NatsConnection: one connection to a NATS cluster (nats.c) and its JetStream context,
// shared by every JetStreamLog and checkpoint store of a node — a node serves many
// partitions over one connection. The client reconnects on its own (to any server of the
// list) after a server is lost; calls made meanwhile fail with IOError (outcome unknown).
//
// Also: how nats.c and JetStream errors become statewatch Status values (NatsStatus), and
// the message building and acknowledged publish that JetStreamLog and JetStreamCheckpoints
// share.
//
// Thread-safe (nats.c connections and JetStream contexts are).
#ifndef STATEWATCH_LOG_JETSTREAM_NATS_CONNECTION_H_
#define STATEWATCH_LOG_JETSTREAM_NATS_CONNECTION_H_

#include <nats/nats.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "log/append_resolver.h"
#include "statewatch/status.h"

namespace statewatch::log {

struct NatsConnectionOptions {
  // Comma-separated server URLs: "nats://127.0.0.1:4222,nats://127.0.0.1:4223".
  std::string servers;
  // Shown in the servers' connection lists.
  std::string name = "statewatch";
  int64_t connect_timeout_ms = 2000;
  // How long a JetStream request (publish acknowledgement, stream info, get, purge) waits
  // before it fails with IOError. Longer rides out more of a leader election inside one
  // call; shorter hands control back to the caller's retry sooner.
  int64_t request_timeout_ms = 5000;
  // Reconnect attempts per server after a disconnect; -1: forever.
  int max_reconnect = -1;
  int64_t reconnect_wait_ms = 100;
};

struct NatsMsgDeleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
using NatsMsgPtr = std::unique_ptr<natsMsg, NatsMsgDeleter>;

// One header of a message to publish ("Nats-Msg-Id", "Nats-Expected-Last-Sequence", ...).
struct NatsHeader {
  const char* name;
  std::string value;
};

// Sets `*out` to a message to `subject` carrying `data` and `headers` (in order). Returns
// nats.c's status; on failure `*out` holds nothing.
natsStatus NewNatsMessage(const std::string& subject, std::string_view data,
                          std::span<const NatsHeader> headers, NatsMsgPtr* out);

// A message's payload, copied: nats.c's buffer is unaligned and dies with the message.
std::string NatsPayload(natsMsg* msg);

class NatsConnection {
 public:
  // Connects to any server of the list. InvalidArgument for an empty list; IOError when
  // none answers.
  static Result<std::shared_ptr<NatsConnection>> Connect(const NatsConnectionOptions& options);
  ~NatsConnection();
  NatsConnection(const NatsConnection&) = delete;
  NatsConnection& operator=(const NatsConnection&) = delete;

  natsConnection* connection() const { return nc_; }
  jsCtx* jetstream() const { return js_; }
  int64_t request_timeout_ms() const { return request_timeout_ms_; }

  // Publishes `msg` and waits up to request_timeout_ms() for JetStream's acknowledgement:
  // the stream sequence the message is stored at (for a Nats-Msg-Id already stored, the
  // first message's). On failure NatsStatus(what, ...): FailedPrecondition for a failed
  // expectation header, IOError when the outcome is unknown.
  Result<uint64_t> PublishAcked(natsMsg* msg, std::string_view what) const;

 private:
  NatsConnection(natsConnection* nc, jsCtx* js, int64_t timeout_ms)
      : nc_(nc), js_(js), request_timeout_ms_(timeout_ms) {}
  natsConnection* nc_;
  jsCtx* js_;
  int64_t request_timeout_ms_;
};

// JetStream's errors for an Expected-Last-Sequence and an Expected-Last-Msg-Id mismatch.
inline constexpr int kJsWrongLastSequence = 10071;
inline constexpr int kJsWrongLastMsgId = 10070;

// js_GetStreamInfo, asked again while the answer is neither the stream nor "no such
// stream" — a timeout or a leader election in progress, which a node's loss causes for a
// few seconds: up to policy.max_attempts in all, policy.before_retry between. On NATS_OK
// `*info` holds the stream's info (the caller destroys it); `*js_code` holds the last
// answer's JetStream error.
natsStatus GetStreamInfoRetried(jsStreamInfo** info, jsCtx* js, const std::string& stream,
                                const RetryPolicy& policy, jsErrCode* js_code);

// js_AddStream, asked again while the answer is JSClusterNoPeersErr ("no suitable peers for
// placement"): a cluster that has elected its meta leader but whose servers have not all
// reported to it yet cannot place a replicated stream, which lasts a moment when the servers
// start together. Up to policy.max_attempts in all, policy.before_retry between; any other
// answer returns at once. On NATS_OK `*info` holds the stream's info (the caller destroys it).
natsStatus AddStreamPlaced(jsStreamInfo** info, jsCtx* js, jsStreamConfig* config,
                           const RetryPolicy& policy, jsErrCode* js_code);

// The Status for a failed nats.c call `what` (e.g. "append to SW_P3"):
//   JetStream 10071 / 10070 (wrong last sequence / msg id) -> FailedPrecondition
//   10037 / 10059 (no message / no stream)              -> NotFound
//   10054 (message too large)                           -> InvalidArgument
//   10047, 10028, 10023 or a "maximum ... exceeded" refusal -> NoSpace
//   anything else (timeouts, disconnects, no responders, an election in progress) -> IOError:
//   the outcome is unknown.
// The message carries nats.c's status text, the server's description and the code.
Status NatsStatus(std::string_view what, natsStatus status, jsErrCode js_code);

// The same with the server's description given (an asynchronous acknowledgement's error
// text: nats.c's last-error text is per thread and belongs to another call there).
Status NatsStatusWithText(std::string_view what, natsStatus status, jsErrCode js_code,
                          std::string_view description);

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_JETSTREAM_NATS_CONNECTION_H_
