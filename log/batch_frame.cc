#include "log/batch_frame.h"

#include <cassert>

#include "base/hex.h"
#include "base/sha256.h"
#include "flatbuffers/flatbuffers.h"
#include "schema/log_frame_generated.h"

namespace statewatch::log {
namespace fb = statewatch::schema::log;

// All zeros when OpenSSL cannot allocate (base/sha256.h): a hash no real frame has, so the
// chain check still fails loudly.
FrameHash HashFrame(std::string_view bytes) { return sha256::Of(bytes); }

std::string HashHex(const FrameHash& hash) {
  return hex::Encode(std::string_view(reinterpret_cast<const char*>(hash.data()), hash.size()));
}

namespace {

flatbuffers::Offset<fb::BatchHeader> BuildHeader(flatbuffers::FlatBufferBuilder& fbb,
                                                 const BatchHeader& h) {
  auto prev = fbb.CreateVector(h.prev_hash.data(), h.prev_hash.size());
  return fb::CreateBatchHeader(fbb, h.partition, h.partitions, h.epoch, h.batch_no, h.first_n,
                               h.n_count, prev);
}

std::string Finish(flatbuffers::FlatBufferBuilder& fbb, flatbuffers::Offset<fb::LogFrame> frame) {
  fbb.Finish(frame);
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

}  // namespace

std::string EncodeCommitGroupFrame(const BatchHeader& header, std::string_view body) {
  flatbuffers::FlatBufferBuilder fbb(body.size() + 160);
  auto bytes = fbb.CreateVector(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  auto group = fb::CreateCommitGroup(fbb, bytes);
  auto head = BuildHeader(fbb, header);
  return Finish(fbb, fb::CreateLogFrame(fbb, head, fb::FrameBody::CommitGroup, group.Union()));
}

std::string EncodeFenceFrame(const BatchHeader& header, std::string_view owner) {
  assert(header.n_count == 0 && "a fence uses no sequence numbers");
  flatbuffers::FlatBufferBuilder fbb(192);
  auto name = fbb.CreateString(owner.data(), owner.size());
  auto fence = fb::CreateFence(fbb, name);
  auto head = BuildHeader(fbb, header);
  return Finish(fbb, fb::CreateLogFrame(fbb, head, fb::FrameBody::Fence, fence.Union()));
}

namespace {

Status NotAFrame(std::string_view bytes, const char* what) {
  return Status::Corruption(std::string("not a log frame (") + what + ", " +
                            std::to_string(bytes.size()) + " bytes)");
}

std::string_view View(const flatbuffers::Vector<uint8_t>* v) {
  if (v == nullptr) return {};
  return {reinterpret_cast<const char*>(v->data()), v->size()};
}

}  // namespace

Result<FrameView> DecodeFrame(std::string_view bytes) {
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (!verifier.VerifyBuffer<fb::LogFrame>(nullptr)) {
    return NotAFrame(bytes, "FlatBuffers verification failed");
  }
  const fb::LogFrame* frame = flatbuffers::GetRoot<fb::LogFrame>(bytes.data());
  const fb::BatchHeader* h = frame->header();
  if (h == nullptr) return NotAFrame(bytes, "no header");
  if (h->prev_hash() == nullptr || h->prev_hash()->size() != 32) {
    return NotAFrame(bytes, "prevHash is not 32 bytes");
  }
  FrameView view;
  view.header = {h->partition(), h->partitions(), h->epoch(), h->batch_no(),
                 h->first_n(),   h->n_count(),    {}};
  std::copy(h->prev_hash()->begin(), h->prev_hash()->end(), view.header.prev_hash.begin());
  if (const fb::CommitGroup* group = frame->body_as_CommitGroup()) {
    view.kind = FrameKind::kCommitGroup;
    view.body = View(group->body());
  } else if (const fb::Fence* fence = frame->body_as_Fence()) {
    view.kind = FrameKind::kFence;
    if (fence->owner() != nullptr) view.owner = fence->owner()->string_view();
  } else {
    return NotAFrame(bytes, "unknown body kind");
  }
  return view;
}

}  // namespace statewatch::log
