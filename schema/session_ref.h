// SessionRef: the persisted 64-bit id interned once per (agentId, sessionKey).
// DO NOT CHANGE: refs are stored in keys and records; they are never reused (0 is "none").
#ifndef STATEWATCH_SCHEMA_SESSION_REF_H_
#define STATEWATCH_SCHEMA_SESSION_REF_H_

#include <compare>
#include <cstdint>
#include <functional>

namespace statewatch {

struct SessionRef {
  uint64_t value = 0;
  explicit operator bool() const { return value != 0; }
  bool operator==(const SessionRef&) const = default;
  auto operator<=>(const SessionRef&) const = default;
};

}  // namespace statewatch

template <>
struct std::hash<statewatch::SessionRef> {
  std::size_t operator()(const statewatch::SessionRef& r) const noexcept {
    return std::hash<uint64_t>()(r.value);
  }
};

#endif  // STATEWATCH_SCHEMA_SESSION_REF_H_
