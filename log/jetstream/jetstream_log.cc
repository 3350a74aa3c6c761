#include "log/jetstream/jetstream_log.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace statewatch::log {
namespace {

constexpr std::size_t kGetEachUpTo = 8;
constexpr std::size_t kGetEachFallback = 64;
constexpr int64_t kNanosPerMs = 1000 * 1000;

struct StreamInfoDeleter {
  void operator()(jsStreamInfo* si) const { jsStreamInfo_Destroy(si); }
};
using StreamInfoPtr = std::unique_ptr<jsStreamInfo, StreamInfoDeleter>;

// The stream's info (its state and cluster), as the stream's leader answers.
Result<StreamInfoPtr> StreamInfo(const NatsConnection& connection, const std::string& stream) {
  jsStreamInfo* raw = nullptr;
  jsErrCode je = jsErrCode(0);
  natsStatus s = js_GetStreamInfo(&raw, connection.jetstream(), stream.c_str(), nullptr, &je);
  StreamInfoPtr info(raw);
  if (s != NATS_OK) return NatsStatus("stream info of " + stream, s, je);
  return info;
}

}  // namespace

std::string JetStreamLog::StreamName(uint32_t partition) {
  return "SW_P" + std::to_string(partition);
}
std::string JetStreamLog::SubjectName(uint32_t partition) {
  return "sw.p." + std::to_string(partition) + ".log";
}

JetStreamLog::JetStreamLog(std::shared_ptr<NatsConnection> connection,
                           const JetStreamLogOptions& options)
    : connection_(std::move(connection)),
      options_(options),
      stream_(StreamName(options.partition)),
      subject_(SubjectName(options.partition)) {}

JetStreamLog::~JetStreamLog() {
  std::lock_guard<std::mutex> lock(reader_mu_);
  CloseReaderLocked();
  if (pipeline_js_ != nullptr) jsCtx_Destroy(pipeline_js_);
}

Result<std::unique_ptr<JetStreamLog>> JetStreamLog::Open(std::shared_ptr<NatsConnection> connection,
                                                         const JetStreamLogOptions& options) {
  if (options.replicas < 1 || options.replicas > 5) {
    return Status::InvalidArgument("JetStream replicas must be 1..5 (got " +
                                   std::to_string(options.replicas) + ")");
  }
  std::unique_ptr<JetStreamLog> log(new JetStreamLog(std::move(connection), options));
  SW_RETURN_IF_ERROR(log->EnsureStream());
  SW_RETURN_IF_ERROR(log->OpenPipeline());
  return log;
}

namespace {

// What an existing stream must look like for the log's guarantees to hold.
Status CheckConfig(const std::string& stream, const jsStreamConfig& c,
                   const JetStreamLogOptions& o) {
  auto mismatch = [&](const std::string& what, const std::string& got, const std::string& want) {
    return Status::FailedPrecondition("stream " + stream + " exists with " + what + " " + got +
                                      " (statewatch needs " + want + ")");
  };
  if (c.Replicas != o.replicas) {
    return mismatch("replicas", std::to_string(c.Replicas), std::to_string(o.replicas));
  }
  if (c.Storage != js_FileStorage) return mismatch("storage", "memory", "file");
  if (c.Discard != js_DiscardNew) return mismatch("discard policy", "old", "new");
  if (!c.DenyDelete) return mismatch("deny_delete", "false", "true");
  if (c.MaxAge != 0) return mismatch("max_age", std::to_string(c.MaxAge) + " ns", "none");
  if (c.Retention != js_LimitsPolicy) return mismatch("retention", "not limits", "limits");
  if (c.Duplicates != o.duplicate_window_ms * kNanosPerMs) {
    return mismatch("duplicate window", std::to_string(c.Duplicates / kNanosPerMs) + " ms",
                    std::to_string(o.duplicate_window_ms) + " ms");
  }
  return Status::OK();
}

}  // namespace

Status JetStreamLog::EnsureStream() {
  jsCtx* js = connection_->jetstream();
  for (int attempt = 0; attempt < 2; ++attempt) {
    jsStreamInfo* raw = nullptr;
    jsErrCode je = jsErrCode(0);
    natsStatus s = GetStreamInfoRetried(&raw, js, stream_, options_.open_retry, &je);
    StreamInfoPtr info(raw);
    if (s == NATS_OK) return CheckConfig(stream_, *info->Config, options_);
    if (je != JSStreamNotFoundErr) return NatsStatus("look up stream " + stream_, s, je);
    if (!options_.create) {
      return Status::NotFound("stream " + stream_ + " does not exist (and create is off)");
    }
    const char* subjects[] = {subject_.c_str()};
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = stream_.c_str();
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = options_.replicas;
    cfg.Duplicates = options_.duplicate_window_ms * kNanosPerMs;
    cfg.DenyDelete = true;
    cfg.Discard = js_DiscardNew;
    // The server counts headers (Msg-Id, expected sequence) against this limit too.
    cfg.MaxMsgSize = static_cast<int32_t>(options_.max_record_bytes + 4096);
    raw = nullptr;
    je = jsErrCode(0);
    s = AddStreamPlaced(&raw, js, &cfg, options_.placement_retry, &je);
    info.reset(raw);
    if (s == NATS_OK) return Status::OK();
    // Another node created it first: check what it created.
    if (je != JSStreamNameExistErr) return NatsStatus("create stream " + stream_, s, je);
  }
  return Status::IOError("stream " + stream_ + " neither found nor created");
}

