#include "net/http_listener.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "base/ascii.h"

namespace statewatch::net {
namespace {

constexpr std::size_t kMaxHeader = 16 * 1024;
constexpr auto kRequestTime = std::chrono::seconds(5);

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 421: return "Misdirected Request";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return status < 500 ? "Client Error" : "Server Error";
  }
}

void WriteAll(int fd, const std::string& bytes) {
  for (std::size_t sent = 0; sent < bytes.size();) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away: nothing to tell it
    sent += static_cast<std::size_t>(n);
  }
}

// `head`: the answer to a HEAD request — the header GET would get, Content-Length
// included, without the body.
void Answer(int fd, const ListenerAnswer& a, bool head = false) {
  std::string out = "HTTP/1.1 " + std::to_string(a.status) + " " + Reason(a.status) + "\r\n";
  bool typed = false;
  for (const auto& [name, value] : a.headers) {
    typed = typed || ascii::EqualsIgnoreCase(name, "content-type");
    out += name + ": " + value + "\r\n";
  }
  if (!typed) out += "Content-Type: application/json\r\n";
  const bool newline = a.body.empty() || a.body.back() != '\n';
  out += "Connection: close\r\nContent-Length: " +
         std::to_string(a.body.size() + (newline ? 1 : 0)) + "\r\n\r\n";
  if (!head) out += a.body + (newline ? "\n" : "");
  WriteAll(fd, out);
}

ListenerAnswer Error(int status, const std::string& code, const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    escaped += c;
  }
  return {status, "{\"error\":{\"code\":\"" + code + "\",\"message\":\"" + escaped + "\"}}"};
}

// Reads one request into *req; an error answer when it is malformed, too big or too slow.
std::optional<ListenerAnswer> ReadRequest(int fd, std::size_t max_body, ListenerRequest* req) {
  const auto deadline = std::chrono::steady_clock::now() + kRequestTime;
  std::string raw;
  std::size_t header_end = std::string::npos;
  std::size_t body_size = 0;
  char buf[4096];
  for (;;) {
    if (header_end == std::string::npos) {
      header_end = raw.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        std::size_t line_end = raw.find("\r\n");
        std::string line = raw.substr(0, line_end);
        std::size_t a = line.find(' ');
        std::size_t b = line.find(' ', a == std::string::npos ? a : a + 1);
        if (a == std::string::npos || b == std::string::npos) {
          return Error(400, "bad_request", "malformed request line");
        }
        req->method = line.substr(0, a);
        req->target = line.substr(a + 1, b - a - 1);
        std::size_t pos = line_end + 2;
        while (pos < header_end) {
          std::size_t end = raw.find("\r\n", pos);
          std::string h = raw.substr(pos, end - pos);
          pos = end + 2;
          std::size_t colon = h.find(':');
          if (colon == std::string::npos) continue;
          std::string name = ascii::AsciiToLower(h.substr(0, colon));
          std::string value = h.substr(colon + 1);
          while (!value.empty() && value.front() == ' ') value.erase(0, 1);
          while (!value.empty() && value.back() == ' ') value.pop_back();
          if (name == "content-length") {
            body_size = std::strtoull(value.c_str(), nullptr, 10);
            if (body_size > max_body) {
              return Error(413, "body_too_large",
                           "body of " + std::to_string(body_size) + " bytes, over the " +
                               std::to_string(max_body) + " this port takes");
            }
          } else if (name == "authorization") {
            req->authorization = value;
          }
          req->headers.emplace_back(name, value);
        }
      } else if (raw.size() > kMaxHeader) {
        return Error(400, "header_too_large", "headers over 16 KiB");
      }
    }
    if (header_end != std::string::npos && raw.size() >= header_end + 4 + body_size) {
      req->body = raw.substr(header_end + 4, body_size);
      return std::nullopt;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return Error(408, "request_timeout", "no complete request within 5 s");
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(400, "bad_request", "the connection closed mid-request");
    raw.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

Result<std::unique_ptr<HttpListener>> HttpListener::Bind(const std::string& host, uint16_t port,
                                                         ListenerHandler handler,
                                                         ListenerLimits limits) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return Status::IOError("cannot resolve " + where + ": " + ::gai_strerror(rc));
  }
  int fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || ::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(found);
    return Status::IOError("cannot listen on " + where + ": " + why);
  }
  ::freeaddrinfo(found);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  uint16_t bound = addr.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  std::unique_ptr<HttpListener> l(new HttpListener(fd, bound, std::move(handler), limits));
  l->acceptor_ = std::thread([raw = l.get()] { raw->Accept(); });
  return l;
}

HttpListener::HttpListener(int fd, uint16_t port, ListenerHandler handler, ListenerLimits limits)
    : fd_(fd), port_(port), handler_(std::move(handler)), limits_(limits) {}

std::string ListenerRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return "";
}

HttpListener::~HttpListener() { Stop(); }

void HttpListener::Stop() {
  if (stop_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  ::close(fd_);
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return active_ == 0; });
}

void HttpListener::Accept() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int client = ::accept(fd_, nullptr, nullptr);
    if (client < 0) continue;  // EMFILE and the like: the next poll retries
    {
      std::lock_guard lock(mu_);
      if (active_ >= limits_.max_connections) {
        Answer(client, Error(503, "too_many_connections", "the node's port is busy: retry"));
        ::close(client);
        continue;
      }
      ++active_;
    }
    std::thread([this, client] {
      Serve(client);
      ::close(client);
      std::lock_guard lock(mu_);
      --active_;
      idle_.notify_all();
    }).detach();
  }
}

void HttpListener::Serve(int fd) {
  ListenerRequest req;
  if (auto refused = ReadRequest(fd, limits_.max_body, &req)) {
    Answer(fd, *refused);
    return;
  }
  ListenerAnswer answer = handler_(req);
  if (answer.take_socket) {
    answer.take_socket(fd);
    return;
  }
  Answer(fd, answer, /*head=*/req.method == "HEAD");
}

}  // namespace statewatch::net
