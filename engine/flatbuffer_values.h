// Helpers shared by the value codecs (engine/records.cc, row_index.cc, table_codecs.cc, the
// webhook, watcher and session-mail tables, the cluster codecs in cluster/): aligned
// verification of a stored FlatBuffers value (Decode, the shape of every decoder) and the
// string conventions of the schema.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_ENGINE_FLATBUFFER_VALUES_H_
#define STATEWATCH_ENGINE_FLATBUFFER_VALUES_H_

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::engine::fbv {

// RocksDB hands out values at any address; FlatBuffers reads scalars in place and needs
// them aligned. Values that are not 8-byte aligned are copied into an aligned buffer first.
class AlignedBytes {
 public:
  explicit AlignedBytes(std::string_view bytes) : size_(bytes.size()) {
    // An empty value needs no copy (memcpy into an empty vector's null data is undefined).
    if (bytes.empty() || reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(uint64_t) == 0) {
      data_ = bytes.data();
      return;
    }
    // Whole words, rounded up without overflow ((size + 7) / 8 wraps near SIZE_MAX).
    copy_.resize(bytes.size() / 8 + (bytes.size() % 8 != 0 ? 1 : 0));
    std::memcpy(copy_.data(), bytes.data(), bytes.size());
    data_ = reinterpret_cast<const char*>(copy_.data());
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(data_); }
  std::size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::vector<uint64_t> copy_;
};

// Verifies `bytes` (aligned through `holder`) as a T. The result points into `holder`.
template <typename T>
Result<const T*> Verified(const AlignedBytes& holder, const char* what) {
  flatbuffers::Verifier v(holder.data(), holder.size());
  if (!v.VerifyBuffer<T>(nullptr)) {
    return Status::Corruption(std::string(what) + " record failed verification (" +
                              std::to_string(holder.size()) + " bytes)");
  }
  return flatbuffers::GetRoot<T>(holder.data());
}

// What Decode answers for a reader that answers R: R itself when it is a Status or a
// Result, Result<R> for a plain value.
template <typename R>
struct DecodeAnswer {
  using type = Result<R>;
};
template <typename R>
struct DecodeAnswer<Result<R>> {
  using type = Result<R>;
};
template <>
struct DecodeAnswer<Status> {
  using type = Status;
};

// The one shape of every decoder: verifies `bytes` as a T (Corruption naming `what` when it
// fails) and answers what `read` makes of the verified table. `read(const T&)` answers a
// value, a Result or a Status; the table it is handed lives only during the call.
template <typename T, typename Read>
typename DecodeAnswer<std::invoke_result_t<Read, const T&>>::type Decode(std::string_view bytes,
                                                                         const char* what,
                                                                         Read read) {
  AlignedBytes aligned(bytes);
  auto v = Verified<T>(aligned, what);
  if (!v.ok()) return v.status();
  return read(**v);
}

// The element at `i` of a [ulong] vector. The verifier checks only that a vector's length
// prefix is 4-byte aligned, so in a hostile (or damaged) record the 8-byte elements may sit
// at an address that is not 8-byte aligned even inside an aligned buffer; Vector::Get would
// then load misaligned (undefined behaviour). memcpy reads any address.
inline uint64_t U64At(const flatbuffers::Vector<uint64_t>& v, flatbuffers::uoffset_t i) {
  uint64_t x;
  std::memcpy(&x, v.Data() + static_cast<std::size_t>(i) * sizeof(uint64_t), sizeof x);
  return flatbuffers::EndianScalar(x);
}

inline std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// A `[ubyte]` field as bytes, valid while the buffer is; empty when the field is absent.
inline std::string_view Bytes(const flatbuffers::Vector<uint8_t>* v) {
  return v ? std::string_view(reinterpret_cast<const char*>(v->data()), v->size())
           : std::string_view();
}

// The finished buffer of `b`, valid until `b` is cleared or built on again (for encoders
// that keep one builder across calls).
inline std::string_view Written(flatbuffers::FlatBufferBuilder& b) {
  return std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

// The finished buffer of `b`, copied.
inline std::string Finish(flatbuffers::FlatBufferBuilder& b) { return std::string(Written(b)); }

// Optional strings are omitted from the buffer when empty.
inline flatbuffers::Offset<flatbuffers::String> OptStr(flatbuffers::FlatBufferBuilder& b,
                                                       const std::string& s) {
  return s.empty() ? 0 : b.CreateString(s);
}

}  // namespace statewatch::engine::fbv

#endif  // STATEWATCH_ENGINE_FLATBUFFER_VALUES_H_
