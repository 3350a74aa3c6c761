// RequestIds and the request seal (include/statewatch/request_ids.h, engine/request_seal.h).
#include "statewatch/request_ids.h"

#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/flatbuffer_values.h"
#include "engine/group_write.h"
#include "engine/request_seal.h"
#include "schema/request_ids_generated.h"
#include "storage/key_codec.h"

namespace statewatch {

using engine::GroupWrite;
using storage::Family;

namespace {

// 'Q' <id> in the requests family (in the meta family before 2026-12-07: MoveRequestRecords).
constexpr char kRequestTag = storage::kRequestRecordTag;

std::string RecordKey(std::string_view id) {
  std::string k(1, kRequestTag);
  k.append(id);
  return k;
}

// Every 'Q' key of family f, in key order.
std::unique_ptr<storage::Iterator> RecordRange(const storage::Store& store, Family f) {
  return store.NewIterator(f, std::string(1, kRequestTag), std::string(1, kRequestTag + 1));
}

thread_local std::shared_ptr<RequestSeal> armed_seal;

// ---- the record before FlatBuffers --------------------------------------------------------------
// The builds of 2026-12-03 wrote the record as
//   1 | digest length u32 BE | digest | created_at u64 BE | answered u8 | status u32 BE |
//   content type length u32 BE | content type | body (the rest).
// A record answers retries for 15 minutes, so such a record matters only across an upgrade
// from those builds; it is read, never written. The FlatBuffers record carries the file
// identifier "SWRQ" (bytes 4..7); this one starts with the byte 1 and its bytes 4..7 are the
// low byte of the digest's length (32) and the digest's first bytes, never the identifier.
constexpr unsigned char kPreFlatBuffersFormat = 1;
constexpr char kRecordIdentifier[] = "SWRQ";

Result<RequestRecord> DecodePreFlatBuffersRecord(std::string_view in) {
  auto bad = [&](const char* what) {
    return Status::Corruption(std::string("request record: ") + what + " (" +
                              std::to_string(in.size()) + " bytes)");
  };
  auto take_u32 = [](std::string_view* rest) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>((*rest)[i]);
    rest->remove_prefix(4);
    return v;
  };
  std::string_view rest = in.substr(1);
  RequestRecord r;
  if (rest.size() < 4) return bad("truncated");
  uint32_t digest_size = take_u32(&rest);
  if (rest.size() < uint64_t{digest_size} + 8 + 1 + 4 + 4) return bad("truncated");
  r.digest.assign(rest.substr(0, digest_size));
  rest.remove_prefix(digest_size);
  r.created_at_ms = static_cast<int64_t>(storage::DecodeFixed64BE(rest.data()));
  rest.remove_prefix(8);
  r.answered = rest[0] != 0;
  rest.remove_prefix(1);
  r.status = static_cast<int>(take_u32(&rest));
  uint32_t type_size = take_u32(&rest);
  if (rest.size() < type_size) return bad("truncated content type");
  r.content_type.assign(rest.substr(0, type_size));
  rest.remove_prefix(type_size);
  r.body.assign(rest);
  return r;
}

}  // namespace

// ---- the record -------------------------------------------------------------------------------

std::string EncodeRequestRecord(const RequestRecord& r) {
  namespace fb = schema::requests;
  flatbuffers::FlatBufferBuilder b(64 + r.digest.size() + r.content_type.size() + r.body.size());
  auto bytes = [&b](const std::string& s) {
    return b.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  auto digest = bytes(r.digest);
  auto content_type = b.CreateString(r.content_type);
  auto body = bytes(r.body);
  b.Finish(fb::CreateRequestRecord(b, digest, r.created_at_ms, r.answered, r.status,
                                   content_type, body),
           kRecordIdentifier);
  return engine::fbv::Finish(b);
}

Result<RequestRecord> DecodeRequestRecord(std::string_view in) {
  namespace fbv = engine::fbv;
  if (in.size() < 8 || !flatbuffers::BufferHasIdentifier(in.data(), kRecordIdentifier)) {
    if (!in.empty() && static_cast<unsigned char>(in[0]) == kPreFlatBuffersFormat) {
      return DecodePreFlatBuffersRecord(in);
    }
    return Status::Corruption("request record: not a record (" + std::to_string(in.size()) +
                              " bytes without the identifier " + kRecordIdentifier + ")");
  }
  return fbv::Decode<schema::requests::RequestRecord>(in, "request record", [](const auto& f) {
    RequestRecord r;
    r.digest.assign(fbv::Bytes(f.digest()));
    r.created_at_ms = f.created_at();
    r.answered = f.answered();
    r.status = f.status();
    r.content_type = fbv::Str(f.content_type());
    r.body.assign(fbv::Bytes(f.body()));
    return r;
  });
}

bool IsValidRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::string NewRequestId() {
  static thread_local std::mt19937_64 bits{std::random_device{}() ^
                                           (uint64_t{std::random_device{}()} << 32)};
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(bits()),
                static_cast<unsigned long long>(bits()));
  return out;
}

// ---- the seal -----------------------------------------------------------------------------------

struct RequestSealAccess {
  // Marks `seal` written at `now`; false when a group wrote it before.
  static bool Claim(RequestSeal& seal, int64_t now) {
    int64_t expected = 0;
    return seal.sealed_at_ms_.compare_exchange_strong(expected, now == 0 ? 1 : now,
                                                      std::memory_order_acq_rel);
  }
  static bool Answered(const RequestSeal& seal) { return seal.answer_in_group_.has_value(); }
  // The answer the seal's renderer makes of `outcome`, kept on the seal; nullopt without one.
  static std::optional<RequestAnswer> Render(RequestSeal& seal, const SealedOutcome& outcome) {
    if (!seal.render_) return std::nullopt;
    seal.answer_in_group_ = seal.render_(outcome);
    return seal.answer_in_group_;
  }
};

