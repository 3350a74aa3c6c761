#include "log/jetstream/jetstream_checkpoints.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "log/batch_frame.h"
#include "schema/log_frame_generated.h"

namespace statewatch::log {
namespace fb = statewatch::schema::log;

struct JetStreamCheckpoints::EndMarker {
  uint64_t seq = 0;  // the end marker's own stream sequence
  uint64_t id = 0;
  LogPosition position = 0;
  uint64_t bytes = 0;
  FrameHash sha256{};
  std::vector<uint64_t> chunk_seqs;
};

namespace {

// `payload` is NatsPayload's heap (aligned) copy: a message's payload sits unaligned inside
// nats.c's buffer, and FlatBuffers reads 4- and 8-byte fields in place.
// REQUIRES: `payload` outlives the returned pointer.
template <typename T>
const T* VerifiedRoot(const std::string& payload) {
  const auto* data = reinterpret_cast<const uint8_t*>(payload.data());
  flatbuffers::Verifier verifier(data, payload.size());
  if (!verifier.VerifyBuffer<T>(nullptr)) return nullptr;
  return flatbuffers::GetRoot<T>(data);
}

std::string Bytes(const flatbuffers::FlatBufferBuilder& fbb) {
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

std::string EncodeChunk(uint64_t id, uint32_t index, std::string_view data) {
  flatbuffers::FlatBufferBuilder fbb(data.size() + 64);
  auto bytes = fbb.CreateVector(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  fbb.Finish(fb::CreateCheckpointChunk(fbb, id, index, bytes));
  return Bytes(fbb);
}

uint64_t NewCheckpointId() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

}  // namespace

JetStreamCheckpoints::JetStreamCheckpoints(std::shared_ptr<NatsConnection> connection,
                                           const JetStreamCheckpointsOptions& options)
    : connection_(std::move(connection)),
      options_(options),
      data_subject_("sw.p." + std::to_string(options.partition) + ".ckpt.data"),
      end_subject_("sw.p." + std::to_string(options.partition) + ".ckpt.end") {}

Result<std::unique_ptr<JetStreamCheckpoints>> JetStreamCheckpoints::Open(
    std::shared_ptr<NatsConnection> connection, const JetStreamCheckpointsOptions& options) {
  if (options.chunk_bytes == 0 || options.chunk_bytes > 768 * 1024) {
    return Status::InvalidArgument("checkpoint chunk size must be 1..786432 bytes (got " +
                                   std::to_string(options.chunk_bytes) + ")");
  }
  std::unique_ptr<JetStreamCheckpoints> store(
      new JetStreamCheckpoints(std::move(connection), options));
  SW_RETURN_IF_ERROR(store->EnsureStream());
  return store;
}

Status JetStreamCheckpoints::EnsureStream() {
  jsCtx* js = connection_->jetstream();
  jsStreamInfo* info = nullptr;
  jsErrCode je = jsErrCode(0);
  natsStatus s = GetStreamInfoRetried(&info, js, options_.stream, options_.open_retry, &je);
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (s == NATS_OK) return Status::OK();
  if (je != JSStreamNotFoundErr) return NatsStatus("look up stream " + options_.stream, s, je);
  if (!options_.create) {
    return Status::NotFound("stream " + options_.stream + " does not exist (and create is off)");
  }
  const char* subjects[] = {"sw.p.*.ckpt.>"};
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = options_.stream.c_str();
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.Replicas = options_.replicas;
  cfg.DenyDelete = true;
  cfg.Discard = js_DiscardNew;
  info = nullptr;
  je = jsErrCode(0);
  s = AddStreamPlaced(&info, js, &cfg, options_.placement_retry, &je);
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (s == NATS_OK || je == JSStreamNameExistErr) return Status::OK();
  return NatsStatus("create stream " + options_.stream, s, je);
}

Result<uint64_t> JetStreamCheckpoints::Publish(const std::string& subject, const std::string& bytes,
                                               const std::string& msg_id,
                                               std::optional<uint64_t> expect_subject_seq) {
  std::vector<NatsHeader> headers{{"Nats-Msg-Id", msg_id}};
  if (expect_subject_seq) {
    headers.push_back({"Nats-Expected-Last-Subject-Sequence", std::to_string(*expect_subject_seq)});
  }
  const int attempts = std::max(options_.retry.max_attempts, 1);
  Status last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0 && options_.retry.before_retry) options_.retry.before_retry(attempt);
    NatsMsgPtr msg;
    if (natsStatus s = NewNatsMessage(subject, bytes, headers, &msg); s != NATS_OK) {
      return NatsStatus("build a checkpoint message", s, jsErrCode(0));
    }
    Result<uint64_t> seq = connection_->PublishAcked(msg.get(), "publish " + subject);
    if (seq.ok()) return seq;
    last = seq.status();
    if (last.code() != Status::Code::kIOError) return last;
  }
  return last;
}

Status JetStreamCheckpoints::Write(const Checkpoint& checkpoint) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Result<std::optional<EndMarker>> latest = LatestEnd();
  if (!latest.ok()) return latest.status();
  if (*latest && (*latest)->position > checkpoint.position) {
    return Status::FailedPrecondition(
        "checkpoint at position " + std::to_string(checkpoint.position) +
        " refused: a newer one covers position " + std::to_string((*latest)->position));
  }
  const uint64_t id = NewCheckpointId();
  Result<std::vector<uint64_t>> seqs = WriteChunks(id, checkpoint.data);
  if (!seqs.ok()) return seqs.status();
  Result<uint64_t> end_seq = WriteEnd(id, checkpoint, *seqs, *latest ? (*latest)->seq : 0);
  if (!end_seq.ok()) return end_seq.status();
  // Drop this partition's older checkpoints (and any half-written one before ours).
  const uint64_t keep_from = seqs->empty() ? *end_seq : seqs->front();
  Status purged = PurgeBelow(keep_from);
  if (!purged.ok()) {
    return Status::IOError("checkpoint at position " + std::to_string(checkpoint.position) +
                           " written; dropping the older ones failed: " + purged.message());
  }
  return Status::OK();
}