Result<LogPosition> JetStreamLog::Append(std::string_view data, const AppendOptions& options) {
  // Keyed writes travel in the cluster step's frames (docs/cluster-internals.md,
  // "The owner: append, then apply"), not yet here: refuse them rather than make the
  // record durable without them.
  if (options.writes != nullptr && options.writes->Count() > 0) {
    return Status::InvalidArgument("JetStreamLog does not carry keyed writes yet (" +
                                   std::to_string(options.writes->Count()) +
                                   " given with a record of " + std::to_string(data.size()) +
                                   " bytes)");
  }
  if (data.size() > options_.max_record_bytes) {
    return Status::InvalidArgument("log record of " + std::to_string(data.size()) +
                                   " bytes exceeds the limit of " +
                                   std::to_string(options_.max_record_bytes));
  }
  // Set by hand rather than through jsPubOptions.ExpectLastSeq, where 0 means "no
  // expectation": an append to an empty log must be checked too.
  const std::string expected = std::to_string(options.expected_last);
  std::vector<NatsHeader> headers{{"Nats-Expected-Last-Sequence", expected}};
  if (!options.dedupe_id.empty()) headers.push_back({"Nats-Msg-Id", options.dedupe_id});
  NatsMsgPtr msg;
  if (natsStatus s = NewNatsMessage(subject_, data, headers, &msg); s != NATS_OK) {
    return NatsStatus("build the message for " + stream_, s, jsErrCode(0));
  }
  // A duplicate's ack carries the first append's sequence.
  Result<uint64_t> position =
      connection_->PublishAcked(msg.get(), "append to " + stream_ + " after position " + expected);
  if (position.ok()) return LogPosition{*position};
  if (position.status().code() == Status::Code::kFailedPrecondition) {
    return RefusalWithTail(options.expected_last, position.status());
  }
  return position.status();
}

Status JetStreamLog::RefusalWithTail(LogPosition expected_last, const Status& refusal) {
  Result<LogPosition> tail = Tail();
  const std::string actual = tail.ok() ? std::to_string(*tail) : "unknown";
  return Status::FailedPrecondition(
      "append to " + stream_ + " refused: the log's last position is " + actual +
      ", not the expected " + std::to_string(expected_last) +
      " (another writer appended: this writer is fenced) — " + refusal.message());
}

Result<JetStreamLog::StreamBounds> JetStreamLog::Bounds() {
  Result<StreamInfoPtr> info = StreamInfo(*connection_, stream_);
  if (!info.ok()) return info.status();
  return StreamBounds{(*info)->State.FirstSeq, (*info)->State.LastSeq};
}

Result<LogPosition> JetStreamLog::Tail() {
  Result<StreamBounds> bounds = Bounds();
  if (!bounds.ok()) return bounds.status();
  return bounds->last;
}

Result<std::string> JetStreamLog::Leader() {
  Result<StreamInfoPtr> info = StreamInfo(*connection_, stream_);
  if (!info.ok()) return info.status();
  const jsClusterInfo* cluster = (*info)->Cluster;
  if (cluster == nullptr || cluster->Leader == nullptr) {
    return Status::NotFound("stream " + stream_ + " has no leader right now");
  }
  return std::string(cluster->Leader);
}

Result<std::vector<LogRecord>> JetStreamLog::ReadFrom(LogPosition from, std::size_t max_records) {
  const LogPosition start = std::max<LogPosition>(from, 1);
  Result<StreamBounds> bounds = Bounds();
  if (!bounds.ok()) return bounds.status();
  if (bounds->first > 0 && start < bounds->first) {
    return Status::NotFound("log position " + std::to_string(start) + " was purged: " + stream_ +
                            " starts at " + std::to_string(bounds->first));
  }
  if (start > bounds->last || max_records == 0) return std::vector<LogRecord>{};
  const std::size_t count =
      static_cast<std::size_t>(std::min<uint64_t>(max_records, bounds->last - start + 1));
  return count <= kGetEachUpTo ? GetEach(start, count) : Stream(start, count);
}

