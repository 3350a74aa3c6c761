// Session mail between the partitions of a cluster (docs/cluster-internals.md,
// "Session tools across partitions"), the server's side: the owner slot's internal route that
// applies a mail, and the sender a node gives its slots to reach another partition's owner.
//
//   POST /v1/internal/session-mail     body: tools::MailToJson(mail)
//     200 {"applied": true|false}  (false: applied before — the retry of a lost answer)
//     421 misdirected (this partition does not hold the mail's session), 400 for a bad body,
//     403 internal_only without the caller check, 503 when this slot does not serve writes
//     (a standby, a moved partition: the sender asks the directory again and retries).
//
// The caller check is CheckSessionMailCaller: today the daemon's own token (as the watcher
// directory's internal routes); it is the one place to switch to the cluster secret's
// X-Statewatch-Internal signature (server/internal_call.h) once slots hold the secret. A
// node's own port never forwards /v1/internal/… from a client.
//
// Thread-safe.
#ifndef STATEWATCH_SERVER_SESSION_MAIL_ROUTE_H_
#define STATEWATCH_SERVER_SESSION_MAIL_ROUTE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_client.h"
#include "server/api.h"
#include "server/partition_router.h"
#include "statewatch/session_mail.h"
#include "statewatch/status.h"

namespace statewatch::server {

inline constexpr std::string_view kSessionMailPath = "/v1/internal/session-mail";

// A gate that answers POST /v1/internal/session-mail (as a write: only an owner serving
// under its lease gets that far) and passes everything else to `inner`.
std::shared_ptr<RequestGate> WithSessionMail(std::shared_ptr<RequestGate> inner);

// OK when the request may carry session mail: signed with the cluster's secret when the
// daemon holds one, else carrying the daemon's own token. PermissionDenied naming why.
Status CheckSessionMailCaller(const HandlerContext& ctx, const ApiRequest& request);

struct SessionMailSenderOptions {
  // As PartitionRouterOptions: the owner's slot URL of a partition, and one HTTP exchange.
  std::function<std::optional<OwnerAddress>(uint32_t partition, bool refresh)> owner;
  std::function<Result<net::HttpAnswer>(const std::string& url, const std::string& method,
                                        const std::string& target, const std::string& body,
                                        const net::HttpRequestOptions& options)>
      send;
  std::string token;  // the slots' token (ServerOptions::token), "" when none
  // The cluster's secret: the mail is signed with it (server/internal_call.h), and a slot
  // that holds it accepts nothing unsigned. "" outside a cluster.
  std::string secret;
  std::chrono::milliseconds request_timeout{5000};
};

// One attempt to hand `mail` to its partition's owner: OK on 200; an error otherwise (no
// owner known, unreachable, answer lost, a refusal) — the forwarder retries. A refusal asks
// the directory afresh next time.
Status SendSessionMail(const SessionMailSenderOptions& options, const SessionMail& mail);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_SESSION_MAIL_ROUTE_H_
