// TLS end to end: the daemon with --tls-cert/--tls-key (HTTPS and WSS) and --tls-client-ca
// (mutual TLS), against a CA made at test time (tls_certs.h); the plain-socket client
// (net/http_client.h) and the CLI's --server https://… --ca-file, its wake follower over wss
// (`statewatch --server https://… watch`) included; certificate files that cannot be used;
// the handshake timeout.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "child_process.h"
#include "net/http_client.h"
#include "server/daemon.h"
#include "status_matchers.h"
#include "test_keys.h"
#include "test_server.h"
#include "tls_certs.h"

namespace statewatch::testing {
namespace {

// A TCP connection to 127.0.0.1:port with 10 s send and receive timeouts (every wait of
// these tests is bounded).
int ConnectLoopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A blocking TLS connection (OpenSSL directly): raw bytes both ways, for what the
// request-at-a-time client cannot do (pipelining, a WebSocket upgrade).
class TlsConn {
 public:
  TlsConn(uint16_t port, const std::string& ca_file) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = ConnectLoopback(port);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    ok_ = fd_ >= 0 && SSL_connect(ssl_) == 1;
  }
  ~TlsConn() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return ok_; }
  bool Write(const std::string& bytes) {
    return SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) ==
           static_cast<int>(bytes.size());
  }
  // Reads until `out` holds at least `n` bytes; false on EOF, an error or the 10 s timeout.
  bool ReadAtLeast(std::size_t n) {
    char buf[4096];
    while (in_.size() < n) {
      int got = SSL_read(ssl_, buf, sizeof(buf));
      if (got <= 0) return false;
      in_.append(buf, static_cast<std::size_t>(got));
    }
    return true;
  }
  // Reads until `needle` has arrived `times` times in all.
  bool ReadUntil(const std::string& needle, int times = 1) {
    for (;;) {
      int seen = 0;
      for (std::size_t at = in_.find(needle); at != std::string::npos;
           at = in_.find(needle, at + 1)) {
        ++seen;
      }
      if (seen >= times) return true;
      if (!ReadAtLeast(in_.size() + 1)) return false;
    }
  }
  std::string& in() { return in_; }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool ok_ = false;
  std::string in_;
};

// Asks for a WebSocket upgrade of `target` on `conn`; true once the 101 arrived (the bytes
// after it stay in conn.in()).
bool Upgrade(TlsConn& conn, uint16_t port, const std::string& target) {
  if (!conn.Write("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                  "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                  "Sec-WebSocket-Version: 13\r\n\r\n") ||
      !conn.ReadUntil("\r\n\r\n") || conn.in().rfind("HTTP/1.1 101", 0) != 0) {
    return false;
  }
  conn.in().erase(0, conn.in().find("\r\n\r\n") + 4);
  return true;
}

// The next text frame's payload (unmasked from the server: 0x81, a length, the text); ""
// when none arrives within the connection's bound.
std::string NextFrame(TlsConn& conn) {
  if (!conn.ReadAtLeast(2) || static_cast<unsigned char>(conn.in()[0]) != 0x81) return "";
  std::size_t length = static_cast<unsigned char>(conn.in()[1]) & 0x7f;
  std::size_t header = 2;
  if (length == 126) {
    if (!conn.ReadAtLeast(4)) return "";
    length = (static_cast<unsigned char>(conn.in()[2]) << 8) |
             static_cast<unsigned char>(conn.in()[3]);
    header = 4;
  }
  if (length > 125 + 65535 || !conn.ReadAtLeast(header + length)) return "";
  std::string text = conn.in().substr(header, length);
  conn.in().erase(0, header + length);
  return text;
}

// The binary following wakes (`watch` without --target), its stdout and stderr on pipes and
// read a line at a time, each read bounded by kFollowWaitMs; killed if still running at the
// end.
constexpr int kFollowWaitMs = 30000;

class Follower : public PipedProcess {
 public:
  explicit Follower(const std::vector<std::string>& args)
      : PipedProcess(STATEWATCH_BIN, args, kFollowWaitMs) {}
};

