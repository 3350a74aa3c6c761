// The plain-socket HTTP/1.1 client (moved here from cli/remote.cc so that non-CLI code can
// use it), plus the decoding of chunked answers: etcd's JSON gateway answers chunked.
#include "net/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

namespace statewatch::net {

namespace {

using Clock = std::chrono::steady_clock;

struct Url {
  std::string host;
  std::string port = "80";
  std::string prefix;  // a path the server is mounted under, without the trailing '/'
  bool tls = false;    // https://
};

// The messages still say --server: the CLI is where a user types the URL.
Result<Url> ParseUrl(const std::string& text) {
  Url url;
  std::string rest;
  if (text.rfind("http://", 0) == 0) {
    rest = text.substr(7);
  } else if (text.rfind("https://", 0) == 0) {
    rest = text.substr(8);
    url.tls = true;
    url.port = "443";
  } else {
    return Status::InvalidArgument("--server must be http(s)://HOST[:PORT] (got \"" + text +
                                   "\")");
  }
  if (std::size_t slash = rest.find('/'); slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    rest.resize(slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  std::size_t colon = rest.rfind(':');
  if (!rest.empty() && rest[0] == '[') {  // [v6]:port
    std::size_t close = rest.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("--server: unclosed [ in " + text);
    url.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') url.port = rest.substr(close + 2);
  } else if (colon != std::string::npos) {
    url.host = rest.substr(0, colon);
    url.port = rest.substr(colon + 1);
  } else {
    url.host = rest;
  }
  if (url.host.empty() || url.port.empty()) {
    return Status::InvalidArgument("--server must be http(s)://HOST[:PORT] (got \"" + text +
                                   "\")");
  }
  return url;
}

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// A connected socket, closed on scope exit.
// Waits until fd is ready for `events` or the deadline passes.
Status WaitFor(int fd, short events, Clock::time_point deadline, const char* doing) {
  for (;;) {
    int left = MillisLeft(deadline);
    if (left <= 0) return Status::IOError(std::string(doing) + ": no answer before the timeout");
    pollfd p{fd, events, 0};
    int ready = ::poll(&p, 1, left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Status::IOError(std::string(doing) + ": " + std::strerror(errno));
    if (ready > 0) return Status::OK();
  }
}

class Socket {
 public:
  ~Socket() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }

  // TLS over the connected socket (non-blocking from here, every wait bounded by
  // `deadline`): the handshake, the certificate verified against options' CA (else the
  // system store) and the URL's host.
  Status StartTls(const Url& url, const TlsClientOptions& options, Clock::time_point deadline) {
    auto ctx = MakeTlsClientContext(options);
    if (!ctx.ok()) return ctx.status();
    ctx_ = std::move(*ctx);
    ssl_ = SSL_new(ctx_.get());
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
      return Status::IOError("cannot start TLS: " + TakeTlsErrors());
    }
    in6_addr ip{};
    bool is_ip = ::inet_pton(AF_INET, url.host.c_str(), &ip) == 1 ||
                 ::inet_pton(AF_INET6, url.host.c_str(), &ip) == 1;
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), url.host.c_str());
    } else {
      SSL_set_tlsext_host_name(ssl_, url.host.c_str());
      SSL_set1_host(ssl_, url.host.c_str());
    }
    int flags = ::fcntl(fd_, F_GETFL, 0);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) < 0) {
      return Status::IOError(std::string("cannot start TLS: ") + std::strerror(errno));
    }
    const std::string where = url.host + ":" + url.port;
    for (;;) {
      ERR_clear_error();
      int rc = SSL_connect(ssl_);
      if (rc == 1) return Status::OK();
      int err = SSL_get_error(ssl_, rc);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        SW_RETURN_IF_ERROR(WaitFor(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline,
                                   "TLS handshake"));
        continue;
      }
      long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        TakeTlsErrors();
        return Status::IOError("TLS: the certificate of " + where +
                               " is not trusted: " + X509_verify_cert_error_string(verify) +
                               " (verify error " + std::to_string(verify) +
                               (options.ca_file.empty()
                                    ? "; --ca-file FILE trusts a CA beyond the system store)"
                                    : "; checked against " + options.ca_file + ")"));
      }
      std::string why = TakeTlsErrors();
      if (why.empty()) why = err == SSL_ERROR_SYSCALL && errno != 0 ? std::strerror(errno)
                                                                    : "the server closed the connection";
      return Status::IOError("TLS handshake with " + where + " failed: " + why);
    }
  }

  // Hands the descriptor over: the caller closes it.
  int Release() { return std::exchange(fd_, -1); }
  // Connects without blocking past `deadline`: a member that drops SYNs must cost the
  // caller its timeout, not the kernel's minutes of retries.
  Status Connect(const Url& url, Clock::time_point deadline) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found); rc != 0) {
      return Status::IOError("cannot resolve " + url.host + ":" + url.port + ": " +
                             ::gai_strerror(rc));
    }
    std::string why = "no address";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd_ >= 0) {
        int err = ConnectOne(a, deadline);
        if (err == 0) break;
        why = err == ETIMEDOUT ? "no connection before the timeout" : std::strerror(err);
        ::close(fd_);
      } else {
        why = std::strerror(errno);
      }
      fd_ = -1;
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) return Status::IOError("cannot connect to " + url.host + ":" + url.port + ": " + why);
    return Status::OK();
  }
  Status SendAll(const std::string& bytes, Clock::time_point deadline) {
    if (ssl_ != nullptr) return TlsSendAll(bytes, deadline);
    for (std::size_t sent = 0; sent < bytes.size();) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Status::IOError(std::string("sending the request: ") + std::strerror(errno));
      sent += static_cast<std::size_t>(n);
    }
    return Status::OK();
  }
  // Reads until the peer closes or the deadline passes.
  Status ReadAll(std::string* out, Clock::time_point deadline) {
    if (ssl_ != nullptr) return TlsReadAll(out, deadline);
    char buf[16384];
    for (;;) {
      int left = MillisLeft(deadline);
      if (left <= 0) return Status::IOError("no complete answer before the timeout");
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, left);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(std::string("reading the answer: ") + std::strerror(errno));
      if (n == 0) return Status::OK();
      out->append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  // 0 or the errno of the failed connect (ETIMEDOUT at the deadline). Leaves fd_ blocking.
  int ConnectOne(const addrinfo* a, Clock::time_point deadline) {
    int flags = ::fcntl(fd_, F_GETFL, 0);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) < 0) return errno;
    int err = 0;
    if (::connect(fd_, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) return errno;
      for (;;) {
        int left = MillisLeft(deadline);
        if (left <= 0) return ETIMEDOUT;
        pollfd p{fd_, POLLOUT, 0};
        int ready = ::poll(&p, 1, left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return errno;
        if (ready == 0) return ETIMEDOUT;
        break;
      }
      socklen_t len = sizeof(err);
      if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
      if (err != 0) return err;
    }
    if (::fcntl(fd_, F_SETFL, flags) < 0) return errno;
    return 0;
  }

  Status TlsSendAll(const std::string& bytes, Clock::time_point deadline) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      ERR_clear_error();
      int n = SSL_write(ssl_, bytes.data() + sent, static_cast<int>(bytes.size() - sent));
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      int err = SSL_get_error(ssl_, n);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        std::string why = TakeTlsErrors();
        return Status::IOError("sending the request: " +
                               (why.empty() ? std::string(std::strerror(errno)) : why));
      }
      SW_RETURN_IF_ERROR(WaitFor(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline,
                                 "sending the request"));
    }
    return Status::OK();
  }

  Status TlsReadAll(std::string* out, Clock::time_point deadline) {
    char buf[16384];
    for (;;) {
      ERR_clear_error();
      int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n > 0) {
        out->append(buf, static_cast<std::size_t>(n));
        continue;
      }
      int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_ZERO_RETURN) return Status::OK();  // close_notify or EOF
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        std::string why = TakeTlsErrors();
        return Status::IOError("reading the answer: " +
                               (why.empty() ? std::string(std::strerror(errno)) : why));
      }
      Status waited = WaitFor(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline,
                              "reading the answer");
      if (!waited.ok()) return Status::IOError("no complete answer before the timeout");
    }
  }

  int fd_ = -1;
  SslCtxPtr ctx_;       // with TLS
  SSL* ssl_ = nullptr;  // with TLS
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The body of a Transfer-Encoding: chunked answer: chunks of "<hex size>[;ext]\r\n<data>\r\n",
// ended by a zero-size chunk and optional trailers up to an empty line.
Result<std::string> DecodeChunked(std::string_view in) {
  std::string out;
  std::size_t pos = 0;
  for (int chunk = 0;; ++chunk) {
    std::size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) {
      return Status::IOError("chunked answer: chunk " + std::to_string(chunk) +
                             " has no complete size line (the answer ends after " +
                             std::to_string(in.size()) + " body bytes)");
    }
    std::string_view line = in.substr(pos, eol - pos);
    std::string_view digits = Trim(line.substr(0, line.find(';')));
    uint64_t size = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
      return Status::IOError("chunked answer: chunk " + std::to_string(chunk) +
                             " has a bad size line \"" + std::string(line.substr(0, 40)) + "\"");
    }
    pos = eol + 2;
    if (size == 0) break;
    if (size > in.size() - pos || in.size() - pos - size < 2) {
      return Status::IOError("chunked answer: chunk " + std::to_string(chunk) + " declares " +
                             std::to_string(size) + " bytes but only " +
                             std::to_string(in.size() - pos) + " follow");
    }
    out.append(in.substr(pos, size));
    pos += size;
    if (in.substr(pos, 2) != "\r\n") {
      return Status::IOError("chunked answer: chunk " + std::to_string(chunk) +
                             " is not followed by CRLF");
    }
    pos += 2;
  }
  // Trailers (ignored) up to the empty line that ends the message.
  for (;;) {
    std::size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos) {
      return Status::IOError("chunked answer: no empty line after the last chunk");
    }
    if (eol == pos) break;
    pos = eol + 2;
  }
  return out;
}

}  // namespace

