#include "server/as_of_handlers.h"

#include "codecs/json_codec.h"
#include "codecs/status_at_json.h"
#include "server/url.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

json::value TextOrNull(const std::optional<std::string>& s) {
  return s ? json::value(*s) : json::value(nullptr);
}

}  // namespace

ApiResponse HandleSessionStatusAt(const HandlerContext& ctx, const ApiRequest& req,
                                  const std::string& key, std::string_view query) {
  ApiResponse error;
  std::optional<std::string> as_of_text, since_text, limit_text;
  if (!ReadQueryParam(query, "asOf", &as_of_text, &error)) return error;
  if (!ReadQueryParam(query, "changesSince", &since_text, &error)) return error;
  if (!ReadQueryParam(query, "limit", &limit_text, &error)) return error;
  auto name = RouteSessionName(req, key, query);
  if (!name.ok()) return StatusResponse(name.status());
  json::value as_of_value = TextOrNull(as_of_text);
  auto as_of = tools::ParseAsOf(&as_of_value);
  if (!as_of.ok()) return StatusResponse(as_of.status());
  json::value since_value = TextOrNull(since_text);
  auto since = tools::ParseChangesSince(&since_value);
  if (!since.ok()) return StatusResponse(since.status());
  int limit = 200;  // as /state
  if (!ParsePageLimit(limit_text, &limit, &error)) return error;
  auto status = ctx.engine.StatusAt(*name, *as_of, since->value_or(0), limit);
  if (!status.ok()) {
    if (status.status().code() == Status::Code::kFailedPrecondition) {
      return Api::Error(410, "as_of_unavailable", status.status().message());
    }
    return StatusResponse(status.status());
  }
  return JsonResponse(200, tools::SessionStatusAtToJson(*name, *status));
}

}  // namespace statewatch::server
