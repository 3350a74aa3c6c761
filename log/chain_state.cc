#include "log/chain_state.h"

#include <algorithm>

#include "flatbuffers/flatbuffers.h"
#include "schema/log_frame_generated.h"

namespace statewatch::log {
namespace fb = statewatch::schema::log;

ChainState GenesisChainState(uint32_t partition, uint32_t partitions, uint64_t first_n) {
  ChainState state;
  state.partition = partition;
  state.partitions = partitions;
  state.next_n = first_n;
  return state;
}

std::string EncodeChainState(const ChainState& s) {
  flatbuffers::FlatBufferBuilder fbb(128);
  auto hash = fbb.CreateVector(s.last_hash.data(), s.last_hash.size());
  fbb.Finish(fb::CreateChainState(fbb, s.partition, s.partitions, s.batch_no, s.next_n, s.epoch,
                                  s.fence_epoch, hash));
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

Result<ChainState> DecodeChainState(std::string_view bytes) {
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (!verifier.VerifyBuffer<fb::ChainState>(nullptr)) {
    return Status::Corruption("not a chain state (FlatBuffers verification failed, " +
                              std::to_string(bytes.size()) + " bytes)");
  }
  const auto* t = flatbuffers::GetRoot<fb::ChainState>(bytes.data());
  if (t->last_hash() == nullptr || t->last_hash()->size() != 32) {
    return Status::Corruption("chain state hash is not 32 bytes");
  }
  ChainState s;
  s.partition = t->partition();
  s.partitions = t->partitions();
  s.batch_no = t->batch_no();
  s.next_n = t->next_n();
  s.epoch = t->epoch();
  s.fence_epoch = t->fence_epoch();
  std::copy(t->last_hash()->begin(), t->last_hash()->end(), s.last_hash.begin());
  return s;
}

}  // namespace statewatch::log
