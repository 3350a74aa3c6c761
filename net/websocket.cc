#include "net/websocket.h"

#include <openssl/evp.h>

#include <chrono>
#include <cstring>
#include <random>

namespace statewatch::net {
namespace {

using Clock = Connection::Clock;

constexpr std::size_t kMaxMessage = 1 << 20;
constexpr auto kSendTimeout = std::chrono::seconds(10);  // a peer that reads nothing
constexpr unsigned char kContinuation = 0x0, kText = 0x1, kClose = 0x8, kPing = 0x9, kPong = 0xA;

std::string Base64(const unsigned char* data, std::size_t n) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data,
                                  static_cast<int>(n));
  out.resize(static_cast<std::size_t>(len));
  return out;
}

// Sec-WebSocket-Accept for `key` (RFC 6455 §4.2.2).
std::string AcceptKey(const std::string& key) {
  const std::string joined = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(joined.data(), joined.size(), digest, &len, EVP_sha1(), nullptr);
  return Base64(digest, len);
}

uint32_t RandomMask() {
  thread_local std::mt19937 rng{std::random_device{}()};
  return static_cast<uint32_t>(rng());
}

}  // namespace

Result<std::unique_ptr<WebSocket>> WebSocket::Accept(int fd, const std::string& key) {
  if (key.empty()) return Status::InvalidArgument("the upgrade has no Sec-WebSocket-Key");
  auto conn = std::make_unique<Connection>(fd, /*owns_fd=*/false);
  SW_RETURN_IF_ERROR(conn->SendAll("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                   "Connection: Upgrade\r\nSec-WebSocket-Accept: " +
                                       AcceptKey(key) + "\r\n\r\n",
                                   Clock::now() + kSendTimeout, "websocket write"));
  return std::unique_ptr<WebSocket>(new WebSocket(std::move(conn), /*client=*/false));
}

Result<std::unique_ptr<WebSocket>> WebSocket::Connect(const std::string& base_url,
                                                      const std::string& target,
                                                      const HeaderList& headers, int timeout_ms) {
  auto plain = ConnectTo(base_url, timeout_ms);
  if (!plain.ok()) return plain.status();
  std::unique_ptr<WebSocket> ws(
      new WebSocket(std::make_unique<Connection>(plain->fd, /*owns_fd=*/true), /*client=*/true));
  SW_RETURN_IF_ERROR(ws->Handshake(base_url, plain->host, plain->prefix, target, headers,
                                   timeout_ms));
  return ws;
}

Result<std::unique_ptr<WebSocket>> WebSocket::Connect(const std::string& base_url,
                                                      const std::string& target,
                                                      const HeaderList& headers, int timeout_ms,
                                                      const TlsClientOptions& tls) {
  auto url = ParseBaseUrl(base_url);
  if (!url.ok()) return url.status();
  auto conn = Connection::Open(*url, tls, Clock::now() + std::chrono::milliseconds(timeout_ms));
  if (!conn.ok()) return conn.status();
  std::unique_ptr<WebSocket> ws(new WebSocket(std::move(*conn), /*client=*/true));
  SW_RETURN_IF_ERROR(ws->Handshake(base_url, url->host + ":" + url->port, url->prefix, target,
                                   headers, timeout_ms));
  return ws;
}

Status WebSocket::Handshake(const std::string& base_url, const std::string& host,
                            const std::string& prefix, const std::string& target,
                            const HeaderList& headers, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  unsigned char nonce[16];
  for (int i = 0; i < 16; i += 4) {
    const uint32_t r = RandomMask();
    std::memcpy(nonce + i, &r, 4);
  }
  std::string request = "GET " + prefix + target + " HTTP/1.1\r\nHost: " + host +
                        "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " +
                        Base64(nonce, 16) + "\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n";
  SW_RETURN_IF_ERROR(conn_->SendAll(request, deadline, "websocket write"));
  // The answer's header block; whatever follows it is already the first frames (kept in
  // buffer_, and with TLS nothing is left in OpenSSL: ReceiveSome takes it all).
  for (;;) {
    if (std::size_t end = buffer_.find("\r\n\r\n"); end != std::string::npos) {
      const std::string status = buffer_.substr(0, buffer_.find("\r\n"));
      if (status.rfind("HTTP/1.1 101", 0) != 0) {
        return Status::IOError("websocket upgrade at " + base_url + target + " refused: " + status);
      }
      buffer_.erase(0, end + 4);
      return Status::OK();
    }
    if (buffer_.size() > 16384) {
      return Status::IOError("websocket upgrade at " + base_url + target + ": no answer");
    }
    auto got = conn_->ReceiveSome(&buffer_, deadline, "websocket upgrade");
    if (!got.ok()) {
      return Status::IOError("websocket upgrade at " + base_url + target + ": " +
                             got.status().message());
    }
    if (*got == Connection::Received::kTimeout) {
      return Status::IOError("websocket upgrade at " + base_url + target + ": no answer");
    }
    if (*got == Connection::Received::kClosed) {
      return Status::IOError("websocket upgrade at " + base_url + target + ": closed");
    }
  }
}

