#include "storage/wal_check.h"

#include <array>
#include <cstring>
#include <fstream>
#include <optional>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace statewatch::storage {

namespace {

// The log format (RocksDB db/log_format.h), DO NOT CHANGE: it is RocksDB's on-disk format.
constexpr std::size_t kBlockSize = 32768;
constexpr std::size_t kHeaderSize = 7;            // crc32c:4 length:2 type:1
constexpr std::size_t kRecyclableHeaderSize = 11;  // + log number:4
constexpr uint32_t kMaskDelta = 0xa282ead8u;
enum RecordType : uint8_t {
  kZeroType = 0,
  kFullType = 1,
  kFirstType = 2,
  kMiddleType = 3,
  kLastType = 4,
  kRecyclableFullType = 5,
  kRecyclableLastType = 8,
  kSetCompressionType = 9,
};
constexpr std::size_t kBatchHeaderSize = 12;  // sequence:8 count:4 (little-endian)

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // RocksDB's fixed encodings are little-endian, as is this machine
}
uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

const std::array<uint32_t, 256>& Table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
      t[i] = c;
    }
    return t;
  }();
  return table;
}

uint32_t Crc32cPortable(uint32_t crc, const unsigned char* p, std::size_t n) {
  const auto& t = Table();
  for (std::size_t i = 0; i < n; ++i) crc = t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(uint32_t crc, const unsigned char* p,
                                                          std::size_t n) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}
#endif

struct Damage {
  std::size_t offset;
  std::string what;
};

// Walks one file. `expected` is the sequence the file's first batch must start at when the
// file before it ended in damage (nullopt: no constraint).
class FileScan {
 public:
  FileScan(const std::string& path, const std::string& data, std::optional<uint64_t>* expected)
      : path_(path), data_(data), expected_(expected) {}

  // After Run(): the file ended in a damaged (torn) tail, starting at tail_offset().
  bool torn_tail() const { return torn_tail_; }
  std::size_t tail_offset() const { return tail_offset_; }

  Status Run() {
    std::size_t pos = 0;
    while (pos + kHeaderSize <= data_.size()) {
      std::size_t block_left = kBlockSize - pos % kBlockSize;
      if (block_left < kHeaderSize) {  // the writer pads a block's last bytes with zeros
        pos += block_left;
        continue;
      }
      std::size_t next = 0;
      std::string bad = Physical(pos, block_left, &next);
      if (!bad.empty()) {
        torn_tail_ = true;
        tail_offset_ = pos;
        return ValidAfterDamage(Damage{pos, bad});
      }
      SW_RETURN_IF_ERROR(valid_status_);
      pos = next;
    }
    return Status::OK();
  }

 private:
  // After damage RocksDB's reader drops the rest of the block and goes on; records after the
  // damage may start at any byte. So every later offset is tried: a valid record there
  // (type, length and CRC-32C all right) means the damage is not a torn tail. Runs only on
  // damaged logs.
  Status ValidAfterDamage(const Damage& damage) {
    for (std::size_t pos = damage.offset + 1; pos + kHeaderSize <= data_.size(); ++pos) {
      std::size_t block_left = kBlockSize - pos % kBlockSize;
      if (block_left < kHeaderSize || data_[pos + 6] == 0) continue;
      std::size_t next = 0;
      if (!Physical(pos, block_left, &next, /*check_only=*/true).empty()) continue;
      return Status::Corruption(
          "write-ahead log " + path_ + " is damaged at byte " + std::to_string(damage.offset) +
          " (" + damage.what + ") and a valid record follows at byte " + std::to_string(pos) +
          ": opening would silently drop acknowledged writes");
    }
    return Status::OK();
  }

