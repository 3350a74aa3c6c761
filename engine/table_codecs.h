// The side tables' value codecs (schema/statewatch.fbs): the session registry, transcripts,
// runs, deliveries and upstream links. Decoders verify the buffer and return Corruption
// naming what failed; a stored enum value outside its listed values is Corruption too.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_ENGINE_TABLE_CODECS_H_
#define STATEWATCH_ENGINE_TABLE_CODECS_H_

#include <string>
#include <string_view>

#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"

namespace statewatch::engine {

std::string EncodeSessionRecord(const SessionRecord& r);
Result<SessionRecord> DecodeSessionRecord(std::string_view bytes);
// Overlays the fields present in `update` on `base`.
void MergeSessionRecord(const SessionRecord& update, SessionRecord* base);

std::string EncodeTranscriptMessage(const TranscriptMessage& m);
Result<TranscriptMessage> DecodeTranscriptMessage(std::string_view bytes);
std::string EncodeRun(const RunRecord& r);
Result<RunRecord> DecodeRun(std::string_view bytes);
std::string EncodeDelivery(const Delivery& d);
Result<Delivery> DecodeDelivery(std::string_view bytes);
std::string EncodeUpstreamLink(const UpstreamLink& l);
Result<UpstreamLink> DecodeUpstreamLink(std::string_view bytes);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_TABLE_CODECS_H_
