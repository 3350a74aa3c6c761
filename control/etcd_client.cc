// EtcdClient on the v3 JSON gateway: the JSON shapes of etcd 3.4's grpc-gateway (keys and
// values base64, int64 as strings, absent fields meaning zero) and the member fail-over.
#include "control/etcd_client.h"

#include <boost/json.hpp>
#include <charconv>
#include <optional>
#include <spdlog/spdlog.h>

#include "net/http_client.h"

namespace statewatch::control {
namespace json = boost::json;

namespace {

constexpr char kUnreachablePrefix[] = "etcd: no member answered:";

// --- base64 (RFC 4648, with padding), as protobuf's JSON mapping writes `bytes` -----------

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[n >> 18];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t n = uint8_t(in[i]) << 16;
    out += kAlphabet[n >> 18];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[n >> 18];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

int Base64Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // '-' and '_': the URL-safe alphabet, also accepted
  if (c == '/' || c == '_') return 63;
  return -1;
}

// Padding is optional; anything else outside the alphabet is refused.
Result<std::string> Base64Decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) {
    return Status::IOError("etcd answer: base64 of impossible length " + std::to_string(in.size()));
  }
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int d = Base64Digit(c);
    if (d < 0) return Status::IOError(std::string("etcd answer: bad base64 character '") + c + "'");
    acc = (acc << 6) | uint32_t(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xff);
    }
  }
  return out;
}

// --- reading the gateway's JSON ------------------------------------------------------------

// An int64 field: a JSON string (protobuf's mapping) or a number; absent is 0.
Result<int64_t> Int(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return int64_t{0};
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= uint64_t(INT64_MAX)) return int64_t(v->as_uint64());
  if (v->is_string()) {
    const json::string& s = v->as_string();
    int64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (!s.empty() && ec == std::errc() && end == s.data() + s.size()) return n;
  }
  return Status::IOError("etcd answer: \"" + std::string(name) + "\" is not an integer (" +
                         json::serialize(*v) + ")");
}

// A bytes field (base64); absent is empty.
Result<std::string> Bytes(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) {
    return Status::IOError("etcd answer: \"" + std::string(name) + "\" is not a string");
  }
  return Base64Decode(v->as_string());
}

// An object field; absent is an empty object.
const json::object& Object(const json::object& o, std::string_view name) {
  static const json::object kEmpty;
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_object() ? v->as_object() : kEmpty;
}

Result<json::object> ParseObject(const std::string& body) {
  std::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) {
    return Status::IOError("etcd answer is not a JSON object: " +
                           (ec ? ec.message() : body.substr(0, 200)));
  }
  return std::move(v.as_object());
}

Result<int64_t> HeaderRevision(const json::object& answer) {
  return Int(Object(answer, "header"), "revision");
}

// What went wrong according to an error answer: the unary form {"error","message","code"}
// or the streaming form {"error":{"grpc_code","http_code","message"}}.
struct EtcdError {
  std::string message;
  int grpc_code = 0;
  int http_code = 0;  // the streaming form's; 0 when not given
};

std::optional<EtcdError> ErrorOf(const json::object& o) {
  const json::value* e = o.if_contains("error");
  if (e == nullptr) return std::nullopt;
  EtcdError out;
  const json::object* fields = &o;
  if (e->is_object()) {
    fields = &e->as_object();
  } else if (e->is_string()) {
    out.message = std::string(e->as_string());
  }
  if (const json::value* m = fields->if_contains("message"); m && m->is_string() && !m->as_string().empty()) {
    out.message = std::string(m->as_string());
  }
  if (auto c = Int(*fields, fields == &o ? "code" : "grpc_code"); c.ok()) out.grpc_code = int(*c);
  if (auto h = Int(*fields, "http_code"); h.ok()) out.http_code = int(*h);
  if (out.message.empty()) out.message = json::serialize(*e);
  return out;
}