RequestSeal* ArmedRequestSeal() { return armed_seal.get(); }

ArmRequestSeal::ArmRequestSeal(std::shared_ptr<RequestSeal> seal)
    : previous_(std::exchange(armed_seal, std::move(seal))) {}

ArmRequestSeal::~ArmRequestSeal() { armed_seal = std::move(previous_); }

namespace engine {

SealWriteFn TakeRequestSeal() {
  if (!armed_seal) return {};
  return [seal = armed_seal](GroupWrite& g, const SealedOutcome& outcome) -> Status {
    // The first command of the request to build writes the record. A later one writes it
    // again only to add the answer an earlier group could not render: it rides on the first
    // later command whose outcome the renderer renders (an operation of several writes
    // knows its answer before, or in, its last one).
    const bool first = RequestSealAccess::Claim(*seal, g.now());
    if (!first && RequestSealAccess::Answered(*seal)) return Status::OK();
    std::optional<RequestAnswer> a = RequestSealAccess::Render(*seal, outcome);
    if (!first && !a) return Status::OK();
    RequestRecord r;
    r.digest = seal->digest();
    r.created_at_ms = first ? g.now() : seal->sealed_at_ms();
    if (a) {
      r.answered = true;  // the answer is durable with the effect: a retry always gets it
      r.status = a->status;
      r.content_type = std::move(a->content_type);
      r.body = std::move(a->body);
    }
    g.Put(Family::kRequests, RecordKey(seal->id()), EncodeRequestRecord(r));
    return Status::OK();
  };
}

Status MoveRequestRecords(storage::Store& store) {
  constexpr std::size_t kBatch = 1000;
  for (;;) {
    storage::Batch b(store);
    std::size_t n = 0;
    auto it = RecordRange(store, Family::kMeta);
    for (it->SeekToFirst(); it->Valid() && n < kBatch; it->Next(), ++n) {
      b.Put(Family::kRequests, it->key(), it->value());
      b.Delete(Family::kMeta, it->key());
    }
    SW_RETURN_IF_ERROR(it->status());
    if (n == 0) return Status::OK();
    SW_RETURN_IF_ERROR(store.Write(b, /*sync=*/false));
  }
}

}  // namespace engine

// ---- RequestIds -------------------------------------------------------------------------------

RequestIds::RequestIds(Engine& engine)
    : host_(&engine::SideTableHostOf(engine, "RequestIds")) {}

Result<std::optional<RequestRecord>> RequestIds::Get(std::string_view id) const {
  auto v = host_->store().Get(Family::kRequests, RecordKey(id));
  if (!v.ok()) return v.status();
  if (!v->has_value()) return std::optional<RequestRecord>();
  auto r = DecodeRequestRecord(**v);
  if (!r.ok()) return r.status();
  return std::optional<RequestRecord>(std::move(*r));
}

Status RequestIds::PutAnswer(std::string_view id, RequestRecord r) {
  r.answered = true;
  return host_->WriteInGroup([&](GroupWrite& g) -> Status {
    const std::string key = RecordKey(id);
    auto old = g.Get(Family::kRequests, key);
    if (!old.ok()) return old.status();
    if (old->has_value()) {
      auto sealed = DecodeRequestRecord(**old);
      if (sealed.ok() && !sealed->answered) r.created_at_ms = sealed->created_at_ms;
    }
    if (r.created_at_ms == 0) r.created_at_ms = g.now();
    g.Put(Family::kRequests, key, EncodeRequestRecord(r));
    return Status::OK();
  });
}

Result<uint64_t> RequestIds::RemoveCreatedBefore(int64_t cutoff_ms, std::size_t group_limit) {
  // Once a minute the daemon drops what expired; a lone busy client makes hundreds of
  // thousands of records within the window, so the scan runs on the iterator's snapshot, not
  // inside a group, and no cap on the total leaves a backlog to grow.
  if (group_limit == 0) group_limit = 1;
  uint64_t removed = 0;
  std::vector<std::pair<std::string, std::string>> expired;  // key, value as scanned
  auto remove_expired = [&]() -> Status {
    if (expired.empty()) return Status::OK();
    uint64_t n = 0;
    Status st = host_->WriteInGroup([&](GroupWrite& g) -> Status {
      n = 0;
      for (const auto& [key, scanned] : expired) {
        // A record rewritten since the scan (a seal or an answer of a newer request under
        // the same id) is not this one.
        auto now = g.Get(Family::kRequests, key);
        if (!now.ok()) return now.status();
        if (!now->has_value() || **now != scanned) continue;
        g.Delete(Family::kRequests, key);
        ++n;
      }
      return Status::OK();
    });
    if (!st.ok()) return st;
    removed += n;
    expired.clear();
    return Status::OK();
  };
  auto it = RecordRange(host_->store(), Family::kRequests);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto r = DecodeRequestRecord(it->value());
    // A record that does not decode is not kept either: it can never answer a retry.
    if (r.ok() && r->created_at_ms >= cutoff_ms) continue;
    expired.emplace_back(std::string(it->key()), std::string(it->value()));
    if (expired.size() >= group_limit) SW_RETURN_IF_ERROR(remove_expired());
  }
  SW_RETURN_IF_ERROR(it->status());
  SW_RETURN_IF_ERROR(remove_expired());
  return removed;
}

Result<std::size_t> RequestIds::Count() const {
  std::size_t n = 0;
  auto it = RecordRange(host_->store(), Family::kRequests);
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  SW_RETURN_IF_ERROR(it->status());
  return n;
}

}  // namespace statewatch
