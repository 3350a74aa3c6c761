// net::WebSocket's client over TLS (wss, net/connection.h) against a small server written
// with OpenSSL directly, which decides how its bytes fall into TLS records: frames that came
// in the same record as the 101, and two messages in one record, are all received without
// waiting on the socket for bytes that already arrived; the upgrade request's target, Host
// and headers; a certificate that is not trusted is
// an IOError naming OpenSSL's verification error; the relay's Connect keeps refusing
// https://. The certificate is self-signed, made at test time (P-256, IP:127.0.0.1). Every
// wait is bounded (socket timeouts of 10 s, Receive's own timeout).
#include "net/websocket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "net/tls.h"
#include "status_matchers.h"

namespace statewatch::net {
namespace {

constexpr int kWaitMs = 10000;

// A self-signed certificate for 127.0.0.1 (its own CA) and its key, as PEM files in a
// temporary directory removed on destruction.
class SelfSigned {
 public:
  SelfSigned() {
    char tmpl[] = "/tmp/statewatch-wss-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl) != nullptr ? tmpl : "/tmp";
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("wss test"), -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                              std::pair{NID_subject_alt_name, "IP:127.0.0.1"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      X509_add_ext(x, ext, -1);
      X509_EXTENSION_free(ext);
    }
    X509_sign(x, key, EVP_sha256());
    cert = dir_ + "/cert.pem";
    key_file = dir_ + "/key.pem";
    if (std::FILE* f = std::fopen(cert.c_str(), "w")) {
      PEM_write_X509(f, x);
      std::fclose(f);
    }
    if (std::FILE* f = std::fopen(key_file.c_str(), "w")) {
      PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
      std::fclose(f);
    }
    X509_free(x);
    EVP_PKEY_free(key);
  }
  ~SelfSigned() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string cert, key_file;

 private:
  std::string dir_;
};

// An unmasked text frame (server to client).
std::string TextFrame(const std::string& text) {
  std::string frame = "\x81";
  if (text.size() < 126) {
    frame += static_cast<char>(text.size());
  } else {
    frame += static_cast<char>(126);
    frame += static_cast<char>((text.size() >> 8) & 0xFF);
    frame += static_cast<char>(text.size() & 0xFF);
  }
  return frame + text;
}

// One TLS connection on a loopback port, served by a thread: it reads the upgrade request
// and writes `reply` (the 101 and whatever follows) with ONE SSL_write, so that it all goes
// in one TLS record, then reads until the client goes away.
class OneShotTlsServer {
 public:
  OneShotTlsServer(const SelfSigned& pki, std::string reply) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 1) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    auto ctx = MakeTlsServerContext({pki.cert, pki.key_file, ""});
    EXPECT_OK(ctx);
    if (!ctx.ok()) return;
    thread_ = std::thread([this, ctx = std::move(*ctx), reply = std::move(reply)] {
      Serve(ctx.get(), reply);
    });
  }
  ~OneShotTlsServer() {
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  std::string Url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  // Waits until the client went away (bounded: the socket's timeouts); the request it read.
  std::string Join() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  void Serve(ssl_ctx_st* ctx, const std::string& reply) {
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, kWaitMs) != 1) return;
    int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    timeval tv{kWaitMs / 1000, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      char buf[4096];
      while (request_.find("\r\n\r\n") == std::string::npos) {
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0) break;
        request_.append(buf, static_cast<std::size_t>(n));
      }
      if (request_.find("\r\n\r\n") != std::string::npos &&
          SSL_write(ssl, reply.data(), static_cast<int>(reply.size())) ==
              static_cast<int>(reply.size())) {
        while (SSL_read(ssl, buf, sizeof buf) > 0) {  // the client's close frame, then EOF
        }
      }
    }
    SSL_free(ssl);
    ::close(fd);
  }

  int listener_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::string request_;
};

const std::string k101 =
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Accept: x\r\n\r\n";

TEST(WssClientTest, MessagesInTheSameRecordAsThe101AreReceived) {
  SelfSigned pki;
  // More than one read's piece: most of the record is still inside OpenSSL (SSL_pending)
  // once the 101's header block was found, and nothing more ever comes on the socket.
  const std::string big(6000, 'w');
  OneShotTlsServer server(pki, k101 + TextFrame(big) + TextFrame("{\"watcher\":\"w\"}"));
  auto ws = WebSocket::Connect(server.Url(), "/v1/wakes?watcher=w", {}, kWaitMs,
                               TlsClientOptions{pki.cert, "", ""});
  ASSERT_OK(ws);
  auto first = (*ws)->Receive(kWaitMs);
  ASSERT_OK(first);
  ASSERT_TRUE(first->has_value()) << "the message that came with the 101 was not received";
  EXPECT_EQ(**first, big);
  // The second message was in that record too: no wait on the socket is needed for it.
  auto second = (*ws)->Receive(0);
  ASSERT_OK(second);
  ASSERT_TRUE(second->has_value()) << "the second message of the record was not received";
  EXPECT_EQ(**second, "{\"watcher\":\"w\"}");
  auto none = (*ws)->Receive(0);
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
}

TEST(WssClientTest, UpgradeRequestCarriesTheTargetHostAndHeaders) {
  SelfSigned pki;
  OneShotTlsServer server(pki, k101 + TextFrame("hi"));
  auto ws = WebSocket::Connect(server.Url() + "/prefix", "/v1/wakes?watcher=w",
                               {{"Authorization", "Bearer t"}}, kWaitMs,
                               TlsClientOptions{pki.cert, "", ""});
  ASSERT_OK(ws);
  auto got = (*ws)->Receive(kWaitMs);
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, "hi");
  (*ws)->Close();
  ws->reset();  // closes the connection: the server's read ends
  const std::string request = server.Join();
  EXPECT_EQ(request.rfind("GET /prefix/v1/wakes?watcher=w HTTP/1.1\r\n", 0), 0u) << request;
  EXPECT_NE(request.find("\r\nHost: 127.0.0.1:"), std::string::npos) << request;
  EXPECT_NE(request.find("\r\nUpgrade: websocket\r\n"), std::string::npos) << request;
  EXPECT_NE(request.find("\r\nAuthorization: Bearer t\r\n"), std::string::npos) << request;
}

TEST(WssClientTest, UntrustedCertificateNamesTheVerificationError) {
  SelfSigned pki;
  OneShotTlsServer server(pki, k101);
  auto ws = WebSocket::Connect(server.Url(), "/v1/wakes", {}, kWaitMs, TlsClientOptions{});
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().code(), Status::Code::kIOError);
  EXPECT_NE(ws.status().message().find("TLS: the certificate of 127.0.0.1:"), std::string::npos)
      << ws.status().message();
  EXPECT_NE(ws.status().message().find("is not trusted: self-signed certificate"),
            std::string::npos)
      << ws.status().message();
  EXPECT_NE(ws.status().message().find("--ca-file FILE"), std::string::npos)
      << ws.status().message();
}

TEST(WssClientTest, RelayConnectStillRefusesHttps) {
  auto ws = WebSocket::Connect("https://127.0.0.1:1", "/v1/wakes", {}, 1000);
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(ws.status().message().find("plain ws://"), std::string::npos) << ws.status().message();
}

}  // namespace
}  // namespace statewatch::net
