// The signature of a webhook call (docs/webhooks.md "Verifying a call"):
//
//   Statewatch-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>
//
// where the HMAC is keyed with the webhook's secret over the bytes
//   <unix seconds> "." <body>
// (the decimal timestamp of the t= field, one '.', then the request body exactly as sent),
// written as 64 lower-case hex digits. A receiver recomputes it, compares in constant time
// and refuses a timestamp too far from its own clock (a replayed call). The body of one
// idempotency key never changes; the timestamp is that of the attempt.
//
// Thread-safe: pure functions (OpenSSL's HMAC).
#ifndef STATEWATCH_WEBHOOKS_SIGNATURE_H_
#define STATEWATCH_WEBHOOKS_SIGNATURE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace statewatch::webhooks {

inline constexpr const char* kSignatureHeader = "Statewatch-Signature";

// 64 lower-case hex digits of HMAC-SHA256(secret, message).
std::string HmacSha256Hex(std::string_view secret, std::string_view message);
// The header's value for a call at `unix_seconds`.
std::string SignatureHeader(std::string_view secret, int64_t unix_seconds, std::string_view body);
// The receiver's check: `header` is well formed, its v1 matches, and its t is within
// `tolerance_s` of `now_s`.
bool VerifySignature(std::string_view secret, std::string_view header, std::string_view body,
                     int64_t now_s, int64_t tolerance_s);

}  // namespace statewatch::webhooks

#endif  // STATEWATCH_WEBHOOKS_SIGNATURE_H_