WebSocket::~WebSocket() = default;

Status WebSocket::SendFrame(unsigned char opcode, std::string_view payload) {
  std::string frame;
  frame += static_cast<char>(0x80 | opcode);
  const unsigned char mask_bit = client_ ? 0x80 : 0x00;
  const std::size_t n = payload.size();
  if (n < 126) {
    frame += static_cast<char>(mask_bit | n);
  } else if (n <= 0xFFFF) {
    frame += static_cast<char>(mask_bit | 126);
    frame += static_cast<char>((n >> 8) & 0xFF);
    frame += static_cast<char>(n & 0xFF);
  } else {
    frame += static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) frame += static_cast<char>((n >> shift) & 0xFF);
  }
  if (client_) {
    const uint32_t m = RandomMask();
    unsigned char key[4];
    std::memcpy(key, &m, 4);
    frame.append(reinterpret_cast<const char*>(key), 4);
    for (std::size_t i = 0; i < n; ++i) frame += static_cast<char>(payload[i] ^ key[i % 4]);
  } else {
    frame.append(payload);
  }
  return conn_->SendAll(frame, Clock::now() + kSendTimeout, "websocket write");
}

Status WebSocket::SendText(std::string_view text) {
  if (closed_) return Status::IOError("websocket closed");
  return SendFrame(kText, text);
}

void WebSocket::Close() {
  if (closed_) return;
  closed_ = true;
  (void)SendFrame(kClose, std::string_view("\x03\xe8", 2));  // 1000: normal closure
}

std::optional<std::pair<unsigned char, std::string>> WebSocket::TakeFrame(Status* error) {
  const auto* b = reinterpret_cast<const unsigned char*>(buffer_.data());
  if (buffer_.size() < 2) return std::nullopt;
  const unsigned char opcode = b[0] & 0x0F;
  const bool masked = (b[1] & 0x80) != 0;
  uint64_t n = b[1] & 0x7F;
  std::size_t at = 2;
  if (n == 126) {
    if (buffer_.size() < 4) return std::nullopt;
    n = (uint64_t{b[2]} << 8) | b[3];
    at = 4;
  } else if (n == 127) {
    if (buffer_.size() < 10) return std::nullopt;
    n = 0;
    for (int i = 0; i < 8; ++i) n = (n << 8) | b[2 + i];
    at = 10;
  }
  if (n > kMaxMessage) {
    *error = Status::IOError("websocket frame of " + std::to_string(n) + " bytes, over 1 MiB");
    return std::nullopt;
  }
  const std::size_t key_at = at;
  if (masked) at += 4;
  if (buffer_.size() < at + n) return std::nullopt;
  std::string payload = buffer_.substr(at, n);
  if (masked) {
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] ^= buffer_[key_at + i % 4];
  }
  const bool fin = (b[0] & 0x80) != 0;
  buffer_.erase(0, at + n);
  return std::make_pair(static_cast<unsigned char>(opcode | (fin ? 0x80 : 0)), std::move(payload));
}

Result<std::optional<std::string>> WebSocket::Receive(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    Status error;
    while (auto frame = TakeFrame(&error)) {
      const unsigned char opcode = frame->first & 0x0F;
      const bool fin = (frame->first & 0x80) != 0;
      if (opcode == kPing) {
        SW_RETURN_IF_ERROR(SendFrame(kPong, frame->second));
      } else if (opcode == kClose) {
        if (!closed_) Close();
        return Status::IOError("websocket closed by the peer");
      } else if (opcode == kText || opcode == kContinuation) {
        message_ += frame->second;
        if (message_.size() > kMaxMessage) return Status::IOError("websocket message over 1 MiB");
        if (fin) return std::optional<std::string>(std::exchange(message_, std::string()));
      }  // pongs and binary frames: nothing to relay
    }
    if (!error.ok()) return error;
    auto got = conn_->ReceiveSome(&buffer_, deadline, "websocket read");
    if (!got.ok()) return got.status();
    if (*got == Connection::Received::kTimeout) return std::optional<std::string>();
    if (*got == Connection::Received::kClosed) {
      return Status::IOError("websocket connection closed");
    }
  }
}

}  // namespace statewatch::net
