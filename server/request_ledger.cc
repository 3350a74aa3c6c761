// RequestLedger (server/request_ledger.h).
#include "server/request_ledger.h"

#include <spdlog/spdlog.h>

#include "base/sha256.h"

namespace statewatch::server {

namespace {

constexpr int64_t kSweepEveryMs = 60 * 1000;
constexpr const char* kHeader = "X-Request-Id";

ApiResponse Replay(const RequestRecord& r) {
  ApiResponse a;
  a.status = r.status;
  a.body = r.body;
  a.content_type = r.content_type == "application/json" ? "application/json" : "text/plain";
  a.headers.emplace_back("X-Statewatch-Replayed", "true");
  return a;
}

// An id as it may be quoted in a message.
std::string Printable(std::string_view id) {
  std::string out;
  for (char c : id.substr(0, 64)) {
    out.push_back(c >= 0x20 && c <= 0x7e ? c : '?');
  }
  return out;
}

}  // namespace

RequestAnswer RecordedAnswer(const ApiResponse& answer) {
  return RequestAnswer{answer.status,
                       answer.content_type != nullptr ? answer.content_type : "application/json",
                       answer.body};
}

void AnswerInGroupOnSuccess(const ApiResponse& answer) {
  AnswerInGroupOnSuccess([kept = answer] { return kept; });
}

void AnswerInGroupOnSuccess(std::function<ApiResponse()> render) {
  RequestSeal* seal = ArmedRequestSeal();
  if (seal == nullptr) return;
  seal->AnswerWith([render = std::move(render)](const SealedOutcome& outcome) {
    // A side table's write that found nothing to change (an unknown id): the handler
    // answers otherwise (404), and the ledger writes that answer after it.
    if (const bool* const* changed = std::get_if<const bool*>(&outcome);
        changed != nullptr && !**changed) {
      return std::optional<RequestAnswer>();
    }
    return std::optional<RequestAnswer>(RecordedAnswer(render()));
  });
}

RequestLedger::RequestLedger(Engine& engine, int64_t ttl_ms)
    : engine_(engine), table_(std::make_unique<RequestIds>(engine)), ttl_ms_(ttl_ms) {}

std::string RequestLedger::Digest(const ApiRequest& request) {
  std::string text;
  auto add = [&](std::string_view part) {
    text.append(std::to_string(part.size()));
    text.push_back(':');
    text.append(part);
  };
  add(request.method);
  add(request.target);
  add(request.agent_id);
  add(request.session_key);
  add(request.body);
  const sha256::Digest d = sha256::Of(text);
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

ApiResponse RequestLedger::Run(const ApiRequest& request, const Handler& handle) {
  std::string_view raw = request.header ? request.header(kHeader) : std::string_view();
  if (raw.empty()) return handle(request);
  if (!IsValidRequestId(raw)) {
    return Api::Error(400, "invalid_argument",
                      "X-Request-Id must be 1 to 128 printable ASCII characters (got " +
                          std::to_string(raw.size()) + " bytes: \"" + Printable(raw) + "\")");
  }
  const std::string id(raw);
  const std::string digest = Digest(request);
  const int64_t now = engine_.clock().NowMs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = in_flight_.try_emplace(id, now);
    if (!fresh) {
      if (now - it->second < ttl_ms_) {
        ApiResponse busy = Api::Error(409, "request_in_progress",
                                      "a request with X-Request-Id \"" + id +
                                          "\" is still running; ask again for its answer");
        busy.headers.emplace_back("Retry-After", "1");
        return busy;
      }
      it->second = now;  // a parked request whose client left long ago
    }
  }
  auto release = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(id);
  };
  auto record = table_->Get(id);
  if (!record.ok()) {
    release();
    return Api::Error(
        503, "unavailable",
        "cannot read the record of X-Request-Id \"" + id + "\": " + record.status().message());
  }
  if (record->has_value() && now - (*record)->created_at_ms < ttl_ms_) {
    const RequestRecord& r = **record;
    release();
    if (r.digest != digest) {
      return Api::Error(422, "request_id_reused",
                        "X-Request-Id \"" + id +
                            "\" was used by another request (method, path, body or "
                            "caller differ); use a new id for a new request");
    }
    if (!r.answered) {
      return Api::Error(409, "request_answer_lost",
                        "the request with X-Request-Id \"" + id +
                            "\" was applied, but its answer was lost when the daemon stopped; "
                            "it is not applied again (read the state to see its effect)");
    }
    return Replay(r);
  }
  // First time (or the record expired): run it with the seal armed.
  auto seal = std::make_shared<RequestSeal>(id, digest);
  ApiRequest inner = request;
  if (request.respond) {  // a parked answer is recorded when it comes
    inner.respond = [this, id, seal, respond = request.respond](ApiResponse a) {
      Finish(id, seal, a);
      respond(std::move(a));
    };
  }
  ApiResponse answer;
  {
    ArmRequestSeal armed(seal);
    answer = handle(inner);
  }
  if (!answer.parked) Finish(id, seal, answer);
  MaybeSweep(now);
  return answer;
}

void RequestLedger::Finish(const std::string& id, const std::shared_ptr<RequestSeal>& seal,
                           const ApiResponse& answer) {
  ArmRequestSeal disarmed(nullptr);  // a parked answer may come while the handler still runs
  // Only a request that applied something through a commit group keeps a record: a read
  // through POST (versions) costs no write and is answered afresh, a refusal that changed
  // nothing may come again under the same id.
  if (seal->sealed() && answer.events == nullptr) {
    RequestAnswer given = RecordedAnswer(answer);
    const RequestAnswer* kept = seal->answer_in_group();
    if (kept != nullptr && kept->status == given.status &&
        kept->content_type == given.content_type && kept->body == given.body) {
      std::lock_guard<std::mutex> lock(mu_);  // written with the effect: nothing more to write
      in_flight_.erase(id);
      return;
    }
    RequestRecord r;
    r.digest = seal->digest();
    r.created_at_ms = seal->sealed_at_ms();
    r.status = given.status;
    r.content_type = std::move(given.content_type);
    r.body = std::move(given.body);
    Status st = table_->PutAnswer(id, std::move(r));
    if (!st.ok()) {
      spdlog::warn("event=request_id_answer_not_kept id=\"{}\" error=\"{}\"", id, st.message());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(id);
}

void RequestLedger::MaybeSweep(int64_t now) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (now < next_sweep_ms_) return;
    next_sweep_ms_ = now + kSweepEveryMs;
  }
  auto swept = Sweep();
  if (!swept.ok()) {
    spdlog::warn("event=request_id_sweep_failed error=\"{}\"", swept.status().message());
  }
}

Result<uint64_t> RequestLedger::Sweep() {
  return table_->RemoveCreatedBefore(engine_.clock().NowMs() - ttl_ms_);
}

}  // namespace statewatch::server