Result<std::vector<LogRecord>> JetStreamLog::GetEach(LogPosition from, std::size_t count) {
  std::vector<LogRecord> out;
  for (LogPosition p = from; p < from + count; ++p) {
    natsMsg* raw = nullptr;
    jsErrCode je = jsErrCode(0);
    // The leader answers (not a replica), so a position below the tail is always there.
    natsStatus s = js_GetMsg(&raw, connection_->jetstream(), stream_.c_str(), p, nullptr, &je);
    NatsMsgPtr msg(raw);
    if (s != NATS_OK) {
      Status status = NatsStatus("read " + stream_ + " position " + std::to_string(p), s, je);
      if (!out.empty()) break;  // a purge raced the read: hand back what was read
      return status;
    }
    out.push_back({p, NatsPayload(msg.get()), /*writes=*/{}});
  }
  return out;
}

void JetStreamLog::CloseReaderLocked() {
  if (reader_ == nullptr) return;
  // Unsubscribing deletes the ephemeral consumer on the server.
  natsSubscription_Unsubscribe(reader_);
  natsSubscription_Destroy(reader_);
  reader_ = nullptr;
  reader_next_ = 0;
}

Result<std::vector<LogRecord>> JetStreamLog::Stream(LogPosition from, std::size_t count) {
  std::lock_guard<std::mutex> lock(reader_mu_);
  if (reader_ == nullptr || reader_next_ != from) {
    CloseReaderLocked();
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream_.c_str();
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = from;
    jsErrCode je = jsErrCode(0);
    natsStatus s =
        js_SubscribeSync(&reader_, connection_->jetstream(), subject_.c_str(), nullptr, &so, &je);
    if (s != NATS_OK) {
      reader_ = nullptr;
      // Creating a consumer needs the meta leader as well as the stream's; right after a
      // server loss only the latter may be back. Reading record by record needs only it.
      Result<std::vector<LogRecord>> fallback =
          GetEach(from, std::min<std::size_t>(count, kGetEachFallback));
      if (fallback.ok()) return fallback;
      return NatsStatus("ordered consumer on " + stream_ + " from " + std::to_string(from), s, je);
    }
    reader_next_ = from;
  }
  std::vector<LogRecord> out;
  out.reserve(count);
  while (out.size() < count) {
    natsMsg* raw = nullptr;
    natsStatus s = natsSubscription_NextMsg(&raw, reader_, connection_->request_timeout_ms());
    NatsMsgPtr msg(raw);
    if (s != NATS_OK) {
      Status status =
          NatsStatus("read " + stream_ + " from " + std::to_string(reader_next_), s, jsErrCode(0));
      CloseReaderLocked();
      if (!out.empty()) return out;
      return status;
    }
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, msg.get()) != NATS_OK) continue;  // not a stream message
    const LogPosition position = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    if (position < reader_next_) continue;  // a redelivery after the consumer reset
    if (position > reader_next_) {
      // The records in between were purged while this consumer was open.
      const LogPosition missing = reader_next_;
      CloseReaderLocked();
      if (!out.empty()) return out;
      return Status::NotFound("log position " + std::to_string(missing) + " was purged: " +
                              stream_ + " continues at " + std::to_string(position));
    }
    out.push_back({position, NatsPayload(msg.get()), /*writes=*/{}});
    reader_next_ = position + 1;
  }
  return out;
}

Status JetStreamLog::PurgeBelow(LogPosition position) {
  Result<StreamBounds> bounds = Bounds();
  if (!bounds.ok()) return bounds.status();
  if (position > bounds->last + 1) {
    return Status::InvalidArgument("cannot purge below position " + std::to_string(position) +
                                   ": the log's last position is " + std::to_string(bounds->last));
  }
  // Also what keeps a purge "up to 1" from reaching the server, which JetStream 2.9 reads as
  // "purge everything".
  if (position <= std::max<LogPosition>(bounds->first, 1)) return Status::OK();
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Purge.Sequence = position;  // purges up to, not including, this sequence
  jsErrCode je = jsErrCode(0);
  natsStatus s = js_PurgeStream(connection_->jetstream(), stream_.c_str(), &o, &je);
  if (s != NATS_OK) {
    return NatsStatus("purge " + stream_ + " below " + std::to_string(position), s, je);
  }
  return Status::OK();
}

Status JetStreamLog::OpenPipeline() {
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = connection_->request_timeout_ms();
  jo.PublishAsync.AckHandler = &JetStreamLog::OnPipelinedAck;
  jo.PublishAsync.AckHandlerClosure = this;
  jo.PublishAsync.MaxPending = 4096;
  jo.PublishAsync.StallWait = connection_->request_timeout_ms();
  natsStatus s = natsConnection_JetStream(&pipeline_js_, connection_->connection(), &jo);
  if (s != NATS_OK) {
    pipeline_js_ = nullptr;
    return NatsStatus("JetStream context for pipelined appends to " + stream_, s, jsErrCode(0));
  }
  return Status::OK();
}