Result<HttpAnswer> ParseHttpAnswer(const std::string& raw) {
  std::size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos || raw.size() < 12) {
    return Status::IOError("the server's answer is not HTTP (" + std::to_string(raw.size()) +
                           " bytes)");
  }
  HttpAnswer answer;
  answer.status = std::atoi(raw.c_str() + 9);
  bool chunked = false;
  std::optional<uint64_t> length;
  std::string_view head(raw.data(), end);
  std::size_t pos = head.find("\r\n");  // past the status line
  while (pos != std::string_view::npos && pos < head.size()) {
    pos += 2;
    std::size_t eol = std::min(head.find("\r\n", pos), head.size());
    std::string_view line = head.substr(pos, eol - pos);
    pos = eol;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = Trim(line.substr(0, colon));
    std::string_view value = Trim(line.substr(colon + 1));
    answer.headers.emplace_back(std::string(name), std::string(value));
    if (EqualsIgnoreCase(name, "Transfer-Encoding")) {
      // The last coding decides the framing ("gzip, chunked" is still chunked).
      std::string_view last = Trim(value.substr(value.rfind(',') == std::string_view::npos
                                                    ? 0
                                                    : value.rfind(',') + 1));
      chunked = EqualsIgnoreCase(last, "chunked");
    } else if (EqualsIgnoreCase(name, "Content-Length")) {
      uint64_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size()) {
        return Status::IOError("the server's answer has a bad Content-Length \"" +
                               std::string(value) + "\"");
      }
      length = n;
    }
  }
  std::string_view body(raw.data() + end + 4, raw.size() - end - 4);
  if (answer.status / 100 == 1 || answer.status == 204 || answer.status == 304) {
    return answer;  // never a body, whatever Content-Length says
  }
  if (chunked) {  // wins over Content-Length (RFC 9112 §6.3)
    auto decoded = DecodeChunked(body);
    if (!decoded.ok()) return decoded.status();
    answer.body = std::move(*decoded);
  } else if (length) {
    if (body.size() < *length) {
      return Status::IOError("the server's answer ends after " + std::to_string(body.size()) +
                             " of its " + std::to_string(*length) + " body bytes");
    }
    answer.body = std::string(body.substr(0, *length));
  } else {
    answer.body = std::string(body);
  }
  return answer;
}