constexpr int kGrpcUnavailable = 14;

Result<KeyValue> ReadKeyValue(const json::object& o) {
  KeyValue kv;
  auto key = Bytes(o, "key");
  if (!key.ok()) return key.status();
  auto value = Bytes(o, "value");
  if (!value.ok()) return value.status();
  kv.key = std::move(*key);
  kv.value = std::move(*value);
  for (auto [name, field] : {std::pair{"create_revision", &kv.create_revision},
                             std::pair{"mod_revision", &kv.mod_revision},
                             std::pair{"version", &kv.version}, std::pair{"lease", &kv.lease}}) {
    auto n = Int(o, name);
    if (!n.ok()) return n.status();
    *field = *n;
  }
  return kv;
}

Result<std::vector<KeyValue>> ReadKvs(const json::object& answer) {
  std::vector<KeyValue> kvs;
  const json::value* list = answer.if_contains("kvs");
  if (list == nullptr || list->is_null()) return kvs;
  if (!list->is_array()) return Status::IOError("etcd answer: \"kvs\" is not an array");
  for (const json::value& item : list->as_array()) {
    if (!item.is_object()) return Status::IOError("etcd answer: a \"kvs\" entry is not an object");
    auto kv = ReadKeyValue(item.as_object());
    if (!kv.ok()) return kv.status();
    kvs.push_back(std::move(*kv));
  }
  return kvs;
}

// The end of the range holding every key that starts with `prefix` (etcdctl --prefix):
// the prefix with its last byte below 0xff incremented and what follows dropped; "\0" (to
// the end of the keyspace) when there is no such byte.
std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (uint8_t(end.back()) < 0xff) {
      end.back() = char(uint8_t(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string Id(int64_t n) { return std::to_string(n); }

json::object RequestOp(const TxnOp& op) {
  if (op.kind == TxnOp::Kind::kDelete) {
    return {{"request_delete_range", json::object{{"key", Base64Encode(op.key)}}}};
  }
  json::object put{{"key", Base64Encode(op.key)}, {"value", Base64Encode(op.value)}};
  if (op.lease != 0) put["lease"] = Id(op.lease);
  return {{"request_put", std::move(put)}};
}

json::object CompareJson(const Compare& c) {
  json::object o{{"key", Base64Encode(c.key)}, {"result", "EQUAL"}};
  switch (c.target) {
    case Compare::Target::kCreateRevision:
      o["target"] = "CREATE";
      o["create_revision"] = Id(c.revision);
      break;
    case Compare::Target::kModRevision:
      o["target"] = "MOD";
      o["mod_revision"] = Id(c.revision);
      break;
    case Compare::Target::kValue:
      o["target"] = "VALUE";
      o["value"] = Base64Encode(c.value);
      break;
    case Compare::Target::kLease:
      o["target"] = "LEASE";
      o["lease"] = Id(c.lease);
      break;
  }
  return o;
}

// "http://HOST:PORT" (a trailing '/' tolerated); the reason it is not, or "".
std::string EndpointProblem(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return "not http://HOST:PORT";
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) return "has a path (give http://HOST:PORT)";
  std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return "not http://HOST:PORT";
  if (rest[0] == '[' && rest[colon - 1] != ']') return "not http://[V6]:PORT";
  std::string port = rest.substr(colon + 1);
  int n = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || n < 1 ||
      n > 65535) {
    return "port \"" + port + "\" is not 1..65535";
  }
  return "";
}

}  // namespace

