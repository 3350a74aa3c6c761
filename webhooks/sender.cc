#include "webhooks/sender.h"

#include <chrono>
#include <cstdlib>
#include <utility>

#include "net/connection.h"

namespace statewatch::webhooks {

namespace {

using Clock = net::Connection::Clock;

class HttpSender final : public Sender {
 public:
  HttpSender(const UrlPolicy& policy, net::TlsClientOptions tls)
      : policy_(policy), tls_(std::move(tls)) {}

  AttemptResult Send(const Attempt& attempt) override {
    AttemptResult out;
    auto url = ParseWebhookUrl(attempt.url);
    if (!url.ok()) return Refused(url.status().message());
    if (Status s = CheckUrl(*url, policy_); !s.ok()) return Refused(s.message());
    net::Endpoint endpoint;
    endpoint.host = url->host;
    endpoint.port = url->port;
    endpoint.tls = url->https;
    const auto deadline = Clock::now() + std::chrono::milliseconds(attempt.timeout_ms);
    bool refused_any = false;
    net::Connection::AddressCheck check = [&](const sockaddr* a, socklen_t) {
      Status s = CheckAddress(*url, a, policy_);
      if (!s.ok()) refused_any = true;
      return s;
    };
    auto conn = net::Connection::Open(endpoint, tls_, deadline, &check);
    if (!conn.ok()) {
      out.error = conn.status().message();
      // Every address refused by the policy: nothing was connected, and a retry would not
      // change that.
      out.refused = refused_any && out.error.find("webhooks.allow") != std::string::npos;
      return out;
    }
    std::string host = url->host.find(':') != std::string::npos ? "[" + url->host + "]" : url->host;
    bool default_port = url->port == (url->https ? "443" : "80");
    std::string request = "POST " + url->target + " HTTP/1.1\r\nHost: " + host +
                          (default_port ? "" : ":" + url->port) +
                          "\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(attempt.body.size()) +
                          "\r\nConnection: close\r\nUser-Agent: statewatch-webhooks\r\n";
    for (const auto& [name, value] : attempt.headers) request += name + ": " + value + "\r\n";
    request += "\r\n";
    request += attempt.body;
    if (Status s = (*conn)->SendAll(request, deadline, "sending the webhook call"); !s.ok()) {
      out.error = s.message();
      return out;
    }
    // The status line is all that is needed: read until the header block ends, the
    // receiver closes, or the attempt's time is up.
    std::string in;
    for (;;) {
      if (in.find("\r\n\r\n") != std::string::npos) break;
      auto got = (*conn)->ReceiveSome(&in, deadline, "reading the webhook answer");
      if (!got.ok()) {
        out.error = got.status().message();
        return out;
      }
      if (*got == net::Connection::Received::kTimeout) {
        out.error = "no answer within " + std::to_string(attempt.timeout_ms) + " ms";
        return out;
      }
      if (*got == net::Connection::Received::kClosed) break;
    }
    if (in.rfind("HTTP/1.", 0) != 0 || in.size() < 12) {
      out.error = in.empty() ? "the receiver closed the connection without an answer"
                             : "the answer is not HTTP/1.x";
      return out;
    }
    out.status = std::atoi(in.c_str() + 9);
    out.delivered = out.status >= 200 && out.status < 300;
    if (!out.delivered) {
      out.error = "answered " + std::to_string(out.status) +
                  (out.status >= 300 && out.status < 400 ? " (redirects are not followed)" : "");
    }
    return out;
  }

 private:
  static AttemptResult Refused(std::string why) {
    AttemptResult r;
    r.refused = true;
    r.error = std::move(why);
    return r;
  }

  const UrlPolicy policy_;
  const net::TlsClientOptions tls_;
};

}  // namespace

std::unique_ptr<Sender> NewHttpSender(const UrlPolicy& policy, net::TlsClientOptions tls) {
  return std::make_unique<HttpSender>(policy, std::move(tls));
}

}  // namespace statewatch::webhooks
