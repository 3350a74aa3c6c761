#include "webhooks/url_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <cstdint>
#include <cstring>

namespace statewatch::webhooks {

namespace {

bool LowerEquals(const std::string& a, const char* b) {
  if (a.size() != std::strlen(b)) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// `a` in network order as a host-order integer.
AddressClass ClassifyV4(uint32_t a) {
  auto in = [a](uint32_t net, int bits) {
    uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
    return (a & mask) == net;
  };
  if (in(0x7F000000, 8)) return AddressClass::kLoopback;                 // 127.0.0.0/8
  if (in(0x0A000000, 8) || in(0xAC100000, 12) || in(0xC0A80000, 16) ||  // RFC 1918
      in(0xA9FE0000, 16) ||                                              // link-local
      in(0x64400000, 10) ||                                              // CGNAT
      in(0x00000000, 8) ||                                               // "this network"
      in(0xC0000000, 24) || in(0xC0000200, 24) || in(0xC6336400, 24) ||  // IETF, TEST-NETs
      in(0xCB007100, 24) || in(0xC6120000, 15) ||                        // benchmarking
      in(0xE0000000, 4) || in(0xF0000000, 4)) {                          // multicast, reserved
    return AddressClass::kPrivate;
  }
  return AddressClass::kPublic;
}

AddressClass ClassifyV6(const in6_addr& a) {
  const uint8_t* b = a.s6_addr;
  static const uint8_t kLoop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const uint8_t kZero[16] = {};
  if (std::memcmp(b, kLoop, 16) == 0) return AddressClass::kLoopback;
  if (std::memcmp(b, kZero, 16) == 0) return AddressClass::kPrivate;  // unspecified
  auto v4 = [&](int at) {
    return ClassifyV4((uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) |
                      (uint32_t{b[at + 2]} << 8) | b[at + 3]);
  };
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, kMapped, 12) == 0) return v4(12);  // ::ffff:a.b.c.d
  static const uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kNat64, 12) == 0) return v4(12);  // 64:ff9b::/96
  if ((b[0] & 0xfe) == 0xfc) return AddressClass::kPrivate;                   // fc00::/7
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::kPrivate;   // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressClass::kPrivate;   // fec0::/10
  if (b[0] == 0xff) return AddressClass::kPrivate;                            // multicast
  if (b[0] == 0 && b[1] == 0) return AddressClass::kPrivate;  // ::/16: compatible, reserved
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) {
    return AddressClass::kPrivate;  // 2001:db8::/32 documentation
  }
  return AddressClass::kPublic;
}

const char* kPrivateRule =
    "is in a private, link-local or reserved network; webhooks are refused there unless "
    "webhooks.allowPrivateNetworks is true";

}  // namespace

Result<WebhookUrl> ParseWebhookUrl(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("url \"" + text + "\" " + why);
  };
  for (unsigned char c : text) {
    if (c <= 0x20 || c == 0x7f) return bad("must not contain whitespace or control characters");
  }
  WebhookUrl url;
  std::string rest;
  if (text.size() > 8 && LowerEquals(text.substr(0, 8), "https://")) {
    url.https = true;
    url.port = "443";
    rest = text.substr(8);
  } else if (text.size() > 7 && LowerEquals(text.substr(0, 7), "http://")) {
    url.port = "80";
    rest = text.substr(7);
  } else {
    return bad("must start with https:// (or http://)");
  }
  if (text.find('#') != std::string::npos) return bad("must not have a fragment (#)");
  std::size_t end = rest.find_first_of("/?");
  std::string authority = rest.substr(0, end);
  url.target = end == std::string::npos ? "/" : rest.substr(end);
  if (url.target[0] == '?') url.target.insert(0, "/");
  if (authority.find('@') != std::string::npos) return bad("must not carry user information (@)");
  if (!authority.empty() && authority[0] == '[') {
    std::size_t close = authority.find(']');
    if (close == std::string::npos) return bad("has an unclosed [ in its host");
    url.host = authority.substr(1, close - 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("has characters after its [host]");
      url.port = after.substr(1);
    }
    in6_addr a6{};
    if (::inet_pton(AF_INET6, url.host.c_str(), &a6) != 1) return bad("has a bad IPv6 address");
  } else {
    std::size_t colon = authority.rfind(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string::npos) url.port = authority.substr(colon + 1);
  }
  if (url.host.empty()) return bad("has no host");
  if (url.port.empty() || url.port.size() > 5) return bad("has a bad port");
  for (char c : url.port) {
    if (c < '0' || c > '9') return bad("has a bad port");
  }
  int port = std::stoi(url.port);
  if (port < 1 || port > 65535) return bad("has a port out of 1..65535");
  for (unsigned char c : url.host) {
    if (!(std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':' || c >= 0x80)) {
      return bad("has a bad character in its host");
    }
  }
  return url;
}

AddressClass ClassifyAddress(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    return ClassifyV4(ntohl(in->sin_addr.s_addr));
  }
  if (address->sa_family == AF_INET6) {
    return ClassifyV6(reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
  }
  return AddressClass::kPrivate;
}

bool ClassifyLiteral(const std::string& host, AddressClass* out) {
  in_addr a4{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    *out = ClassifyV4(ntohl(a4.s_addr));
    return true;
  }
  in6_addr a6{};
  if (::inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    *out = ClassifyV6(a6);
    return true;
  }
  return false;
}

std::string AddressText(const sockaddr* address) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, buf,
                sizeof buf);
  } else if (address->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, buf,
                sizeof buf);
  }
  return buf;
}

Status CheckUrl(const WebhookUrl& url, const UrlPolicy& policy) {
  AddressClass literal = AddressClass::kPublic;
  bool is_literal = ClassifyLiteral(url.host, &literal);
  bool loopback_name = (is_literal && literal == AddressClass::kLoopback) ||
                       LowerEquals(url.host, "localhost");
  if (!url.https && !policy.allow_http && !loopback_name) {
    return Status::PermissionDenied("url http://" + url.host +
                                    " is refused: webhooks need https:// (http:// only to a "
                                    "loopback host, unless webhooks.allowHttp is true)");
  }
  if (is_literal && literal == AddressClass::kPrivate && !policy.allow_private_networks) {
    return Status::PermissionDenied("url host " + url.host + " " + kPrivateRule);
  }
  return Status::OK();
}

Status CheckUrlText(const std::string& text, const UrlPolicy& policy) {
  auto url = ParseWebhookUrl(text);
  if (!url.ok()) return url.status();
  return CheckUrl(*url, policy);
}

Status CheckAddress(const WebhookUrl& url, const sockaddr* address, const UrlPolicy& policy) {
  AddressClass c = ClassifyAddress(address);
  if (c == AddressClass::kPrivate && !policy.allow_private_networks) {
    return Status::PermissionDenied("address " + AddressText(address) + " of " + url.host + " " +
                                    kPrivateRule);
  }
  if (!url.https && !policy.allow_http && c != AddressClass::kLoopback) {
    return Status::PermissionDenied("address " + AddressText(address) + " of " + url.host +
                                    " is not loopback: http:// webhooks go only to loopback "
                                    "unless webhooks.allowHttp is true");
  }
  return Status::OK();
}

}  // namespace statewatch::webhooks