Result<Connected> ConnectTo(const std::string& base_url, int timeout_ms) {
  auto url = ParseUrl(base_url);
  if (!url.ok()) return url.status();
  if (url->tls) {
    return Status::InvalidArgument("a WebSocket relay speaks plain ws:// to its upstream (got \"" +
                                   base_url + "\")");
  }
  Socket socket;
  SW_RETURN_IF_ERROR(socket.Connect(*url, Clock::now() + std::chrono::milliseconds(timeout_ms)));
  return Connected{socket.Release(), url->host + ":" + url->port, url->prefix};
}

std::string HttpAnswer::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return "";
}

Result<HttpAnswer> HttpRequest(const std::string& base_url, std::string_view method,
                               const std::string& target, const std::string& body,
                               const std::string& token, int timeout_ms) {
  HttpRequestOptions options;
  options.token = token;
  options.timeout_ms = timeout_ms;
  return HttpRequest(base_url, method, target, body, options);
}

Result<HttpAnswer> HttpRequest(const std::string& base_url, std::string_view method,
                               const std::string& target, const std::string& body,
                               const HttpRequestOptions& options) {
  if (options.sent != nullptr) *options.sent = false;
  auto url = ParseUrl(base_url);
  if (!url.ok()) return url.status();
  auto deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  Socket socket;
  SW_RETURN_IF_ERROR(socket.Connect(*url, deadline));
  if (url->tls) SW_RETURN_IF_ERROR(socket.StartTls(*url, options.tls, deadline));
  std::string request = std::string(method) + " " + url->prefix + target + " HTTP/1.1\r\n";
  request += "Host: " + url->host + ":" + url->port + "\r\n";
  request += "User-Agent: statewatch-cli\r\nAccept: application/json\r\nConnection: close\r\n";
  if (!options.token.empty()) request += "Authorization: Bearer " + options.token + "\r\n";
  bool typed = false;
  for (const auto& [name, value] : options.headers) {
    typed = typed || EqualsIgnoreCase(name, "Content-Type");
    request += name + ": " + value + "\r\n";
  }
  if (!body.empty() || method == "POST" || method == "PUT") {
    if (!typed) request += "Content-Type: application/json\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  if (options.sent != nullptr) *options.sent = true;
  SW_RETURN_IF_ERROR(socket.SendAll(request, deadline));
  std::string raw;
  SW_RETURN_IF_ERROR(socket.ReadAll(&raw, deadline));
  return ParseHttpAnswer(raw);
}

}  // namespace statewatch::net