Result<std::optional<LogPosition>> JetStreamCheckpoints::LatestPosition() {
  Result<std::optional<EndMarker>> end = LatestEnd();
  if (!end.ok()) return end.status();
  if (!end->has_value()) return std::optional<LogPosition>();
  return std::optional<LogPosition>((*end)->position);
}

std::string JetStreamCheckpoints::MsgIdPrefix(uint64_t id) const {
  return std::to_string(options_.partition) + "/ckpt/" + std::to_string(id);
}

Result<std::vector<uint64_t>> JetStreamCheckpoints::WriteChunks(uint64_t id,
                                                                std::string_view data) {
  std::vector<uint64_t> seqs;
  for (std::size_t off = 0, i = 0; off < data.size(); off += options_.chunk_bytes, ++i) {
    const std::string chunk =
        EncodeChunk(id, static_cast<uint32_t>(i), data.substr(off, options_.chunk_bytes));
    Result<uint64_t> seq =
        Publish(data_subject_, chunk, MsgIdPrefix(id) + "/" + std::to_string(i), {});
    if (!seq.ok()) return seq.status();
    seqs.push_back(*seq);
  }
  return seqs;
}

Result<uint64_t> JetStreamCheckpoints::WriteEnd(uint64_t id, const Checkpoint& checkpoint,
                                                const std::vector<uint64_t>& seqs,
                                                uint64_t previous_end_seq) {
  flatbuffers::FlatBufferBuilder fbb(256 + 8 * seqs.size());
  const FrameHash digest = HashFrame(checkpoint.data);
  auto sha = fbb.CreateVector(digest.data(), digest.size());
  auto seq_vec = fbb.CreateVector(seqs);
  fbb.Finish(fb::CreateCheckpointEnd(fbb, id, options_.partition, checkpoint.position,
                                     static_cast<uint32_t>(seqs.size()), checkpoint.data.size(),
                                     sha, seq_vec));
  Result<uint64_t> end_seq =
      Publish(end_subject_, Bytes(fbb), MsgIdPrefix(id) + "/end", previous_end_seq);
  if (end_seq.ok()) return end_seq;
  // The per-subject expectation is checked before the Msg-Id dedupe, so a retry of an end
  // marker that landed is refused: look whether the latest is ours.
  Result<std::optional<EndMarker>> now = LatestEnd();
  if (!now.ok() || !*now || (*now)->id != id) return end_seq.status();
  return (*now)->seq;
}

Status JetStreamCheckpoints::PurgeBelow(uint64_t keep_from) {
  // Nothing lies below sequence 1 — and JetStream 2.9 reads a purge "up to 1" as "purge
  // everything that matches", which would take the newest checkpoint with it.
  if (keep_from <= 1) return Status::OK();
  const std::string filter = "sw.p." + std::to_string(options_.partition) + ".ckpt.>";
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Purge.Subject = filter.c_str();
  o.Stream.Purge.Sequence = keep_from;
  jsErrCode je = jsErrCode(0);
  natsStatus s = js_PurgeStream(connection_->jetstream(), options_.stream.c_str(), &o, &je);
  if (s != NATS_OK)
    return NatsStatus("purge " + filter + " below " + std::to_string(keep_from), s, je);
  return Status::OK();
}