Result<std::vector<std::string>> ParseEndpoints(const std::string& comma_separated) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = comma_separated.find(',', start);
    std::string entry = comma_separated.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!entry.empty() && entry.front() == ' ') entry.erase(0, 1);
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    if (entry.empty()) {
      return Status::InvalidArgument("etcd endpoints: entry " + std::to_string(out.size() + 1) +
                                     " of \"" + comma_separated + "\" is empty");
    }
    if (std::string why = EndpointProblem(entry); !why.empty()) {
      return Status::InvalidArgument("etcd endpoint \"" + entry + "\": " + why);
    }
    out.push_back(std::move(entry));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Result<std::unique_ptr<EtcdClient>> EtcdClient::Make(EtcdOptions options) {
  if (options.endpoints.empty()) return Status::InvalidArgument("etcd: no endpoint given");
  for (const std::string& url : options.endpoints) {
    if (std::string why = EndpointProblem(url); !why.empty()) {
      return Status::InvalidArgument("etcd endpoint \"" + url + "\": " + why);
    }
  }
  if (options.timeout_ms <= 0) {
    return Status::InvalidArgument("etcd: timeout_ms must be positive (got " +
                                   std::to_string(options.timeout_ms) + ")");
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(options)));
}

Result<std::string> EtcdClient::Call(const std::string& path, const std::string& body) {
  const std::vector<std::string>& urls = options_.endpoints;
  const std::size_t first = preferred_.load(std::memory_order_relaxed) % urls.size();
  std::string reasons;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    const std::size_t at = (first + i) % urls.size();
    const std::string& url = urls[at];
    auto answer = net::HttpRequest(url, "POST", path, body, /*token=*/"", options_.timeout_ms);
    std::string why;
    std::optional<EtcdError> error;
    if (!answer.ok()) {
      why = answer.status().message();
    } else {
      std::error_code ec;
      json::value v = json::parse(answer->body, ec);
      if (!ec && v.is_object()) error = ErrorOf(v.as_object());
      bool ok = answer->status >= 200 && answer->status <= 299;
      if (ok && !error) {
        preferred_.store(at, std::memory_order_relaxed);
        return std::move(answer->body);
      }
      // A member that is up but cannot serve (no leader, shutting down, overloaded) is
      // worth skipping; a refusal of the request itself would be the same on every member.
      bool unavailable = answer->status >= 500 || (error && (error->http_code >= 500 ||
                                                            error->grpc_code == kGrpcUnavailable));
      std::string what = error ? error->message : answer->body.substr(0, 200);
      if (!unavailable) {
        preferred_.store(at, std::memory_order_relaxed);
        return Status::FailedPrecondition("etcd at " + url + " (" + path + "): " + what);
      }
      why = "HTTP " + std::to_string(answer->status) + ": " + what;
    }
    spdlog::debug("etcd: {} {}: {}", url, path, why);
    reasons += (reasons.empty() ? " " : "; ") + url + ": " + why;
  }
  return Status::IOError(kUnreachablePrefix + reasons);
}

Result<int64_t> EtcdClient::Grant(int64_t ttl_seconds) {
  auto body = Call("/v3/lease/grant", json::serialize(json::object{{"TTL", Id(ttl_seconds)}}));
  if (!body.ok()) return body.status();
  auto answer = ParseObject(*body);
  if (!answer.ok()) return answer.status();
  auto id = Int(*answer, "ID");
  if (!id.ok()) return id.status();
  if (*id == 0) return Status::IOError("etcd answer to a lease grant has no ID: " + *body);
  return *id;
}

Result<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  auto body = Call("/v3/lease/keepalive", json::serialize(json::object{{"ID", Id(lease)}}));
  if (!body.ok()) return body.status();
  auto answer = ParseObject(*body);
  if (!answer.ok()) return answer.status();
  // A stream's message comes wrapped in {"result": ...}.
  auto ttl = Int(Object(*answer, "result"), "TTL");
  if (!ttl.ok()) return ttl.status();
  if (*ttl <= 0) return Status::NotFound("lease " + Id(lease) + " expired");
  return *ttl;
}

