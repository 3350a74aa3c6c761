// Session mail between partitions: the internal route and the sender
// (server/session_mail_route.h, docs/cluster-internals.md, "Session tools across partitions").
#include "server/session_mail_route.h"

#include <boost/json.hpp>
#include <utility>

#include "server/handlers.h"
#include "server/internal_call.h"
#include "server/request_guard.h"
#include "server/route_table.h"
#include "tools/session_mail_forwarder.h"
#include "tools/session_messaging.h"

namespace statewatch::server {
namespace json = boost::json;

Status CheckSessionMailCaller(const HandlerContext& ctx, const ApiRequest& request) {
  // A cluster's slots hold its secret (server/internal_call.h): then only a request signed
  // with it is mail, whatever token it carries.
  if (!ctx.options.cluster_secret.empty()) {
    const std::string_view header =
        request.header ? request.header(kInternalHeaderLower) : std::string_view();
    Status s = CheckInternal(ctx.options.cluster_secret, request.method, request.target,
                             request.body, header);
    if (!s.ok()) {
      return Status::PermissionDenied(std::string(kSessionMailPath) + ": " + s.message());
    }
    return Status::OK();
  }
  if (!ctx.options.token.empty() && BearerToken(request.authorization) != ctx.options.token) {
    return Status::PermissionDenied(std::string(kSessionMailPath) +
                                    " is a cluster-internal route: it needs the daemon's own "
                                    "token");
  }
  return Status::OK();
}

namespace {

ApiResponse ApplyMail(const HandlerContext& ctx, const ApiRequest& request) {
  if (Status caller = CheckSessionMailCaller(ctx, request); !caller.ok()) {
    return Api::Error(403, "internal_only", caller.message());
  }
  if (ctx.services.messaging == nullptr) {
    return Api::Error(503, "unavailable", "this daemon has no session messaging");
  }
  ApiResponse error;
  auto body = ParseBody(request.body, &error);
  if (!body) return error;
  auto mail = tools::MailFromJson(*body);
  if (!mail.ok()) return StatusResponse(mail.status());
  auto applied = ctx.services.messaging->ApplyMail(*mail);
  if (!applied.ok()) return StatusResponse(applied.status());
  return JsonResponse(200, json::object{{"applied", *applied}});
}

class SessionMailGate final : public RequestGate {
 public:
  explicit SessionMailGate(std::shared_ptr<RequestGate> inner) : inner_(std::move(inner)) {}

  std::optional<ApiResponse> Intercept(const HandlerContext& ctx, const ApiRequest& request,
                                       std::string_view path, const RouteLookup& found) override {
    if (path != kSessionMailPath) return inner_->Intercept(ctx, request, path, found);
    if (request.method != "POST") {
      return Api::Error(405, "method_not_allowed",
                        std::string(request.method) + " " + std::string(path) +
                            " is not served here");
    }
    // Answered where a write would be: the owner, serving under its lease.
    static const RouteLookup kWrite =
        MatchRoute("POST", "/v1/events", "", RouteScope::kCluster);
    if (auto refused = inner_->Intercept(ctx, request, "/v1/events", kWrite)) return refused;
    return ApplyMail(ctx, request);
  }
  ApiResponse AnswerClusterRoute(ClusterRoute route, const HandlerContext& ctx,
                                 const ApiRequest& request) override {
    return inner_->AnswerClusterRoute(route, ctx, request);
  }

 private:
  std::shared_ptr<RequestGate> inner_;
};

}  // namespace

std::shared_ptr<RequestGate> WithSessionMail(std::shared_ptr<RequestGate> inner) {
  return std::make_shared<SessionMailGate>(std::move(inner));
}

Status SendSessionMail(const SessionMailSenderOptions& options, const SessionMail& mail) {
  // The directory as last read (read afresh after a refusal: below).
  auto owner = OwnerForAttempt(options.owner, mail.partition, 0);
  if (!owner) {
    return Status::IOError("partition " + std::to_string(mail.partition) +
                               " has no owner in the directory");
  }
  net::HttpRequestOptions call;
  call.token = options.token;
  call.timeout_ms = static_cast<int>(options.request_timeout.count());
  std::string body = json::serialize(tools::MailToJson(mail));
  if (!options.secret.empty()) {
    SignInternal(options.secret, "POST", kSessionMailPath, body, &call.headers);
  }
  auto answer = options.send(owner->url, "POST", std::string(kSessionMailPath), body, call);
  if (!answer.ok()) return answer.status();
  if (answer->status == 200) return Status::OK();
  (void)options.owner(mail.partition, /*refresh=*/true);  // a moved owner: ask again
  return Status::IOError("session mail " + mail.key + " to partition " +
                             std::to_string(mail.partition) + " at " + owner->url + ": HTTP " +
                             std::to_string(answer->status) + " " + answer->body.substr(0, 200));
}

}  // namespace statewatch::server