Result<std::optional<JetStreamCheckpoints::EndMarker>> JetStreamCheckpoints::LatestEnd() {
  natsMsg* raw = nullptr;
  jsErrCode je = jsErrCode(0);
  natsStatus s = js_GetLastMsg(&raw, connection_->jetstream(), options_.stream.c_str(),
                               end_subject_.c_str(), nullptr, &je);
  NatsMsgPtr msg(raw);
  if (s != NATS_OK) {
    Status status =
        NatsStatus("latest checkpoint of partition " + std::to_string(options_.partition), s, je);
    if (status.IsNotFound()) return std::optional<EndMarker>();
    return status;
  }
  const std::string payload = NatsPayload(msg.get());
  const auto* end = VerifiedRoot<fb::CheckpointEnd>(payload);
  if (end == nullptr || end->sha256() == nullptr || end->sha256()->size() != 32 ||
      end->chunk_seqs() == nullptr || end->chunk_seqs()->size() != end->chunks()) {
    return Status::Corruption("checkpoint end marker of partition " +
                              std::to_string(options_.partition) + " at stream sequence " +
                              std::to_string(natsMsg_GetSequence(msg.get())) + " does not decode");
  }
  EndMarker m;
  m.seq = natsMsg_GetSequence(msg.get());
  m.id = end->id();
  m.position = end->position();
  m.bytes = end->bytes();
  std::copy(end->sha256()->begin(), end->sha256()->end(), m.sha256.begin());
  // memcpy, not Vector::Get: the verifier does not check that 8-byte elements are 8-byte
  // aligned, and a damaged marker may place them anywhere.
  const auto& seqs = *end->chunk_seqs();
  m.chunk_seqs.resize(seqs.size());
  if (!m.chunk_seqs.empty()) {
    std::memcpy(m.chunk_seqs.data(), seqs.Data(), seqs.size() * sizeof(uint64_t));
  }
  return std::optional<EndMarker>(std::move(m));
}

Result<std::string> JetStreamCheckpoints::ReadChunks(const EndMarker& end) {
  const std::string what = "checkpoint " + std::to_string(end.id) + " of partition " +
                           std::to_string(options_.partition) + " at position " +
                           std::to_string(end.position);
  std::string data;
  data.reserve(end.bytes);
  for (std::size_t i = 0; i < end.chunk_seqs.size(); ++i) {
    natsMsg* raw = nullptr;
    jsErrCode je = jsErrCode(0);
    natsStatus s = js_GetMsg(&raw, connection_->jetstream(), options_.stream.c_str(),
                             end.chunk_seqs[i], nullptr, &je);
    NatsMsgPtr msg(raw);
    if (s != NATS_OK) {
      Status status = NatsStatus("read", s, je);
      if (!status.IsNotFound()) return status;
      return Status::Corruption(what + ": chunk " + std::to_string(i) + " (stream sequence " +
                                std::to_string(end.chunk_seqs[i]) + ") is missing");
    }
    const std::string payload = NatsPayload(msg.get());
    const auto* chunk = VerifiedRoot<fb::CheckpointChunk>(payload);
    if (chunk == nullptr || chunk->id() != end.id || chunk->index() != i ||
        chunk->data() == nullptr) {
      return Status::Corruption(what + ": stream sequence " + std::to_string(end.chunk_seqs[i]) +
                                " is not its chunk " + std::to_string(i));
    }
    data.append(reinterpret_cast<const char*>(chunk->data()->data()), chunk->data()->size());
  }
  if (data.size() != end.bytes || HashFrame(data) != end.sha256) {
    return Status::Corruption(what + ": " + std::to_string(data.size()) + " bytes read, " +
                              std::to_string(end.bytes) + " expected, or the SHA-256 differs");
  }
  return data;
}

Result<std::optional<Checkpoint>> JetStreamCheckpoints::Latest() {
  Result<std::optional<EndMarker>> end = LatestEnd();
  if (!end.ok()) return end.status();
  if (!*end) return std::optional<Checkpoint>();
  Result<std::string> data = ReadChunks(**end);
  if (!data.ok()) return data.status();
  return std::optional<Checkpoint>(Checkpoint{(*end)->position, std::move(*data)});
}

}  // namespace statewatch::log
