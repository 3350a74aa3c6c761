// The forwarder of session mail (docs/cluster-internals.md,
// "Session tools across partitions"): carries the rows of this partition's outbox
// (statewatch/session_mail.h) to their destination partitions' owners and removes each once
// acknowledged. Runs on the owner of a partition only; a new owner (after a takeover)
// starts with every row due, so nothing a failed owner wrote is left behind.
//
//   SessionMailForwarder fwd(engine, send);   // send: POST the mail to partition p's owner
//   fwd.Start();                              // its own thread; Wake() after each new mail
//
// Delivery is at-least-once on the wire and exactly-once at the destination (it dedupes by
// the mail's key: SessionMessaging::ApplyMail). The rows of one run (the key up to its first
// ':') go in key order, each only after the one before was acknowledged: a spawn's child
// is created before its steer, end or stop can arrive. A send that fails is retried after a back-off
// that doubles from `first_retry_ms` up to `max_retry_ms`, per row, for as long as it takes:
// a row is only ever removed after an acknowledgement.
//
// Pump() is the whole algorithm, on a time the caller gives, so tests drive it with a
// manual clock and no thread. Thread-safe.
#ifndef STATEWATCH_TOOLS_SESSION_MAIL_FORWARDER_H_
#define STATEWATCH_TOOLS_SESSION_MAIL_FORWARDER_H_

#include <boost/json.hpp>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "statewatch/engine.h"
#include "statewatch/session_mail.h"
#include "statewatch/status.h"

namespace statewatch::tools {

// The wire form of a mail (the body of POST /v1/cluster/internal/mail):
//   {"key", "partition", "watcher", "delivery": {"agentId", "sessionKey", "type", "runId",
//    "text", "sourceSessionKey", "sourceTool", "sourceChannel", "createdAt", "traceparent"},
//    "kind"?, "encoded"?}
// A mail that is not a plain message, or whose delivery has a route or spawn options, also
// carries "encoded": the hex of its whole record (EncodeSessionMail); the reader then takes
// the record (its key must match "key").
boost::json::object MailToJson(const SessionMail& mail);
// InvalidArgument naming the field that is missing or of the wrong type.
Result<SessionMail> MailFromJson(const boost::json::value& body);

// Sends one mail to its destination partition's owner. OK: acknowledged (applied now or
// before). Any error: not known to be applied; the row stays and is retried.
using MailSender = std::function<Status(const SessionMail& mail)>;

struct MailForwarderOptions {
  int64_t first_retry_ms = 200;
  int64_t max_retry_ms = 10'000;
};

class SessionMailForwarder {
 public:
  // `engine` is not owned and must outlive this.
  SessionMailForwarder(Engine* engine, MailSender send, MailForwarderOptions options = {});
  ~SessionMailForwarder();  // Stop()
  SessionMailForwarder(const SessionMailForwarder&) = delete;
  SessionMailForwarder& operator=(const SessionMailForwarder&) = delete;

  struct PumpResult {
    int sent = 0;    // acknowledged and removed
    int failed = 0;  // tried and failed: retried after their back-off
    std::optional<int64_t> next_due_ms;  // the earliest retry still waiting
  };
  // Sends every outbox row that is due at `now_ms` (a row never tried is due), in key order.
  // Errors only when the outbox cannot be read or a row removed.
  Result<PumpResult> Pump(int64_t now_ms);

  // Runs Pump on its own thread (steady-clock milliseconds): at start, after each Wake(),
  // and when the next retry is due.
  void Start();
  void Wake();
  void Stop();

 private:
  void Loop();

  Engine* engine_;
  MailSender send_;
  MailForwarderOptions options_;

  std::mutex pump_mu_;  // one Pump at a time; guards retries_
  struct Retry {
    int64_t due_ms = 0;
    int64_t backoff_ms = 0;
  };
  std::map<std::string, Retry> retries_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_SESSION_MAIL_FORWARDER_H_
