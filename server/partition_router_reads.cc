// The router's reads across partitions (docs/cluster-internals.md, "Reads across partitions"):
// sessions_list merged from every partition's window under the caller's visibility, and
// session_status / sessions_history of a session in another partition, answered there under
// the caller's context. The routing itself: server/partition_router.cc.

#include "server/partition_router.h"

#include <openssl/evp.h>

#include <boost/json.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <utility>
#include <vector>

#include "base/hex.h"
#include "base/sha256.h"
#include "server/json_body.h"
#include "tools/session_tools.h"
#include "tools/sessions_list_window.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

constexpr char kCallerContextTarget[] = "/v1/internal/caller-context";

std::string Base64Url(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

std::optional<std::string> FromBase64Url(std::string_view text) {
  if (text.empty() || text.size() > 4096) return std::nullopt;
  std::string in(text);
  for (char& c : in) {
    if (c == '-') c = '+';
    else if (c == '_') c = '/';
    else if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
  }
  const std::size_t pad = (4 - in.size() % 4) % 4;
  if (pad == 3) return std::nullopt;
  in.append(pad, '=');
  std::string out(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

// A page's nextCursor: the last row's sort key and the offset of the row after it.
std::string EncodeCursor(const tools::ListSortKey& last, int64_t next_offset) {
  return Base64Url(json::serialize(json::object{{"v", 1},
                                                {"u", last.updated_at},
                                                {"k", last.key},
                                                {"a", last.agent_id},
                                                {"o", next_offset}}));
}

struct Cursor {
  tools::ListSortKey after;
  int64_t offset = 0;
};

std::optional<Cursor> DecodeCursor(const json::value& token) {
  if (!token.is_string()) return std::nullopt;
  auto text = FromBase64Url(token.as_string());
  if (!text) return std::nullopt;
  auto o = JsonObjectOf(*text);
  if (!o) return std::nullopt;
  const json::value* v = o->if_contains("v");
  const json::value* u = o->if_contains("u");
  const json::value* k = o->if_contains("k");
  const json::value* a = o->if_contains("a");
  const json::value* off = o->if_contains("o");
  if (v == nullptr || !v->is_int64() || v->as_int64() != 1 || u == nullptr || !u->is_int64() ||
      k == nullptr || !k->is_string() || k->as_string().empty() || a == nullptr ||
      !a->is_string() || off == nullptr || !off->is_int64() || off->as_int64() < 0) {
    return std::nullopt;
  }
  return Cursor{{u->as_int64(), std::string(k->as_string()), std::string(a->as_string())},
                off->as_int64()};
}

// A positive integer parameter as sessions_list reads it, else `fallback` (a bad value is
// refused by the partitions with sessions_list's own message).
int64_t IntParam(const json::object& params, std::string_view name, int64_t fallback) {
  const json::value* v = params.if_contains(name);
  if (v == nullptr || v->is_null()) return fallback;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(std::min<uint64_t>(v->as_uint64(), INT64_MAX));
  if (v->is_double() && v->as_double() >= 0 && v->as_double() < 9e15) {
    return static_cast<int64_t>(v->as_double());
  }
  return fallback;
}

net::ListenerAnswer BadCursor(const std::string& message) {
  return JsonErrorAnswer(400, "invalid_parameter", message);
}
// The home partition's caller context did not parse.
net::ListenerAnswer BadCallerContext(uint32_t home, const net::ListenerAnswer& context) {
  return JsonErrorAnswer(502, "bad_gateway", "partition " + std::to_string(home) +
                                                 " answered the caller context with " +
                                                 context.body.substr(0, 200));
}

}  // namespace

net::ListenerAnswer PartitionRouter::CallerContext(uint32_t home,
                                                   const net::ListenerRequest& request,
                                                   const std::string& tool) const {
  const std::string target = kCallerContextTarget;
  return ToPartition(home, request, json::serialize(json::object{{"tool", tool}}),
                     options_.request_timeout, options_.retry_for, &target);
}

net::ListenerAnswer PartitionRouter::RemoteRead(const net::ListenerRequest& request,
                                                const std::string& tool, uint32_t home,
                                                uint32_t partition) const {
  return RemoteReads(request, tool, home, {partition}).front();
}

// The context a lookup runs under: the caller's, widened to every session. A single node
// finds a label's or an id's session first and checks the caller's access to it after, so
// the lookup must not be narrowed by the caller's visibility.
json::object Widened(json::object context) {
  context["visibility"] = "all";
  context["agentToAgent"] = json::object{{"enabled", true}, {"allow", json::array{"*"}}};
  return context;
}

// The tool answered at each of `partitions` under the context the caller's home resolves
// (asked once; `widen`: Widened), in the order given; the home's refusal of the caller as
// every answer.
std::vector<net::ListenerAnswer> PartitionRouter::RemoteReads(
    const net::ListenerRequest& request, const std::string& tool, uint32_t home,
    const std::vector<uint32_t>& partitions, bool widen) const {
  net::ListenerAnswer context = CallerContext(home, request, tool);
  if (context.status != 200) {  // the caller's own refusal (policy, caller)
    return std::vector<net::ListenerAnswer>(partitions.size(), context);
  }
  auto ctx = JsonObjectOf(context.body);
  auto params = JsonObjectOf(request.body.empty() ? "{}" : request.body);
  if (!ctx || !params) {
    return std::vector<net::ListenerAnswer>(partitions.size(), BadCallerContext(home, context));
  }
  json::object inner{{"caller", (*ctx)["caller"]},
                     {"context", widen ? Widened(*ctx) : *ctx},
                     {"params", *params}};
  const std::string body = json::serialize(inner);
  const std::string target = "/v1/internal/tools/" + tool;
  std::vector<std::future<net::ListenerAnswer>> pending;
  for (uint32_t p : partitions) {
    pending.push_back(std::async(std::launch::async, [this, p, &request, &body, &target] {
      return ToPartition(p, request, body, options_.request_timeout, options_.retry_for, &target);
    }));
  }
  std::vector<net::ListenerAnswer> answers;
  for (auto& a : pending) answers.push_back(a.get());
  return answers;
}

// A single node finds a session id among all its sessions (tools/session_history.h
// ResolveSessionReference); in a cluster the session may live in any partition. The home
// answers first, as before; only a 404 (the reference names no session there) or a 403 (an
// unknown bare reference is checked as a key of the caller's agent, which its visibility may
// refuse) sends the read to every other partition, in parallel, under the context the home
// resolves. The first answer in partition order that is not "not here" (404, or 421: the
// reference read as a key of the caller's agent, which lives elsewhere) — the session's
// answer, a refusal, or a 503 of a partition that could not be asked and might hold it — is
// the answer; when there is none, the home's. Session ids are random UUIDs: two partitions
// holding the same one is not expected, and would be answered by the lower partition.
net::ListenerAnswer PartitionRouter::ReadAnywhere(const net::ListenerRequest& request,
                                                  const std::string& tool, uint32_t home) const {
  net::ListenerAnswer at_home =
      ToPartition(home, request, request.body, options_.tool_timeout, options_.retry_for);
  if (at_home.status != 404 && at_home.status != 403) return at_home;
  std::vector<uint32_t> others;
  for (uint32_t p = 0; p < options_.partitions; ++p) {
    if (p != home) others.push_back(p);
  }
  for (net::ListenerAnswer& a : RemoteReads(request, tool, home, others)) {
    if (a.status != 404 && a.status != 421) return std::move(a);
  }
  return at_home;
}

net::ListenerAnswer PartitionRouter::ListAcross(const net::ListenerRequest& request,
                                                uint32_t home) const {
  const uint32_t P = options_.partitions;
  auto body = JsonObjectOf(request.body.empty() ? "{}" : request.body);
  if (!body) {  // refused by the caller's partition as by a single node
    return ToPartition(home, request, request.body, options_.request_timeout, options_.retry_for);
  }
  json::object params = std::move(*body);
  std::optional<Cursor> cursor;
  if (const json::value* token = params.if_contains("cursor")) {
    cursor = DecodeCursor(*token);
    if (!cursor) {
      return BadCursor("cursor must be the nextCursor of an earlier sessions_list page (got " +
                       json::serialize(*token).substr(0, 120) + ")");
    }
    if (params.contains("offset")) {
      return BadCursor("cursor and offset cannot both be given: the cursor continues after "
                       "the row it names (drop offset)");
    }
    params.erase("cursor");
  }
  net::ListenerAnswer context = CallerContext(home, request, "sessions_list");
  if (context.status != 200) return context;
  auto ctx = JsonObjectOf(context.body);
  if (!ctx) {
    return BadCallerContext(home, context);
  }
  const int64_t limit = std::clamp<int64_t>(IntParam(params, "limit", tools::kDefaultListLimit), 1,
                                            tools::kMaxListLimit);
  const int64_t offset = cursor ? 0 : std::clamp<int64_t>(IntParam(params, "offset", 0), 0,
                                                         int64_t{1} << 40);
  json::object window{{"take", offset + limit}};
  if (cursor) {
    window["after"] = json::object{{"updatedAt", cursor->after.updated_at},
                                   {"key", cursor->after.key},
                                   {"agentId", cursor->after.agent_id}};
  }
  const std::string inner = json::serialize(json::object{
      {"caller", (*ctx)["caller"]}, {"context", *ctx}, {"params", params}, {"window", window}});
  const std::string target = "/v1/internal/tools/sessions_list";
  std::vector<std::future<net::ListenerAnswer>> answers;
  for (uint32_t p = 0; p < P; ++p) {
    answers.push_back(std::async(std::launch::async, [this, p, &request, &inner, &target] {
      return ToPartition(p, request, inner, options_.request_timeout, options_.retry_for, &target);
    }));
  }
  std::vector<net::ListenerAnswer> got;
  for (auto& a : answers) got.push_back(a.get());
  std::vector<json::object> rows;
  std::map<std::pair<std::string, std::string>, json::array> children;
  int64_t total = 0;
  json::object first;
  for (uint32_t p = 0; p < P; ++p) {
    const net::ListenerAnswer& a = got[p];
    if (a.status >= 400 && a.status < 500) return a;  // bad parameters: every partition says so
  }
  for (uint32_t p = 0; p < P; ++p) {
    net::ListenerAnswer& a = got[p];
    auto window_answer = a.status == 200 ? JsonObjectOf(a.body) : std::nullopt;
    const json::value* list = window_answer ? window_answer->if_contains("rows") : nullptr;
    const json::value* kept = window_answer ? window_answer->if_contains("kept") : nullptr;
    const json::value* links = window_answer ? window_answer->if_contains("childLinks") : nullptr;
    if (list == nullptr || !list->is_array() || kept == nullptr || !kept->is_number() ||
        links == nullptr || !links->is_array()) {
      net::ListenerAnswer out = JsonErrorAnswer(
          503, "unavailable",
          "sessions_list needs every partition and partition " + std::to_string(p) +
              " did not answer its part (" + std::to_string(a.status) + " " +
              a.body.substr(0, 200) + "); retry");
      out.headers.emplace_back("Retry-After", "1");
      return out;
    }
    total += kept->to_number<int64_t>();
    for (const json::value& row : list->as_array()) {
      if (row.is_object()) rows.push_back(row.as_object());
    }
    for (const json::value& link : links->as_array()) {
      if (!link.is_array() || link.as_array().size() != 3) continue;
      const json::array& l = link.as_array();
      if (!l[0].is_string() || !l[1].is_string()) continue;
      children[{std::string(l[0].as_string()), std::string(l[1].as_string())}].push_back(l[2]);
    }
    if (p == 0) first = std::move(*window_answer);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const json::object& a, const json::object& b) {
    return tools::ListsBefore(tools::ListSortKeyOf(a), tools::ListSortKeyOf(b));
  });
  const std::size_t begin = std::min<std::size_t>(rows.size(), static_cast<std::size_t>(offset));
  const std::size_t end = std::min<std::size_t>(rows.size(), begin + static_cast<std::size_t>(limit));
  json::array sessions;
  for (std::size_t i = begin; i < end; ++i) {
    json::object& row = rows[i];
    // A child may live in another partition (another agent): the links of every partition.
    row.erase("childSessions");
    auto kids = children.find({tools::ListSortKeyOf(row).agent_id, tools::ListSortKeyOf(row).key});
    if (kids != children.end()) row["childSessions"] = kids->second;
    sessions.emplace_back(std::move(row));
  }
  const int64_t base = cursor ? cursor->offset : offset;
  const bool more = static_cast<int64_t>(end) < total;
  json::object out;
  out["count"] = sessions.size();
  out["sessions"] = std::move(sessions);
  out["hasMore"] = more;
  if (more) out["nextOffset"] = base + static_cast<int64_t>(end - begin);
  out["limitApplied"] = first.contains("limitApplied") ? first["limitApplied"] : json::value(limit);
  if (first.contains("visibility")) out["visibility"] = first["visibility"];
  Status fit = tools::FitListBudget(&out, base);
  if (!fit.ok()) return JsonErrorAnswer(500, "internal", fit.message());
  const json::array& page = out["sessions"].as_array();
  if (out["hasMore"].as_bool() && !page.empty()) {
    out["nextCursor"] = EncodeCursor(tools::ListSortKeyOf(page.back().as_object()),
                                     base + static_cast<int64_t>(page.size()));
  }
  net::ListenerAnswer answer(200, json::serialize(out) + "\n");
  answer.headers.emplace_back("Content-Type", "application/json");
  return answer;
}
// sessions_send naming its target by `label` in an agent of another partition: a single node
// looks the label up among that agent's sessions (tools/session_messaging_send.cc SendTarget)
// and then checks the caller's access to what it found. Here the agent's partition is asked
// for the rows with that label and agent (its sessions_list window, under the caller's
// context widened to every session: the lookup must not be narrowed by visibility, the send
// checks access afterwards), and the call goes to the caller's home naming the one it found
// by key. None found, or the lookup refused: the call goes to the home as it came, whose
// answer ("No session found with label: …") is a single node's; several: refused as one
// node refuses them.
net::ListenerAnswer PartitionRouter::SendByLabel(const net::ListenerRequest& request,
                                                 uint32_t home, uint32_t partition) const {
  auto as_is = [&] {
    return ToPartition(home, request, request.body, options_.tool_timeout, options_.retry_for);
  };
  auto params = JsonObjectOf(request.body);
  net::ListenerAnswer context = CallerContext(home, request, "sessions_send");
  auto ctx = context.status == 200 ? JsonObjectOf(context.body) : std::nullopt;
  if (!params || !ctx) return as_is();
  const std::string label = StringMember(*params, "label");
  const std::string agent = StringMember(*params, "agentId");
  const std::string inner = json::serialize(json::object{
      {"caller", (*ctx)["caller"]},
      {"context", Widened(*ctx)},
      {"params", json::object{{"label", label}, {"agentId", agent}, {"limit", 2}}},
      {"window", json::object{{"take", 2}}}});
  const std::string target = "/v1/internal/tools/sessions_list";
  net::ListenerAnswer found = ToPartition(partition, request, inner, options_.request_timeout,
                                          options_.retry_for, &target);
  auto window = found.status == 200 ? JsonObjectOf(found.body) : std::nullopt;
  const json::value* rows = window ? window->if_contains("rows") : nullptr;
  if (rows == nullptr || !rows->is_array() || rows->as_array().empty()) return as_is();
  if (rows->as_array().size() > 1) {
    return JsonErrorAnswer(400, "invalid_parameter",  // a session tool's refusal, as Api's
                           "Multiple sessions found with label: " + label +
                               " (use the sessionKey from sessions_list)");
  }
  const json::value& row = rows->as_array().front();
  if (!row.is_object() || StringMember(row.as_object(), "key").empty()) return as_is();
  params->erase("label");
  params->erase("agentId");
  (*params)["sessionKey"] = StringMember(row.as_object(), "key");
  return ToPartition(home, request, json::serialize(*params), options_.tool_timeout,
                     options_.retry_for);
}

namespace {

// The send by key that follows a home's 404 for a session id is a second request at the home
// (another body). Under the client's own X-Request-Id the home keeps that one's record, so a
// retry's first call — the body naming the id — would be refused as the id reused (422). It
// goes under an id made from the client's: the retry's second call then replays its answer.
net::ListenerRequest ByKeyRequest(const net::ListenerRequest& request) {
  static constexpr std::string_view kSuffix = "~by-key";
  net::ListenerRequest by_key = request;
  for (auto& [name, value] : by_key.headers) {
    if (name != "x-request-id" || value.empty()) continue;
    if (value.size() + kSuffix.size() > 128) {  // the longest X-Request-Id
      value = hex::Encode(sha256::BytesOf(value).substr(0, 16));
    }
    value.append(kSuffix);
  }
  return by_key;
}

}  // namespace

// sessions_send naming a session id (a `sessionKey` that is not an agent-scoped key) that
// the caller's home does not know: a single node finds an id among all its sessions. The
// home answers first, as before; on its 404 "Session not found" the other partitions are
// asked for the id's session (session_status under the widened context, in parallel), and
// the call goes to the home again naming the one found by key; none: the home's answer.
net::ListenerAnswer PartitionRouter::SendBySessionId(const net::ListenerRequest& request,
                                                     uint32_t home) const {
  net::ListenerAnswer at_home =
      ToPartition(home, request, request.body, options_.tool_timeout, options_.retry_for);
  auto params = JsonObjectOf(request.body);
  if (at_home.status != 404 || at_home.body.find("Session not found") == std::string::npos ||
      !params) {
    return at_home;
  }
  net::ListenerRequest lookup = request;
  lookup.body = json::serialize(json::object{{"sessionKey", StringMember(*params, "sessionKey")}});
  std::vector<uint32_t> others;
  for (uint32_t p = 0; p < options_.partitions; ++p) {
    if (p != home) others.push_back(p);
  }
  for (const net::ListenerAnswer& a :
       RemoteReads(lookup, "session_status", home, others, /*widen=*/true)) {
    auto card = a.status == 200 ? JsonObjectOf(a.body) : std::nullopt;
    const std::string key = card ? StringMember(*card, "sessionKey") : std::string();
    if (key.empty()) continue;
    (*params)["sessionKey"] = key;
    return ToPartition(home, ByKeyRequest(request), json::serialize(*params),
                       options_.tool_timeout, options_.retry_for);
  }
  return at_home;
}

}  // namespace statewatch::server
