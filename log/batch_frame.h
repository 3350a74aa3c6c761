// Batch frames: what a partition's owner appends to its log in cluster mode. Each log record
// is one LogFrame (schema/log_frame.fbs): a header {partition, P, epoch, batchNo, first n,
// n count, prevHash} and a body — a commit group (the engine's encoded batch, opaque here)
// or a Fence{epoch} by which a new owner shuts out the old one.
//
// The frames of a partition form a hash chain: prevHash is the SHA-256 of the previous
// frame's bytes exactly as appended, so a lost, duplicated or reordered batch breaks the
// chain (ChainVerifier finds it). The first frame's prevHash is 32 zero bytes.
//
// Thread-safe: plain values and pure functions.
#ifndef STATEWATCH_LOG_BATCH_FRAME_H_
#define STATEWATCH_LOG_BATCH_FRAME_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "statewatch/status.h"

namespace statewatch::log {

// A SHA-256 digest.
using FrameHash = std::array<uint8_t, 32>;

// SHA-256 of `bytes` (OpenSSL libcrypto).
FrameHash HashFrame(std::string_view bytes);

// Lower-case hex, for messages.
std::string HashHex(const FrameHash& hash);

enum class FrameKind { kCommitGroup, kFence };

struct BatchHeader {
  uint32_t partition = 0;
  uint32_t partitions = 1;
  uint64_t epoch = 0;
  uint64_t batch_no = 0;
  uint64_t first_n = 0;
  uint32_t n_count = 0;  // 0 for a fence
  FrameHash prev_hash{};
  bool operator==(const BatchHeader&) const = default;
};

// A decoded frame. `body` (a commit group's bytes) and `owner` (a fence's node) point into
// the bytes given to DecodeFrame and live as long as they do.
struct FrameView {
  BatchHeader header;
  FrameKind kind = FrameKind::kCommitGroup;
  std::string_view body;
  std::string_view owner;
};

// The bytes of a commit-group frame carrying `body`.
std::string EncodeCommitGroupFrame(const BatchHeader& header, std::string_view body);

// The bytes of a fence frame; `header.epoch` is the epoch it establishes and
// `header.n_count` must be 0.
std::string EncodeFenceFrame(const BatchHeader& header, std::string_view owner);

// Decodes and verifies (flatbuffers::Verifier) a frame. Corruption, naming the size, when
// the bytes are not a well-formed LogFrame (including a prevHash that is not 32 bytes).
// REQUIRES: bytes.data() is 8-byte aligned (a std::string's buffer is; a slice of a network
// buffer may not be): FlatBuffers reads its fields in place.
Result<FrameView> DecodeFrame(std::string_view bytes);

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_BATCH_FRAME_H_
