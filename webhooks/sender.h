// One webhook call: a POST of a JSON body with the given headers, under the URL policy
// (webhooks/url_policy.h). The dispatcher (webhooks/dispatcher.h) talks to a Sender, so
// tests put a scripted one in its place.
//
// The HTTP sender speaks HTTP/1.1 with Connection: close over net::Connection (TLS by
// OpenSSL for https://, the certificate verified against the system store or
// tls.ca_file). Redirects are never followed: a 3xx is a failed attempt like any answer
// outside 2xx.
//
// Thread-safe: Send may run on several threads at once.
#ifndef STATEWATCH_WEBHOOKS_SENDER_H_
#define STATEWATCH_WEBHOOKS_SENDER_H_

#include <memory>
#include <string>

#include "net/http_client.h"
#include "net/tls.h"
#include "webhooks/url_policy.h"

namespace statewatch::webhooks {

struct Attempt {
  std::string url;
  std::string body;
  net::HeaderList headers;  // besides Host, Content-Type, Content-Length, Connection
  int timeout_ms = 10000;
};

struct AttemptResult {
  bool delivered = false;  // a 2xx answer
  int status = 0;          // the answer's status, 0 when none came
  bool refused = false;    // the URL policy refused the URL or every address: not retried
  std::string error;       // why it failed ("" when delivered)
};

class Sender {
 public:
  virtual ~Sender() = default;
  virtual AttemptResult Send(const Attempt& attempt) = 0;
};

std::unique_ptr<Sender> NewHttpSender(const UrlPolicy& policy, net::TlsClientOptions tls = {});

}  // namespace statewatch::webhooks

#endif  // STATEWATCH_WEBHOOKS_SENDER_H_