Status EtcdClient::Revoke(int64_t lease) {
  auto body = Call("/v3/lease/revoke", json::serialize(json::object{{"ID", Id(lease)}}));
  if (!body.ok()) {
    // etcd's "requested lease not found" (gRPC NotFound) is the documented NotFound.
    if (body.status().code() == Status::Code::kFailedPrecondition &&
        body.status().message().find("lease not found") != std::string::npos) {
      return Status::NotFound("lease " + Id(lease) + " is already gone (" +
                              body.status().message() + ")");
    }
    return body.status();
  }
  return Status::OK();
}

Result<int64_t> EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  json::object request{{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) request["lease"] = Id(lease);
  auto body = Call("/v3/kv/put", json::serialize(request));
  if (!body.ok()) return body.status();
  auto answer = ParseObject(*body);
  if (!answer.ok()) return answer.status();
  return HeaderRevision(*answer);
}

Result<KeyValue> EtcdClient::Get(const std::string& key) {
  auto body = Call("/v3/kv/range", json::serialize(json::object{{"key", Base64Encode(key)}}));
  if (!body.ok()) return body.status();
  auto answer = ParseObject(*body);
  if (!answer.ok()) return answer.status();
  auto kvs = ReadKvs(*answer);
  if (!kvs.ok()) return kvs.status();
  if (kvs->empty()) return Status::NotFound("etcd: no key \"" + key + "\"");
  return std::move(kvs->front());
}

Result<RangeResult> EtcdClient::Range(const std::string& prefix) {
  // An empty prefix is every key: key "\0" with range_end "\0" means "from the start".
  std::string from = prefix.empty() ? std::string(1, '\0') : prefix;
  auto body = Call("/v3/kv/range",
                   json::serialize(json::object{{"key", Base64Encode(from)},
                                                {"range_end", Base64Encode(PrefixEnd(prefix))}}));
  if (!body.ok()) return body.status();
  auto answer = ParseObject(*body);
  if (!answer.ok()) return answer.status();
  RangeResult result;
  auto kvs = ReadKvs(*answer);
  if (!kvs.ok()) return kvs.status();
  result.kvs = std::move(*kvs);
  auto revision = HeaderRevision(*answer);
  if (!revision.ok()) return revision.status();
  result.revision = *revision;
  return result;
}

Result<int64_t> EtcdClient::Delete(const std::string& key) {
  auto body = Call("/v3/kv/deleterange", json::serialize(json::object{{"key", Base64Encode(key)}}));
  if (!body.ok()) return body.status();
  auto answer = ParseObject(*body);
  if (!answer.ok()) return answer.status();
  return Int(*answer, "deleted");
}

Result<TxnResult> EtcdClient::Txn(const std::vector<Compare>& compares,
                                  const std::vector<TxnOp>& success,
                                  const std::vector<TxnOp>& failure) {
  json::array compare_list, success_list, failure_list;
  for (const Compare& c : compares) compare_list.emplace_back(CompareJson(c));
  for (const TxnOp& op : success) success_list.emplace_back(RequestOp(op));
  for (const TxnOp& op : failure) failure_list.emplace_back(RequestOp(op));
  json::object request{{"compare", std::move(compare_list)},
                       {"success", std::move(success_list)},
                       {"failure", std::move(failure_list)}};
  auto body = Call("/v3/kv/txn", json::serialize(request));
  if (!body.ok()) return body.status();
  auto answer = ParseObject(*body);
  if (!answer.ok()) return answer.status();
  TxnResult result;
  if (const json::value* s = answer->if_contains("succeeded"); s != nullptr && !s->is_null()) {
    if (!s->is_bool()) return Status::IOError("etcd answer: \"succeeded\" is not a boolean");
    result.succeeded = s->as_bool();
  }
  auto revision = HeaderRevision(*answer);
  if (!revision.ok()) return revision.status();
  result.revision = *revision;
  return result;
}

bool IsUnreachable(const Status& status) {
  return status.code() == Status::Code::kIOError &&
         status.message().rfind(kUnreachablePrefix, 0) == 0;
}

}  // namespace statewatch::control
