#include "server/server_options.h"

#include <arpa/inet.h>

#include <charconv>

namespace statewatch::server {

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  return false;
}

Status ParseListen(const std::string& text, ServerOptions* options) {
  std::string host = options->host;
  std::string port_text = text;
  if (!text.empty() && text.front() == '[') {
    std::size_t close = text.find("]:");
    if (close == std::string::npos) {
      return Status::InvalidArgument("--listen must be HOST:PORT (got \"" + text + "\")");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else if (std::size_t colon = text.rfind(':'); colon != std::string::npos) {
    if (colon > 0) host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() ||
      port > 65535 || host.empty()) {
    return Status::InvalidArgument("--listen must be HOST:PORT with a port 0..65535 (got \"" +
                                   text + "\")");
  }
  options->host = host == "localhost" ? "127.0.0.1" : host;
  options->port = static_cast<uint16_t>(port);
  return Status::OK();
}

Status ValidateServerOptions(const ServerOptions& o) {
  bool loopback = IsLoopbackHost(o.host);
  if (!loopback && o.token.empty()) {
    return Status::InvalidArgument("listening on the non-loopback address " + o.host +
                                   " needs --token (a bearer token every request must carry)");
  }
  if (!loopback && o.manual_clock) {
    return Status::InvalidArgument("--manual-clock is for tests on loopback only (got --listen " +
                                   o.host + ")");
  }
  if (o.body_limit_bytes == 0) return Status::InvalidArgument("--body-limit must be positive");
  if (o.read_timeout_ms <= 0 || o.idle_timeout_ms <= 0 || o.shutdown_grace_ms < 0 ||
      o.wake_window_ms < 0) {
    return Status::InvalidArgument("timeouts must be positive");
  }
  if (o.threads < 0 || o.threads > 256) {
    return Status::InvalidArgument("--threads must be 0..256 (got " + std::to_string(o.threads) +
                                   ")");
  }
  return Status::OK();
}

}  // namespace statewatch::server
