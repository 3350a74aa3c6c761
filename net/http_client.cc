// The plain-socket HTTP/1.1 client (moved here from cli/remote.cc so that non-CLI code can
// use it), plus the decoding of chunked answers: etcd's JSON gateway answers chunked. The
// socket and TLS are net/connection.h's.
#include "net/http_client.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>

#include "net/connection.h"

namespace statewatch::net {

namespace {

using Clock = Connection::Clock;

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
  auto url = ParseBaseUrl(base_url);
  if (!url.ok()) return url.status();
  if (url->tls) {
    return Status::InvalidArgument("a WebSocket relay speaks plain ws:// to its upstream (got \"" +
                                   base_url + "\")");
  }
  auto conn = Connection::Open(*url, {}, Clock::now() + std::chrono::milliseconds(timeout_ms));
  if (!conn.ok()) return conn.status();
  return Connected{(*conn)->Release(), url->host + ":" + url->port, url->prefix};
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
  auto url = ParseBaseUrl(base_url);
  if (!url.ok()) return url.status();
  auto deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  auto conn = Connection::Open(*url, options.tls, deadline);
  if (!conn.ok()) return conn.status();
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
  SW_RETURN_IF_ERROR((*conn)->SendAll(request, deadline, "sending the request"));
  // Read until the server closes.
  std::string raw;
  for (;;) {
    auto got = (*conn)->ReceiveSome(&raw, deadline, "reading the answer");
    if (!got.ok()) return got.status();
    if (*got == Connection::Received::kClosed) break;
    if (*got == Connection::Received::kTimeout) {
      return Status::IOError("no complete answer before the timeout");
    }
  }
  return ParseHttpAnswer(raw);
}

}  // namespace statewatch::net