  // Checks the physical record at `pos`; on success sets *next and (unless `check_only`)
  // feeds the fragment to the batch being assembled. Returns what is wrong, or "".
  std::string Physical(std::size_t pos, std::size_t block_left, std::size_t* next,
                       bool check_only = false) {
    const char* h = data_.data() + pos;
    uint32_t length = static_cast<uint8_t>(h[4]) | (static_cast<uint8_t>(h[5]) << 8);
    uint8_t type = static_cast<uint8_t>(h[6]);
    if (type == kZeroType && length == 0) return "zeroed record";
    bool recyclable = type >= kRecyclableFullType && type <= kRecyclableLastType;
    if (type == kZeroType || (type > kRecyclableLastType && type != kSetCompressionType)) {
      return "unknown record type " + std::to_string(type);
    }
    std::size_t header = recyclable ? kRecyclableHeaderSize : kHeaderSize;
    if (header + length > block_left || pos + header + length > data_.size()) {
      return "record length " + std::to_string(length) + " runs past its block";
    }
    uint32_t want = Load32(h) - kMaskDelta;
    want = (want >> 17) | (want << 15);
    if (Crc32c(std::string_view(h + 6, header - 6 + length)) != want) return "checksum mismatch";
    *next = pos + header + length;
    if (!check_only) Fragment(type, std::string_view(h + header, length));
    return "";
  }

  void Fragment(uint8_t type, std::string_view payload) {
    uint8_t base = type >= kRecyclableFullType && type <= kRecyclableLastType ? type - 4 : type;
    if (base == kFullType || base == kFirstType) batch_.clear();
    if (base >= kFullType && base <= kLastType && batch_.size() < kBatchHeaderSize) {
      batch_.append(payload.substr(0, kBatchHeaderSize - batch_.size()));
    }
    if ((base == kFullType || base == kLastType) && batch_.size() == kBatchHeaderSize) {
      Batch(Load64(batch_.data()), Load32(batch_.data() + 8));
    }
  }

  // Only across a torn tail: that is where RocksDB's point-in-time recovery stops, and it
  // then drops the next file silently unless it continues the sequence numbers. (Between
  // intact files a gap is harmless and can be real: an obsolete log left behind when a crash
  // interrupted the deletion of obsolete logs, newest first.)
  void Batch(uint64_t sequence, uint32_t count) {
    if (first_batch_ && *expected_ && sequence > **expected_ && valid_status_.ok()) {
      valid_status_ = Status::Corruption(
          "write-ahead log " + path_ + " continues at sequence " + std::to_string(sequence) +
          " but the log before it ends at " + std::to_string(**expected_ - 1) +
          ": acknowledged writes in between are missing");
    }
    first_batch_ = false;
    *expected_ = sequence + count;
  }

  const std::string& path_;
  const std::string& data_;
  std::optional<uint64_t>* expected_;
  std::string batch_;
  Status valid_status_;
  bool first_batch_ = true;
  bool torn_tail_ = false;
  std::size_t tail_offset_ = 0;
};

}  // namespace

uint32_t Crc32c(std::string_view data) {
  auto p = reinterpret_cast<const unsigned char*>(data.data());
#if defined(__x86_64__)
  static const bool hardware = __builtin_cpu_supports("sse4.2");
  if (hardware) return ~Crc32cHardware(~0u, p, data.size());
#endif
  return ~Crc32cPortable(~0u, p, data.size());
}

Status CheckWriteAheadLogs(const std::vector<std::string>& wal_files, std::vector<TornTail>* torn) {
  std::optional<uint64_t> expected;
  for (const std::string& path : wal_files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;  // deleted meanwhile by a live database: it was obsolete
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    FileScan scan(path, data, &expected);
    SW_RETURN_IF_ERROR(scan.Run());
    if (!scan.torn_tail()) {
      expected.reset();  // the next file is not constrained
    } else if (torn != nullptr) {
      torn->push_back(TornTail{path, scan.tail_offset(), data.size() - scan.tail_offset()});
    }
  }
  return Status::OK();
}

}  // namespace statewatch::storage
