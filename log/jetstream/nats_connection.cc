#include "log/jetstream/nats_connection.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace statewatch::log {
namespace {

std::vector<std::string> SplitServers(const std::string& servers) {
  std::vector<std::string> out;
  std::stringstream in(servers);
  std::string url;
  while (std::getline(in, url, ',')) {
    if (!url.empty()) out.push_back(url);
  }
  return out;
}

// natsOptions is only needed while connecting.
struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};
using OptionsPtr = std::unique_ptr<natsOptions, OptionsDeleter>;

Result<OptionsPtr> BuildOptions(const NatsConnectionOptions& options,
                                const std::vector<std::string>& urls) {
  natsOptions* raw = nullptr;
  natsStatus s = natsOptions_Create(&raw);
  if (s != NATS_OK) return NatsStatus("create NATS options", s, jsErrCode(0));
  OptionsPtr opts(raw);
  std::vector<const char*> ptrs;
  for (const std::string& u : urls) ptrs.push_back(u.c_str());
  s = natsOptions_SetServers(opts.get(), ptrs.data(), static_cast<int>(ptrs.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts.get(), options.name.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts.get(), options.connect_timeout_ms);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts.get(), options.max_reconnect);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts.get(), options.reconnect_wait_ms);
  if (s != NATS_OK) {
    return NatsStatus("NATS options for \"" + options.servers + "\"", s, jsErrCode(0));
  }
  return opts;
}

}  // namespace

Result<std::shared_ptr<NatsConnection>> NatsConnection::Connect(
    const NatsConnectionOptions& options) {
  std::vector<std::string> urls = SplitServers(options.servers);
  if (urls.empty()) {
    return Status::InvalidArgument("NATS server list is empty (got \"" + options.servers + "\")");
  }
  Result<OptionsPtr> opts = BuildOptions(options, urls);
  if (!opts.ok()) return opts.status();
  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_Connect(&nc, opts->get());
  if (s != NATS_OK) return NatsStatus("connect to " + options.servers, s, jsErrCode(0));
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = options.request_timeout_ms;
  jsCtx* js = nullptr;
  s = natsConnection_JetStream(&js, nc, &jo);
  if (s != NATS_OK) {
    natsConnection_Destroy(nc);
    return NatsStatus("JetStream context on " + options.servers, s, jsErrCode(0));
  }
  return std::shared_ptr<NatsConnection>(new NatsConnection(nc, js, options.request_timeout_ms));
}

NatsConnection::~NatsConnection() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);
}

natsStatus NewNatsMessage(const std::string& subject, std::string_view data,
                          std::span<const NatsHeader> headers, NatsMsgPtr* out) {
  natsMsg* raw = nullptr;
  natsStatus s =
      natsMsg_Create(&raw, subject.c_str(), nullptr, data.data(), static_cast<int>(data.size()));
  NatsMsgPtr msg(raw);
  for (const NatsHeader& h : headers) {
    if (s == NATS_OK) s = natsMsgHeader_Set(msg.get(), h.name, h.value.c_str());
  }
  if (s == NATS_OK) *out = std::move(msg);
  return s;
}

std::string NatsPayload(natsMsg* msg) {
  return std::string(natsMsg_GetData(msg), static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
}

Result<uint64_t> NatsConnection::PublishAcked(natsMsg* msg, std::string_view what) const {
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = request_timeout_ms_;
  jsPubAck* ack = nullptr;
  jsErrCode je = jsErrCode(0);
  natsStatus s = js_PublishMsg(&ack, js_, msg, &po, &je);
  if (s != NATS_OK) return NatsStatus(what, s, je);
  const uint64_t seq = ack->Sequence;
  jsPubAck_Destroy(ack);
  return seq;
}

namespace {

// Calls `call` (a nats.c call answering a stream's info) until it succeeds or `retry` says its
// answer is not worth another try: up to policy.max_attempts in all, policy.before_retry
// between; the info of an answer asked again is destroyed.
template <typename Call, typename Retry>
natsStatus StreamCallRetried(jsStreamInfo** info, jsErrCode* js_code, const RetryPolicy& policy,
                             Call call, Retry retry) {
  const int attempts = std::max(policy.max_attempts, 1);
  natsStatus s = NATS_OK;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0 && policy.before_retry) policy.before_retry(attempt);
    *info = nullptr;
    *js_code = jsErrCode(0);
    s = call();
    if (s == NATS_OK || !retry(*js_code)) return s;
    if (*info != nullptr) {
      jsStreamInfo_Destroy(*info);
      *info = nullptr;
    }
  }
  return s;
}

}  // namespace

natsStatus GetStreamInfoRetried(jsStreamInfo** info, jsCtx* js, const std::string& stream,
                                const RetryPolicy& policy, jsErrCode* js_code) {
  return StreamCallRetried(
      info, js_code, policy,
      [&] { return js_GetStreamInfo(info, js, stream.c_str(), nullptr, js_code); },
      [](jsErrCode code) { return code != JSStreamNotFoundErr; });
}

natsStatus AddStreamPlaced(jsStreamInfo** info, jsCtx* js, jsStreamConfig* config,
                           const RetryPolicy& policy, jsErrCode* js_code) {
  return StreamCallRetried(
      info, js_code, policy, [&] { return js_AddStream(info, js, config, nullptr, js_code); },
      [](jsErrCode code) { return code == JSClusterNoPeersErr; });
}

Status NatsStatus(std::string_view what, natsStatus status, jsErrCode js_code) {
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  return NatsStatusWithText(what, status, js_code, detail != nullptr ? detail : "");
}

Status NatsStatusWithText(std::string_view what, natsStatus status, jsErrCode js_code,
                          std::string_view description) {
  std::string message(what);
  message += ": ";
  message += natsStatus_GetText(status);
  if (!description.empty()) message += " (" + std::string(description) + ")";
  const int code = static_cast<int>(js_code);
  if (code != 0) message += " [JetStream error " + std::to_string(code) + "]";
  switch (code) {
    case kJsWrongLastSequence:
    case kJsWrongLastMsgId:
      return Status::FailedPrecondition(message);
    case 10037:  // no message found
    case 10059:  // stream not found
      return Status::NotFound(message);
    case 10054:  // message larger than the stream allows
      return Status::InvalidArgument(message);
    case 10023:  // insufficient resources
    case 10028:  // memory resources exceeded
    case 10047:  // storage resources exceeded
      return Status::NoSpace(message);
    default:
      break;
  }
  // Discard=New refusals carry no dedicated code in 2.9: "maximum bytes exceeded",
  // "maximum messages exceeded".
  if (description.find("maximum") != std::string_view::npos &&
      description.find("exceeded") != std::string_view::npos) {
    return Status::NoSpace(message);
  }
  return Status::IOError(message);
}

}  // namespace statewatch::log
