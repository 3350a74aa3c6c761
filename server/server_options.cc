#include "server/server_options.h"

#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
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

bool TokenConfigured(const ServerOptions& options) {
  return !options.token.empty() || !options.tokens.empty();
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

namespace {

bool HasSpaceOrSlash(std::string_view s) {
  return s.find_first_of(" \t\r\n/") != std::string_view::npos;
}

// "scheme://host[:port]" without a path, as browsers send it in the Origin header.
Status ValidateOrigin(const std::string& origin) {
  std::size_t sep = origin.find("://");
  if (sep == std::string::npos || sep == 0 || sep + 3 >= origin.size() ||
      HasSpaceOrSlash(std::string_view(origin).substr(sep + 3))) {
    return Status::InvalidArgument(
        "--allow-origin must be an origin such as http://localhost:3000 (scheme://host[:port], "
        "no path) (got \"" +
        origin + "\")");
  }
  return Status::OK();
}

Status ValidateAllowLists(const ServerOptions& o) {
  for (const std::string& origin : o.allow_origins) SW_RETURN_IF_ERROR(ValidateOrigin(origin));
  for (const std::string& host : o.allow_hosts) {
    // A wildcard is "*." and a suffix: "*" alone would undo the guard.
    std::size_t star = host.find('*');
    bool bad_star = star != std::string::npos &&
                    (star != 0 || host.size() < 3 || host[1] != '.' || host[2] == ':' ||
                     host.find('*', 1) != std::string::npos);
    if (host.empty() || HasSpaceOrSlash(host) || bad_star) {
      return Status::InvalidArgument(
          "--allow-host must be a host name with an optional port, such as "
          "statewatch.internal:7411 or *.svc.cluster.local (got \"" +
          host + "\")");
    }
  }
  for (const std::string& root : o.upstream.roots) {
    struct stat st {};
    if (root.empty() || stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("--upstream-root must be an existing directory (got \"" +
                                     root + "\")");
    }
  }
  return Status::OK();
}

Status ValidateLimits(const ServerOptions& o) {
  if (o.body_limit_bytes == 0) return Status::InvalidArgument("--body-limit must be positive");
  if (o.read_timeout_ms <= 0 || o.idle_timeout_ms <= 0 || o.shutdown_grace_ms < 0 ||
      o.wake_window_ms < 0) {
    return Status::InvalidArgument("timeouts must be positive");
  }
  if (o.threads < 0 || o.threads > 256) {
    return Status::InvalidArgument("--threads must be 0..256 (got " + std::to_string(o.threads) +
                                   ")");
  }
  if (o.max_connections < 0) {
    return Status::InvalidArgument("--max-connections must be positive (got " +
                                   std::to_string(o.max_connections) + ")");
  }
  if (o.max_streams <= 0) {
    return Status::InvalidArgument("--max-streams must be positive (got " +
                                   std::to_string(o.max_streams) + ")");
  }
  if (o.max_rows == 0) return Status::InvalidArgument("--max-rows must be positive");
  if (o.retention_ms <= 0) {
    return Status::InvalidArgument("--retention-ms must be positive (got " +
                                   std::to_string(o.retention_ms) + ")");
  }
  if (o.prune_interval_ms < 1000) {
    return Status::InvalidArgument("--prune-interval-ms must be at least 1000 (got " +
                                   std::to_string(o.prune_interval_ms) + ")");
  }
  if (o.ws_queue_limit == 0 || o.ws_queue_bytes == 0 || o.ws_message_limit == 0) {
    return Status::InvalidArgument("WebSocket limits must be positive");
  }
  return Status::OK();
}

}  // namespace

int DefaultMaxConnections(uint64_t open_files_limit) {
  uint64_t reserve = std::max<uint64_t>(64, open_files_limit / 4);
  uint64_t left = open_files_limit > reserve ? open_files_limit - reserve : 0;
  return static_cast<int>(std::clamp<uint64_t>(left, 16, 65536));
}

int EffectiveMaxConnections(const ServerOptions& options) {
  if (options.max_connections > 0) return options.max_connections;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return DefaultMaxConnections(1u << 20);
  }
  return DefaultMaxConnections(limit.rlim_cur);
}

Status ValidateServerOptions(const ServerOptions& o) {
  bool loopback = IsLoopbackHost(o.host);
  if (!loopback && !TokenConfigured(o)) {
    return Status::InvalidArgument(
        "listening on the non-loopback address " + o.host +
        " needs --token (better --token-file FILE, or auth.tokens in --config): a bearer token "
        "every request must carry");
  }
  if (!loopback && o.manual_clock) {
    return Status::InvalidArgument("--manual-clock is for tests on loopback only (got --listen " +
                                   o.host + ")");
  }
  SW_RETURN_IF_ERROR(ValidateLimits(o));
  return ValidateAllowLists(o);
}

}  // namespace statewatch::server