class TlsTest : public ::testing::Test {
 protected:
  server::ServerOptions TlsOptions(bool mutual = false) {
    server::ServerOptions o = TestOptions();
    o.tls_cert_file = pki_.server_cert;
    o.tls_key_file = pki_.server_key_file;
    if (mutual) o.tls_client_ca_file = pki_.ca_cert;
    return o;
  }
  std::string Url(uint16_t port) { return "https://127.0.0.1:" + std::to_string(port); }
  // The parent and child sessions of the wake tests, registered over HTTPS.
  void PutFamily(const std::string& url, const net::HttpRequestOptions& o) {
    for (const auto& [key, body] :
         {std::pair<std::string, std::string>{kMain, R"({"kind":"main"})"},
          {kChild, R"({"parentSessionKey":")" + kMain + R"("})"}}) {
      auto put = net::HttpRequest(url, "PUT", "/v1/sessions/" + key, body, o);
      ASSERT_OK(put);
      ASSERT_EQ(put->status, 200) << put->body;
    }
  }
  // The spawn seeds the parent's cursor; a human message to the child makes its notice and
  // the parent's wake.
  void WakeTheParent(const std::string& url, const net::HttpRequestOptions& o) {
    std::string spawn = R"({"sessionKey":")" + kChild +
                        R"(","kind":"child_spawned","actorType":"agent","actorId":")" + kMain +
                        R"(","runId":"run-1","summary":"child session spawned",)" +
                        R"("dedupeKey":"s:1","watchers":[")" + kMain + R"("]})";
    std::string human = R"({"sessionKey":")" + kChild +
                        R"(","kind":"human_direct_message","actorType":"human","summary":"hi"})";
    for (const std::string& event : {spawn, human}) {
      auto r = net::HttpRequest(url, "POST", "/v1/events", event, o);
      ASSERT_OK(r);
      ASSERT_EQ(r->status, 200) << r->body;
    }
  }
  net::HttpRequestOptions Trusting(const std::string& ca) {
    net::HttpRequestOptions o;
    o.timeout_ms = 10000;
    o.tls.ca_file = ca;
    return o;
  }

  TestPki pki_;
};

TEST_F(TlsTest, HttpsRequestVerifiedAgainstTheTestCa) {
  TestServer server(TlsOptions());
  auto answer = net::HttpRequest(Url(server.port()), "GET", "/healthz", "", Trusting(pki_.ca_cert));
  ASSERT_OK(answer);
  EXPECT_EQ(answer->status, 200) << answer->body;

  // By host name too (the certificate names localhost; SNI is sent).
  answer = net::HttpRequest("https://localhost:" + std::to_string(server.port()), "GET",
                            "/healthz", "", Trusting(pki_.ca_cert));
  ASSERT_OK(answer);
  EXPECT_EQ(answer->status, 200);

  // A CA that did not sign the server's certificate: refused, naming the verification error.
  answer = net::HttpRequest(Url(server.port()), "GET", "/healthz", "",
                            Trusting(pki_.stranger_cert));
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(answer.status().message().find("is not trusted: unable to get local issuer"),
            std::string::npos)
      << answer.status().ToString();

  // Plain HTTP to the TLS port: no answer that parses, never a hang.
  auto plain = net::HttpRequest("http://127.0.0.1:" + std::to_string(server.port()), "GET",
                                "/healthz", "", "", 10000);
  EXPECT_FALSE(plain.ok() && plain->status == 200);
}

TEST_F(TlsTest, KeepAliveAndPipeliningOverTls) {
  TestServer server(TlsOptions());
  TlsConn conn(server.port(), pki_.ca_cert);
  ASSERT_TRUE(conn.ok());
  std::string host = "Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n";
  // Two requests in one write, then a third on the same connection after both answers.
  ASSERT_TRUE(conn.Write("GET /healthz HTTP/1.1\r\n" + host + "\r\nGET /healthz HTTP/1.1\r\n" +
                         host + "\r\n"));
  ASSERT_TRUE(conn.ReadUntil("HTTP/1.1 200", 2)) << conn.in();
  ASSERT_TRUE(conn.Write("GET /healthz HTTP/1.1\r\n" + host + "\r\n"));
  ASSERT_TRUE(conn.ReadUntil("HTTP/1.1 200", 3)) << conn.in();
}

