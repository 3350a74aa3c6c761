// JetStreamLog: a partition's log as a NATS JetStream stream, replicated by JetStream's
// Raft across servers (docs/cluster-internals.md, "JetStream layout").
//
//   stream   SW_P<p>, subject sw.p.<p>.log, one message per record (commit group);
//            R3 (configurable), file storage, duplicate window 10 min, DenyDelete,
//            Discard=New, no MaxAge: JetStream never drops a record on its own.
//   Append   publishes with Nats-Expected-Last-Sequence: <expected_last> (checked by the
//            stream in Raft order, so a fenced writer is refused) and Nats-Msg-Id:
//            <dedupe_id>; returns once the stream's quorum acknowledged the message.
//            Positions are stream sequences, dense because nothing else goes into the
//            stream (checkpoints live in their own stream, JetStreamCheckpoints).
//   ReadFrom up to 8 records: one leader get per record; more: an ordered push consumer
//            from `from`, kept open while the next read continues where the last stopped
//            (a standby following the tail streams instead of paying a round trip per
//            record — measured by scripts/cluster-bench.sh). When no consumer can be made
//            (the meta leader is being elected), up to 64 records one by one.
//   AppendPipelined  every record published at once (nats.c asynchronous publish), record
//            i with Nats-Expected-Last-Sequence: expected_last + i and, after the first,
//            Nats-Expected-Last-Msg-Id: <record i-1's id>: were record i-1 lost on the way
//            and another writer's fence landed in its place, record i is refused too rather
//            than landing after the fence. So every record after the first needs an id.
//   Tail     the stream's last sequence, from stream info (asked of the leader).
//   PurgeBelow  a purge of the stream up to (not including) the position.
//
// Errors (NatsStatus): FailedPrecondition on JetStream 10071 (wrong last sequence);
// IOError on timeouts, disconnects and elections (outcome unknown: AppendResolved settles
// it); NoSpace when the stream or the account is full; InvalidArgument for a record over
// max_record_bytes.
//
// Thread contract as LogBackend's: one appender; ReadFrom and Tail from any thread.
#ifndef STATEWATCH_LOG_JETSTREAM_JETSTREAM_LOG_H_
#define STATEWATCH_LOG_JETSTREAM_JETSTREAM_LOG_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "log/jetstream/nats_connection.h"
#include "log/log_backend.h"

namespace statewatch::log {

struct JetStreamLogOptions {
  uint32_t partition = 0;
  // Servers holding a copy. 3 survives the loss of one; JetStream allows 1..5.
  int replicas = 3;
  // Msg-Id dedupe window. Longer covers longer outages of a retrying owner; the servers
  // keep every id of the window in memory.
  int64_t duplicate_window_ms = 10 * 60 * 1000;
  // Create the stream when it does not exist. An existing stream must match the settings
  // above (FailedPrecondition otherwise: a misconfigured stream could drop records).
  bool create = true;
  // The largest record accepted (a commit group); NATS's default max payload is 1 MiB.
  std::size_t max_record_bytes = 512 * 1024;
  // Retries of Open's stream lookup when it times out (an election after a server's loss).
  RetryPolicy open_retry = {3, RetryPolicy::Backoff()};
  // Retries of the stream's creation while the cluster cannot place its replicas yet (servers
  // still reporting to a new meta leader when they start together): ~15 s.
  RetryPolicy placement_retry = {20, RetryPolicy::Backoff()};
};

class JetStreamLog final : public LogBackend {
 public:
  static Result<std::unique_ptr<JetStreamLog>> Open(std::shared_ptr<NatsConnection> connection,
                                                    const JetStreamLogOptions& options);
  ~JetStreamLog() override;

  Result<LogPosition> Append(std::string_view data, const AppendOptions& options) override;
  Result<std::vector<LogRecord>> ReadFrom(LogPosition from, std::size_t max_records) override;
  Result<LogPosition> Tail() override;
  Status PurgeBelow(LogPosition position) override;
  std::vector<Result<LogPosition>> AppendPipelined(std::span<const PendingAppend> records,
                                                   LogPosition expected_last,
                                                   bool sync = true) override;

  // "SW_P<p>" and "sw.p.<p>.log".
  const std::string& stream() const { return stream_; }
  const std::string& subject() const { return subject_; }
  // The server name of the stream's current Raft leader (operators, tests).
  Result<std::string> Leader();

  static std::string StreamName(uint32_t partition);
  static std::string SubjectName(uint32_t partition);

 private:
  struct StreamBounds {
    LogPosition first = 0;  // first retained position (0 for a stream never written)
    LogPosition last = 0;
  };
  JetStreamLog(std::shared_ptr<NatsConnection> connection, const JetStreamLogOptions& options);
  Status EnsureStream();
  Result<StreamBounds> Bounds();
  Status RefusalWithTail(LogPosition expected_last, const Status& refusal);
  Result<std::vector<LogRecord>> GetEach(LogPosition from, std::size_t count);
  Result<std::vector<LogRecord>> Stream(LogPosition from, std::size_t count);
  void CloseReaderLocked();
  Status OpenPipeline();
  Status PublishPipelined(std::span<const PendingAppend> records, std::size_t i,
                          LogPosition expected_last);
  static void OnPipelinedAck(jsCtx* js, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error,
                             void* closure);

  std::shared_ptr<NatsConnection> connection_;
  const JetStreamLogOptions options_;
  const std::string stream_;
  const std::string subject_;

  // AppendPipelined's own JetStream context (its acknowledgement callback is per context)
  // and the results of the batch in flight, filled in by that callback.
  jsCtx* pipeline_js_ = nullptr;
  std::mutex pipeline_mu_;
  LogPosition pipeline_base_ = 0;
  std::vector<Result<LogPosition>>* pipeline_results_ = nullptr;

  // The ordered consumer of the last streamed read, and the position it delivers next.
  std::mutex reader_mu_;
  natsSubscription* reader_ = nullptr;
  LogPosition reader_next_ = 0;
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_JETSTREAM_JETSTREAM_LOG_H_
