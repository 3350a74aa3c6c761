// JetStreamCheckpoints: a partition's checkpoints in JetStream (docs/cluster-internals.md,
// "Checkpoints and purge").
//
//   stream   SW_CKPT (one for all partitions), subjects sw.p.*.ckpt.>; R3, file storage,
//            DenyDelete, Discard=New.
//   Write    the snapshot as chunks (CheckpointChunk, at most chunk_bytes each) on
//            sw.p.<p>.ckpt.data, then a CheckpointEnd on sw.p.<p>.ckpt.end naming where every
//            chunk sits, the snapshot's size and SHA-256; then the partition's older checkpoint
//            messages are purged. A writer that dies before the end marker leaves nothing a
//            reader sees.
//   Latest   the last message on sw.p.<p>.ckpt.end, then each chunk by its sequence, checked
//            against the end marker's digest.
//
// Why a stream of their own and not the partition's SW_P<p>: the log's positions stay dense
// (LogBackend's contract), a checkpoint never moves the tail an owner's CAS expects, and
// writing one never stalls the commit path; one stream for all partitions adds one Raft
// group, not 512.
//
// Thread-safe.
#ifndef STATEWATCH_LOG_JETSTREAM_JETSTREAM_CHECKPOINTS_H_
#define STATEWATCH_LOG_JETSTREAM_JETSTREAM_CHECKPOINTS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log/append_resolver.h"
#include "log/checkpoint_store.h"
#include "log/jetstream/nats_connection.h"

namespace statewatch::log {

struct JetStreamCheckpointsOptions {
  uint32_t partition = 0;
  std::string stream = "SW_CKPT";
  int replicas = 3;
  // Bytes of snapshot per chunk message (NATS's default max payload is 1 MiB).
  std::size_t chunk_bytes = 256 * 1024;
  // Create the stream when it does not exist.
  bool create = true;
  // Retries of a chunk or end-marker publish whose outcome is unknown (each carries a
  // Nats-Msg-Id, so a retry that already landed is deduplicated).
  RetryPolicy retry = {20, RetryPolicy::Backoff()};
  // Retries of Open's stream lookup when it times out (an election after a server's loss).
  RetryPolicy open_retry = {3, RetryPolicy::Backoff()};
  // Retries of the stream's creation while the cluster cannot place its replicas yet (servers
  // still reporting to a new meta leader when they start together): ~15 s.
  RetryPolicy placement_retry = {20, RetryPolicy::Backoff()};
};

class JetStreamCheckpoints final : public CheckpointStore {
 public:
  static Result<std::unique_ptr<JetStreamCheckpoints>> Open(
      std::shared_ptr<NatsConnection> connection, const JetStreamCheckpointsOptions& options);

  Status Write(const Checkpoint& checkpoint) override;
  Result<std::optional<Checkpoint>> Latest() override;
  // Reads the end marker only.
  Result<std::optional<LogPosition>> LatestPosition() override;

 private:
  struct EndMarker;
  JetStreamCheckpoints(std::shared_ptr<NatsConnection> connection,
                       const JetStreamCheckpointsOptions& options);
  Status EnsureStream();
  Result<std::optional<EndMarker>> LatestEnd();
  Result<uint64_t> Publish(const std::string& subject, const std::string& bytes,
                           const std::string& msg_id, std::optional<uint64_t> expect_subject_seq);
  Result<std::string> ReadChunks(const EndMarker& end);
  std::string MsgIdPrefix(uint64_t id) const;
  Result<std::vector<uint64_t>> WriteChunks(uint64_t id, std::string_view data);
  Result<uint64_t> WriteEnd(uint64_t id, const Checkpoint& checkpoint,
                            const std::vector<uint64_t>& seqs, uint64_t previous_end_seq);
  Status PurgeBelow(uint64_t keep_from);

  std::shared_ptr<NatsConnection> connection_;
  const JetStreamCheckpointsOptions options_;
  const std::string data_subject_;
  const std::string end_subject_;
  std::mutex write_mu_;  // one Write at a time from this process
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_JETSTREAM_JETSTREAM_CHECKPOINTS_H_