TEST_F(TlsTest, ContinueAndBodyCapOverTls) {
  server::ServerOptions o = TlsOptions();
  o.body_limit_bytes = 1024;
  TestServer server(o);
  std::string host = "Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n";
  TlsConn conn(server.port(), pki_.ca_cert);
  ASSERT_TRUE(conn.ok());
  // Expect: 100-continue: the interim answer first, then the body, then the answer.
  std::string body = R"({"now":)" + std::to_string(kStartMs + 1000) + "}";
  ASSERT_TRUE(conn.Write("POST /v1/clock HTTP/1.1\r\n" + host +
                         "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                         "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n"));
  ASSERT_TRUE(conn.ReadUntil("HTTP/1.1 100 Continue")) << conn.in();
  ASSERT_TRUE(conn.Write(body));
  ASSERT_TRUE(conn.ReadUntil("HTTP/1.1 200")) << conn.in();
  // Over the body cap: 413 on the same connection.
  ASSERT_TRUE(conn.Write("POST /v1/events HTTP/1.1\r\n" + host +
                         "Content-Type: application/json\r\nContent-Length: 2048\r\n\r\n"));
  ASSERT_TRUE(conn.ReadUntil("HTTP/1.1 413")) << conn.in();
}

TEST_F(TlsTest, WssWakeDelivered) {
  TestServer server(TlsOptions());
  const std::string url = Url(server.port());
  auto o = Trusting(pki_.ca_cert);
  PutFamily(url, o);

  TlsConn ws(server.port(), pki_.ca_cert);
  ASSERT_TRUE(ws.ok());
  ASSERT_TRUE(Upgrade(ws, server.port(), "/v1/wakes?watcher=" + kMain)) << ws.in();
  WakeTheParent(url, o);

  std::string wake = NextFrame(ws);
  EXPECT_NE(wake.find("\"watcher\":\"" + kMain + "\""), std::string::npos) << wake;
  EXPECT_NE(wake.find("session-state:" + kChild), std::string::npos) << wake;
}

TEST_F(TlsTest, ParkedSendAnsweredOverTlsAndTheDeliveryFeedOverWss) {
  server::ServerOptions o = TlsOptions();
  o.tools.visibility = tools::Visibility::kAll;
  TestServer server(o);
  const std::string url = Url(server.port());
  auto trusting = Trusting(pki_.ca_cert);
  for (const std::string& key : {kMain, kChild}) {
    auto put = net::HttpRequest(url, "PUT", "/v1/sessions/" + key, "{}", trusting);
    ASSERT_OK(put);
    ASSERT_EQ(put->status, 200) << put->body;
  }
  TlsConn feed(server.port(), pki_.ca_cert);
  ASSERT_TRUE(feed.ok());
  ASSERT_TRUE(Upgrade(feed, server.port(), "/v1/deliveries?agentId=main")) << feed.in();

  TlsConn call(server.port(), pki_.ca_cert);
  ASSERT_TRUE(call.ok());
  std::string body = R"({"sessionKey":")" + kChild + R"(","message":"status?","timeoutSeconds":5})";
  ASSERT_TRUE(call.Write("POST /v1/tools/sessions_send HTTP/1.1\r\nHost: 127.0.0.1:" +
                         std::to_string(server.port()) + "\r\nX-Session-Key: " + kMain +
                         "\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body));
  // The message on the feed: the call is parked.
  std::string delivery = NextFrame(feed);
  EXPECT_NE(delivery.find("status?"), std::string::npos) << delivery;
  auto clock = net::HttpRequest(url, "POST", "/v1/clock",
                                R"({"now":)" + std::to_string(kStartMs + 5000) + "}", trusting);
  ASSERT_OK(clock);
  ASSERT_EQ(clock->status, 200) << clock->body;
  ASSERT_TRUE(call.ReadUntil("\"status\":\"timeout\"")) << call.in();
  EXPECT_EQ(call.in().rfind("HTTP/1.1 200", 0), 0u) << call.in();
  // The connection serves on after its parked answer.
  ASSERT_TRUE(call.Write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:" +
                         std::to_string(server.port()) + "\r\n\r\n"));
  ASSERT_TRUE(call.ReadUntil("HTTP/1.1 200", 2)) << call.in();
}

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutACertificateOfItsCa) {
  TestServer server(TlsOptions(/*mutual=*/true));
  auto none = net::HttpRequest(Url(server.port()), "GET", "/healthz", "", Trusting(pki_.ca_cert));
  ASSERT_FALSE(none.ok()) << none->status;
  EXPECT_NE(none.status().message().find("certificate required"), std::string::npos)
      << none.status().ToString();

  auto stranger = Trusting(pki_.ca_cert);
  stranger.tls.cert_file = pki_.stranger_cert;
  stranger.tls.key_file = pki_.stranger_key_file;
  auto refused = net::HttpRequest(Url(server.port()), "GET", "/healthz", "", stranger);
  EXPECT_FALSE(refused.ok());

  auto with = Trusting(pki_.ca_cert);
  with.tls.cert_file = pki_.client_cert;
  with.tls.key_file = pki_.client_key_file;
  auto answer = net::HttpRequest(Url(server.port()), "GET", "/healthz", "", with);
  ASSERT_OK(answer);
  EXPECT_EQ(answer->status, 200);
}

TEST_F(TlsTest, HandshakeTimeoutClosesASilentClient) {
  server::ServerOptions o = TlsOptions();
  o.tls_handshake_timeout_ms = 200;
  TestServer server(o);
  int fd = ConnectLoopback(server.port());
  ASSERT_GE(fd, 0);
  char c;
  // The server closes the connection (0) well before this read's 10 s bound (-1).
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);
  ::close(fd);
  // The server still serves.
  auto answer = net::HttpRequest(Url(server.port()), "GET", "/healthz", "", Trusting(pki_.ca_cert));
  ASSERT_OK(answer);
  EXPECT_EQ(answer->status, 200);
}

// curl http:// to an https:// port: told so in plain HTTP, not a connection closed unexplained.
TEST_F(TlsTest, PlainHttpToTheTlsPortIsToldItSpeaksTls) {
  TestServer server(TlsOptions());
  RawConnection raw(server.port());
  ASSERT_TRUE(raw.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  bool closed = false;
  const std::string answer = raw.ReadUntilClosed(kWait, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find(R"({"error":{"code":"tls_required","message":"this port speaks HTTPS)"),
            std::string::npos)
      << answer;
  // The server still serves TLS.
  auto https = net::HttpRequest(Url(server.port()), "GET", "/healthz", "", Trusting(pki_.ca_cert));
  ASSERT_OK(https);
  EXPECT_EQ(https->status, 200);
}

TEST_F(TlsTest, FilesThatCannotBeUsedAreAnErrorNamingThem) {
  std::string root = MakeTempDir();
  auto open = [&](server::ServerOptions o) {
    o.data_dir = root + "/data";
    auto d = server::Daemon::Open(o);
    return d.ok() ? Status::OK() : d.status();
  };
  server::ServerOptions o = TlsOptions();
  o.tls_cert_file = root + "/missing.pem";
  Status s = open(o);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("cannot read the TLS certificate file (--tls-cert) \"" + root +
                             "/missing.pem\": No such file or directory"),
            std::string::npos)
      << s.ToString();

  o = TlsOptions();
  o.tls_key_file = pki_.client_key_file;  // another certificate's key
  s = open(o);
  EXPECT_NE(s.message().find("\"" + pki_.client_key_file + "\" does not match the certificate"),
            std::string::npos)
      << s.ToString();

  o = TlsOptions();
  o.tls_cert_file = pki_.server_key_file;  // not a certificate
  s = open(o);
  EXPECT_NE(s.message().find("\"" + pki_.server_key_file + "\" cannot be used"),
            std::string::npos)
      << s.ToString();

  o = TlsOptions();
  o.tls_key_file.clear();
  s = open(o);
  EXPECT_NE(s.message().find("--tls-cert and --tls-key go together"), std::string::npos)
      << s.ToString();
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

TEST_F(TlsTest, ReconfigureReReadsTheCertificateFiles) {
  // The daemon's files are copies, replaced in place as a renewal would.
  std::string dir = MakeTempDir("statewatch-tls-renew");
  namespace fs = std::filesystem;
  server::ServerOptions o = TlsOptions();
  o.tls_cert_file = dir + "/cert.pem";
  o.tls_key_file = dir + "/key.pem";
  fs::copy_file(pki_.server_cert, o.tls_cert_file);
  fs::copy_file(pki_.server_key_file, o.tls_key_file);
  TestServer server(o);
  const std::string url = Url(server.port());
  ASSERT_OK(net::HttpRequest(url, "GET", "/healthz", "", Trusting(pki_.ca_cert)));

  TestPki renewed;  // another CA
  fs::copy_file(renewed.server_cert, o.tls_cert_file, fs::copy_options::overwrite_existing);
  // A key that does not match: refused, naming it; the running certificate stays.
  fs::copy_file(renewed.client_key_file, o.tls_key_file, fs::copy_options::overwrite_existing);
  Status refused = server.daemon().Reconfigure(server.options());
  EXPECT_NE(refused.message().find("does not match"), std::string::npos) << refused.ToString();
  ASSERT_OK(net::HttpRequest(url, "GET", "/healthz", "", Trusting(pki_.ca_cert)));

  fs::copy_file(renewed.server_key_file, o.tls_key_file, fs::copy_options::overwrite_existing);
  ASSERT_OK(server.daemon().Reconfigure(server.options()));
  auto answer = net::HttpRequest(url, "GET", "/healthz", "", Trusting(renewed.ca_cert));
  ASSERT_OK(answer);
  EXPECT_EQ(answer->status, 200);
  EXPECT_FALSE(net::HttpRequest(url, "GET", "/healthz", "", Trusting(pki_.ca_cert)).ok());
  server.Stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_F(TlsTest, CliServerHttpsWithCaFile) {
  TestServer server(TlsOptions());
  const std::string url = Url(server.port());
  const std::string err = pki_.dir() + "/cli.err";
  Child ok = Spawn({"--server", url, "--ca-file", pki_.ca_cert, "stats"}, err);
  std::string line = FirstLine(ok.stdout_fd);
  EXPECT_EQ(Wait(ok.pid), 0) << Slurp(err);
  EXPECT_EQ(line.rfind("{", 0), 0u) << line;
  ::close(ok.stdout_fd);

  Child refused = Spawn({"--server", url, "stats"}, err);
  FirstLine(refused.stdout_fd);
  ::close(refused.stdout_fd);
  EXPECT_EQ(Wait(refused.pid), 1);
  std::string message = Slurp(err);
  EXPECT_NE(message.find("is not trusted: unable to get local issuer certificate"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--ca-file"), std::string::npos) << message;
}

TEST_F(TlsTest, CliWatchFollowsWakesOverWssWithCaFile) {
  TestServer server(TlsOptions());
  const std::string url = Url(server.port());
  auto o = Trusting(pki_.ca_cert);
  PutFamily(url, o);
  Follower watch({"--server", url, "--ca-file", pki_.ca_cert, "watch", "--watcher", kMain,
                  "--count", "1"});
  // The line comes once the upgrade was answered: the daemon subscribed the feed before.
  ASSERT_NE(watch.ErrLineWith("following wakes of " + kMain + " at " + url), "")
      << watch.seen();
  WakeTheParent(url, o);
  std::string wake = watch.OutLine();
  EXPECT_NE(wake.find("\"watcher\":\"" + kMain + "\""), std::string::npos) << wake;
  EXPECT_NE(wake.find("session-state:" + kChild), std::string::npos) << wake;
  EXPECT_EQ(watch.Wait(), 0);
}

TEST_F(TlsTest, CliWatchWithoutTheCaNamesTheVerificationError) {
  TestServer server(TlsOptions());
  const std::string url = Url(server.port());
  Follower watch({"--server", url, "watch", "--watcher", kMain, "--count", "1"});
  std::string message = watch.ErrLineWith("is not trusted");
  EXPECT_EQ(watch.Wait(), 1);
  EXPECT_NE(message.find("TLS: the certificate of 127.0.0.1:" + std::to_string(server.port()) +
                         " is not trusted: unable to get local issuer certificate"),
            std::string::npos)
      << message << watch.seen();
  EXPECT_NE(message.find("--ca-file FILE trusts a CA beyond the system store"), std::string::npos)
      << message;
  EXPECT_EQ(watch.OutLine(), "");  // nothing on stdout
}

TEST_F(TlsTest, CliWatchPresentsTheClientCertificateToAMutualTlsDaemon) {
  TestServer server(TlsOptions(/*mutual=*/true));
  const std::string url = Url(server.port());
  auto o = Trusting(pki_.ca_cert);
  o.tls.cert_file = pki_.client_cert;
  o.tls.key_file = pki_.client_key_file;
  PutFamily(url, o);
  Follower watch({"--server", url, "--ca-file", pki_.ca_cert, "--client-cert", pki_.client_cert,
                  "--client-key", pki_.client_key_file, "watch", "--watcher", kMain, "--drain",
                  "--count", "1"});
  ASSERT_NE(watch.ErrLineWith("following wakes of " + kMain), "") << watch.seen();
  WakeTheParent(url, o);
  std::string wake = watch.OutLine();
  EXPECT_NE(wake.find("\"watcher\":\"" + kMain + "\""), std::string::npos) << wake;
  // --drain's requests carry the certificate too: the notice follows the wake.
  std::string notice = watch.OutLine();
  EXPECT_NE(notice.find("\"targetSessionKey\":\"" + kChild + "\""), std::string::npos) << notice;
  EXPECT_EQ(watch.Wait(), 0);

  Follower refused({"--server", url, "--ca-file", pki_.ca_cert, "watch", "--watcher", kMain,
                    "--count", "1"});
  EXPECT_EQ(refused.Wait(), 1);
}

}  // namespace
}  // namespace statewatch::testing
