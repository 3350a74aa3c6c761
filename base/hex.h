// Hexadecimal text of bytes and back: the one encoder and decoder of the tree (context keys,
// token digests, frame hashes, dedupe keys, ids all spell bytes this way).
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_BASE_HEX_H_
#define STATEWATCH_BASE_HEX_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace statewatch::hex {

// Appends the two lower-case hex digits of `byte` to `*out`.
inline void AppendByte(unsigned char byte, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out->push_back(kDigits[byte >> 4]);
  out->push_back(kDigits[byte & 0x0F]);
}

// `bytes` as lower-case hex, two digits a byte.
inline std::string Encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendByte(static_cast<unsigned char>(c), &out);
  return out;
}

// The value of one hex digit (either case), or -1.
constexpr int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The bytes `text` spells, two hex digits (either case) a byte; nullopt for an odd length
// or any other character.
inline std::optional<std::string> Decode(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    int hi = DigitValue(text[i]), lo = DigitValue(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

}  // namespace statewatch::hex

#endif  // STATEWATCH_BASE_HEX_H_
