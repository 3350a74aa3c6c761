// The URL policy of outgoing webhooks (SSRF rules, docs/webhooks.md):
//  - only https:// URLs, and http:// to a loopback host (127.0.0.0/8, ::1, localhost),
//    unless allow_http;
//  - no user information, no fragment, no whitespace or control characters;
//  - the address actually connected to must not be in a private network (RFC 1918,
//    link-local incl. 169.254.169.254, unique-local and link-local IPv6, carrier-grade NAT,
//    unspecified, multicast, reserved; an IPv4-mapped IPv6 address counts as its IPv4
//    address) unless allow_private_networks; loopback is allowed (a receiver on the same
//    machine), and an http:// URL must connect to loopback unless allow_http.
// The name is checked when the webhook is registered (an IP literal at once) and every
// resolved address before it is connected to (net::Connection::AddressCheck), so a name
// that resolves elsewhere later (DNS rebinding) is refused at the attempt.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_WEBHOOKS_URL_POLICY_H_
#define STATEWATCH_WEBHOOKS_URL_POLICY_H_

#include <sys/socket.h>

#include <string>

#include "statewatch/status.h"

namespace statewatch::webhooks {

struct UrlPolicy {
  bool allow_http = false;
  bool allow_private_networks = false;
};

struct WebhookUrl {
  bool https = false;
  std::string host;    // without [] for IPv6
  std::string port;    // "443" / "80" when not given
  std::string target;  // path and query, "/" when empty
};

// Parses an http(s) URL. InvalidArgument naming the URL and what is wrong.
Result<WebhookUrl> ParseWebhookUrl(const std::string& text);

enum class AddressClass { kLoopback, kPrivate, kPublic };
// Classifies an IPv4 or IPv6 socket address (anything else is kPrivate: never connected).
AddressClass ClassifyAddress(const sockaddr* address);
// The same for an IP literal; nullopt-like kPublic is never returned for a non-literal:
// false when `host` is not an IP literal.
bool ClassifyLiteral(const std::string& host, AddressClass* out);

// The checks that need no resolution: scheme, and the host when it is an IP literal or
// "localhost". PermissionDenied naming the rule and the setting that lifts it.
Status CheckUrl(const WebhookUrl& url, const UrlPolicy& policy);
// Parse and CheckUrl.
Status CheckUrlText(const std::string& text, const UrlPolicy& policy);
// The check of one resolved address of `url` (PermissionDenied naming the address).
Status CheckAddress(const WebhookUrl& url, const sockaddr* address, const UrlPolicy& policy);

std::string AddressText(const sockaddr* address);

}  // namespace statewatch::webhooks

#endif  // STATEWATCH_WEBHOOKS_URL_POLICY_H_
