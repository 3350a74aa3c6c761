#include "server/request_guard.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "base/ascii.h"

namespace statewatch::server {
namespace {

// A Host value (or an --allow-host entry) split into a lower-case name and a port.
struct HostPort {
  std::string name;
  std::optional<uint16_t> port;
};

// "name", "name:port", "[v6]", "[v6]:port"; nullopt when malformed (an unbracketed IPv6
// address, a port that is not 1..65535).
std::optional<HostPort> SplitHost(std::string_view value) {
  value = ascii::Trim(value, ascii::kHttpSpace);
  if (value.empty()) return std::nullopt;
  std::string_view name = value, port;
  bool has_port = false;
  if (value.front() == '[') {
    std::size_t close = value.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    name = value.substr(0, close + 1);
    std::string_view rest = value.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else if (std::size_t colon = value.find(':'); colon != std::string_view::npos) {
    if (value.find(':', colon + 1) != std::string_view::npos) return std::nullopt;
    name = value.substr(0, colon);
    port = value.substr(colon + 1);
    has_port = true;
  }
  if (name.empty()) return std::nullopt;
  HostPort out{ascii::AsciiToLower(name), std::nullopt};
  if (has_port) {
    unsigned n = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || ptr != port.data() + port.size() || n == 0 || n > 65535) {
      return std::nullopt;
    }
    out.port = static_cast<uint16_t>(n);
  }
  return out;
}

// "*.suffix" matches one or more labels before ".suffix"; any other entry only itself.
bool NameMatches(std::string_view entry, std::string_view name) {
  if (entry.rfind("*.", 0) != 0) return entry == name;
  std::string_view suffix = entry.substr(1);  // ".suffix"
  return name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix &&
         name[name.size() - suffix.size() - 1] != '.';
}

// GET or HEAD of /healthz or /readyz, with or without a query.
bool IsHealthProbe(const RequestHead& head) {
  if (head.method != "GET" && head.method != "HEAD") return false;
  std::string_view path = head.target.substr(0, head.target.find('?'));
  return path == "/healthz" || path == "/readyz";
}

Refusal Refuse(int status, std::string code, std::string message) {
  return Refusal{status, std::move(code), std::move(message)};
}

}  // namespace

RequestGuard::RequestGuard(const ServerOptions& options, uint16_t port)
    : port_(port),
      // A listener that requires a token is no browser's target: whoever reaches it must
      // hold a token, so a Host naming a container, a pod IP or a service is fine.
      any_host_((TokenConfigured(options) || !IsLoopbackHost(options.host)) &&
                options.allow_hosts.empty()) {
  listen_host_ = ascii::AsciiToLower(options.host);
  if (listen_host_.find(':') != std::string::npos && listen_host_.front() != '[') {
    listen_host_ = "[" + listen_host_ + "]";
  }
  names_ = {"localhost", "127.0.0.1", "[::1]", listen_host_};
  for (const std::string& h : options.allow_hosts)
    allow_hosts_.push_back(ascii::AsciiToLower(ascii::Trim(h, ascii::kHttpSpace)));
  for (const std::string& o : options.allow_origins)
    allow_origins_.push_back(ascii::AsciiToLower(ascii::Trim(o, ascii::kHttpSpace)));
  // The daemon's own origins: only a page served by this very host and port carries them,
  // and the daemon serves none; WebSocket clients such as Python's websocket-client send
  // one by default.
  for (const std::string& name : names_) {
    allow_origins_.push_back("http://" + name + ":" + std::to_string(port_));
  }
}

bool RequestGuard::HostAllowed(std::string_view host) const {
  std::optional<HostPort> hp = SplitHost(host);
  if (!hp) return false;
  bool our_port = !hp->port || *hp->port == port_;
  if (any_host_) return true;
  if (our_port && std::find(names_.begin(), names_.end(), hp->name) != names_.end()) return true;
  for (const std::string& entry : allow_hosts_) {
    std::optional<HostPort> allowed = SplitHost(entry);
    if (!allowed || !NameMatches(allowed->name, hp->name)) continue;
    if (!allowed->port || allowed->port == hp->port) return true;
  }
  return false;
}

bool RequestGuard::OriginAllowed(std::string_view origin) const {
  std::string lower = ascii::AsciiToLower(ascii::Trim(origin, ascii::kHttpSpace));
  return std::find(allow_origins_.begin(), allow_origins_.end(), lower) != allow_origins_.end();
}

std::optional<Refusal> RequestGuard::Check(const RequestHead& head) const {
  if (!head.host) {
    if (head.version >= 11) {
      return Refuse(400, "bad_request", "an HTTP/1.1 request needs a Host header");
    }
  } else if (!IsHealthProbe(head) && !HostAllowed(*head.host)) {
    return Refuse(421, "misdirected_request",
                  "this server does not answer for Host \"" + std::string(*head.host) +
                      "\" (it answers " + listen_host_ +
                      ", localhost, 127.0.0.1 and [::1] on port " + std::to_string(port_) +
                      ", and the names given with --allow-host)");
  }
  if (head.origin && !OriginAllowed(*head.origin)) {
    return Refuse(403, "forbidden_origin",
                  "requests from the web origin \"" + std::string(*head.origin) +
                      "\" are refused (a browser page may not call this server; allow an origin "
                      "with --allow-origin)");
  }
  if (head.has_body && !IsJsonContentType(head.content_type.value_or(""))) {
    return Refuse(415, "unsupported_media_type",
                  "a request body must be sent with Content-Type: application/json (got " +
                      (head.content_type ? "\"" + std::string(*head.content_type) + "\""
                                         : std::string("none")) +
                      ")");
  }
  return std::nullopt;
}

bool IsJsonContentType(std::string_view content_type) {
  std::string_view media =
      ascii::Trim(content_type.substr(0, content_type.find(';')), ascii::kHttpSpace);
  return ascii::EqualsIgnoreCase(media, "application/json");
}

std::string_view BearerToken(std::string_view authorization) {
  std::string_view value = ascii::Trim(authorization, ascii::kHttpSpace);
  std::size_t space = value.find(' ');
  if (space == std::string_view::npos ||
      !ascii::EqualsIgnoreCase(value.substr(0, space), "bearer")) {
    return {};
  }
  return ascii::Trim(value.substr(space + 1), ascii::kHttpSpace);
}

}  // namespace statewatch::server
