// The socket and TLS code of the plain-socket clients (moved here from http_client.cc so
// that the WebSocket client speaks TLS with the same code).
#include "net/connection.h"

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
#include <cerrno>
#include <cstring>
#include <utility>

namespace statewatch::net {

namespace {

using Clock = Connection::Clock;

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Waits until fd is ready for `events`: true when ready, false when the deadline passed
// (after one look without waiting when it had passed already).
Result<bool> WaitFor(int fd, short events, Clock::time_point deadline, const char* doing) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ready = ::poll(&p, 1, MillisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Status::IOError(std::string(doing) + ": " + std::strerror(errno));
    if (ready > 0) return true;
    if (MillisLeft(deadline) <= 0) return false;
  }
}

// 0 or the errno of the failed connect (ETIMEDOUT at the deadline). Leaves fd blocking.
int ConnectOne(int fd, const addrinfo* a, Clock::time_point deadline) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return errno;
  int err = 0;
  if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return errno;
    for (;;) {
      int left = MillisLeft(deadline);
      if (left <= 0) return ETIMEDOUT;
      pollfd p{fd, POLLOUT, 0};
      int ready = ::poll(&p, 1, left);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return errno;
      if (ready == 0) return ETIMEDOUT;
      break;
    }
    socklen_t len = sizeof(err);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    if (err != 0) return err;
  }
  if (::fcntl(fd, F_SETFL, flags) < 0) return errno;
  return 0;
}

// OpenSSL's reason for a failed call, else the system's.
std::string TlsWhy() {
  std::string why = TakeTlsErrors();
  return why.empty() ? std::string(errno != 0 ? std::strerror(errno) : "the connection was lost")
                     : why;
}

}  // namespace

Result<Endpoint> ParseBaseUrl(const std::string& text) {
  Endpoint url;
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
    if (close == std::string::npos) {
      return Status::InvalidArgument("--server: unclosed [ in " + text);
    }
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

Result<std::unique_ptr<Connection>> Connection::Open(const Endpoint& endpoint,
                                                     const TlsClientOptions& tls,
                                                     Clock::time_point deadline,
                                                     const AddressCheck* check) {
  std::unique_ptr<Connection> conn(new Connection());
  SW_RETURN_IF_ERROR(conn->Connect(endpoint, deadline, check));
  if (endpoint.tls) SW_RETURN_IF_ERROR(conn->StartTls(endpoint, tls, deadline));
  return conn;
}

Connection::~Connection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

std::size_t Connection::Pending() const {
  return ssl_ == nullptr ? 0 : static_cast<std::size_t>(std::max(0, SSL_pending(ssl_)));
}

int Connection::Release() {
  if (ssl_ != nullptr) return -1;
  return std::exchange(fd_, -1);
}

Status Connection::Connect(const Endpoint& url, Clock::time_point deadline,
                           const AddressCheck* check) {
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
    if (check != nullptr) {
      if (Status allowed = (*check)(a->ai_addr, a->ai_addrlen); !allowed.ok()) {
        why = allowed.message();
        continue;
      }
    }
    fd_ = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd_ >= 0) {
      int err = ConnectOne(fd_, a, deadline);
      if (err == 0) break;
      why = err == ETIMEDOUT ? "no connection before the timeout" : std::strerror(err);
      ::close(fd_);
    } else {
      why = std::strerror(errno);
    }
    fd_ = -1;
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) {
    return Status::IOError("cannot connect to " + url.host + ":" + url.port + ": " + why);
  }
  return Status::OK();
}

// TLS over the connected socket (non-blocking from here, every wait bounded by `deadline`):
// the handshake, the certificate verified against options' CA (else the system store) and
// the URL's host.
Status Connection::StartTls(const Endpoint& url, const TlsClientOptions& options,
                            Clock::time_point deadline) {
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
    errno = 0;
    int rc = SSL_connect(ssl_);
    if (rc == 1) return Status::OK();
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      auto ready = WaitFor(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline,
                           "TLS handshake");
      if (!ready.ok()) return ready.status();
      if (!*ready) return Status::IOError("TLS handshake: no answer before the timeout");
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
    if (why.empty()) {
      why = err == SSL_ERROR_SYSCALL && errno != 0 ? std::strerror(errno)
                                                   : "the server closed the connection";
    }
    return Status::IOError("TLS handshake with " + where + " failed: " + why);
  }
}

Status Connection::SendAll(std::string_view bytes, Clock::time_point deadline,
                           const char* doing) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    short wait_for = POLLOUT;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      errno = 0;
      int n = SSL_write(ssl_, bytes.data() + sent, static_cast<int>(bytes.size() - sent));
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      int err = SSL_get_error(ssl_, n);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
        return Status::IOError(std::string(doing) + ": " + TlsWhy());
      }
      if (err == SSL_ERROR_WANT_READ) wait_for = POLLIN;
    } else {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        return Status::IOError(std::string(doing) + ": " + std::strerror(errno));
      }
    }
    auto ready = WaitFor(fd_, wait_for, deadline, doing);
    if (!ready.ok()) return ready.status();
    if (!*ready) return Status::IOError(std::string(doing) + ": no progress before the timeout");
  }
  return Status::OK();
}

Result<Connection::Received> Connection::ReceiveSome(std::string* out,
                                                     Clock::time_point deadline,
                                                     const char* doing) {
  char buf[16384];
  if (ssl_ == nullptr) {
    for (;;) {
      auto ready = WaitFor(fd_, POLLIN, deadline, doing);
      if (!ready.ok()) return ready.status();
      if (!*ready) return Received::kTimeout;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (MillisLeft(deadline) <= 0) return Received::kTimeout;
        continue;
      }
      if (n < 0) return Status::IOError(std::string(doing) + ": " + std::strerror(errno));
      if (n == 0) return Received::kClosed;
      out->append(buf, static_cast<std::size_t>(n));
      return Received::kData;
    }
  }
  // With TLS, a read takes at most kTlsPiece bytes of a record: the rest of it is already
  // off the socket and decrypted (SSL_pending), where a poll would not see it, so it is
  // taken at once.
  constexpr int kTlsPiece = 4096;
  for (;;) {
    ERR_clear_error();
    errno = 0;
    int n = SSL_read(ssl_, buf, kTlsPiece);
    if (n > 0) {
      out->append(buf, static_cast<std::size_t>(n));
      while (SSL_pending(ssl_) > 0) {
        n = SSL_read(ssl_, buf, kTlsPiece);
        if (n <= 0) break;
        out->append(buf, static_cast<std::size_t>(n));
      }
      return Received::kData;
    }
    int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_ZERO_RETURN) return Received::kClosed;  // close_notify
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      return Status::IOError(std::string(doing) + ": " + TlsWhy());
    }
    auto ready = WaitFor(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, doing);
    if (!ready.ok()) return ready.status();
    if (!*ready) return Received::kTimeout;
  }
}

}  // namespace statewatch::net