// Runs on nats.c's delivery thread, once per published message: with an acknowledgement, an
// error answer, or a timeout (every message is published with a MaxWait).
void JetStreamLog::OnPipelinedAck(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error,
                                  void* closure) {
  auto* self = static_cast<JetStreamLog*>(closure);
  const char* expected = nullptr;
  natsMsgHeader_Get(msg, "Nats-Expected-Last-Sequence", &expected);
  {
    std::lock_guard<std::mutex> lock(self->pipeline_mu_);
    const uint64_t e = expected != nullptr ? std::strtoull(expected, nullptr, 10) : 0;
    if (self->pipeline_results_ != nullptr && e >= self->pipeline_base_ &&
        e - self->pipeline_base_ < self->pipeline_results_->size()) {
      Result<LogPosition>& slot = (*self->pipeline_results_)[e - self->pipeline_base_];
      if (ack != nullptr) {
        slot = ack->Sequence;
      } else if (error != nullptr) {
        slot = NatsStatusWithText(
            "pipelined append to " + self->stream_ + " after position " + std::to_string(e),
            error->Err, error->ErrCode, error->ErrText != nullptr ? error->ErrText : "");
      }
    }
  }
  natsMsg_Destroy(msg);
}

namespace {

// InvalidArgument (for the whole batch: nothing is sent) when a record is too large or one
// that the next record chains to has no id.
Status CheckPipelined(std::span<const PendingAppend> records, std::size_t max_bytes) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].data.size() > max_bytes) {
      return Status::InvalidArgument("log record of " + std::to_string(records[i].data.size()) +
                                     " bytes exceeds the limit of " + std::to_string(max_bytes));
    }
    if (i > 0 && records[i - 1].dedupe_id.empty()) {
      return Status::InvalidArgument("pipelined record " + std::to_string(i - 1) +
                                     " has no dedupe id (the next one chains to it)");
    }
  }
  return Status::OK();
}

}  // namespace

std::vector<Result<LogPosition>> JetStreamLog::AppendPipelined(
    std::span<const PendingAppend> records, LogPosition expected_last, bool /*sync*/) {
  if (Status bad = CheckPipelined(records, options_.max_record_bytes); !bad.ok()) {
    return std::vector<Result<LogPosition>>(records.size(), bad);
  }
  std::vector<Result<LogPosition>> results(
      records.size(),
      Status::IOError("pipelined append to " + stream_ + ": no answer (outcome unknown)"));
  {
    std::lock_guard<std::mutex> lock(pipeline_mu_);
    pipeline_base_ = expected_last;
    pipeline_results_ = &results;
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    Status sent = PublishPipelined(records, i, expected_last);
    if (!sent.ok()) {
      std::lock_guard<std::mutex> lock(pipeline_mu_);
      results[i] = sent;
      break;  // the rest would expect this one: not sent, their IOError stands
    }
  }
  jsPubOptions wait;
  jsPubOptions_Init(&wait);
  wait.MaxWait = connection_->request_timeout_ms() + 1000;
  if (js_PublishAsyncComplete(pipeline_js_, &wait) != NATS_OK) {
    // Every message carries its own MaxWait, so this is a backstop: forget what is still
    // pending (late acknowledgements are then dropped) — those results stay "unknown".
    natsMsgList pending;
    if (js_PublishAsyncGetPendingList(&pending, pipeline_js_) == NATS_OK) {
      natsMsgList_Destroy(&pending);
    }
  }
  std::lock_guard<std::mutex> lock(pipeline_mu_);
  pipeline_results_ = nullptr;
  return results;
}

Status JetStreamLog::PublishPipelined(std::span<const PendingAppend> records, std::size_t i,
                                      LogPosition expected_last) {
  const std::string expected = std::to_string(expected_last + i);
  std::vector<NatsHeader> headers{{"Nats-Expected-Last-Sequence", expected}};
  if (!records[i].dedupe_id.empty()) headers.push_back({"Nats-Msg-Id", records[i].dedupe_id});
  if (i > 0) headers.push_back({"Nats-Expected-Last-Msg-Id", records[i - 1].dedupe_id});
  NatsMsgPtr built;
  natsStatus s = NewNatsMessage(subject_, records[i].data, headers, &built);
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = connection_->request_timeout_ms();
  natsMsg* msg = built.release();
  if (s == NATS_OK) s = js_PublishMsgAsync(pipeline_js_, &msg, &po);
  natsMsg_Destroy(msg);  // a no-op when the library took it
  if (s != NATS_OK) {
    return NatsStatus("pipelined append to " + stream_ + " after position " + expected, s,
                      jsErrCode(0));
  }
  return Status::OK();
}

}  // namespace statewatch::log
