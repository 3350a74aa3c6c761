// RequestLedger: `X-Request-Id` deduplication of the daemon's mutating requests
// (docs/request-ids.md). Api::Dispatch runs every POST, PUT and DELETE
// route's handler through Run.
//
// A request with `X-Request-Id: <id>` (1 to 128 printable ASCII characters; anything else is
// 400 invalid_argument naming the header) is applied at most once while its record lives
// (15 minutes of the engine clock):
//   - first time: the handler runs with the request's seal armed (include/statewatch/
//     request_ids.h), so the record is committed in the same group as the first effect —
//     with the answer, when the handler rendered it there (AnswerInGroup: events, drains;
//     AnswerFilledInGroup: run replies and ends); otherwise the answer is added to the
//     record in a group of its own;
//   - again, same method, target, body and caller headers: the first answer, status and
//     body, with `X-Statewatch-Replayed: true`; nothing is applied;
//   - again with another request: 422 request_id_reused, nothing applied;
//   - again while the first is still running here: 409 request_in_progress (Retry-After: 1);
//   - again after the first was applied but its answer lost (the daemon stopped between the
//     two writes; never for an answer written in the effect's group): 409
//     request_answer_lost, nothing applied.
// Only requests that applied something through a commit group (their seal was written) keep
// a record: a request that changed nothing — a refusal (400, 404, 503 …), a read through POST
// (versions), or an operation outside the commit groups (backup, rebuild, the test clock) —
// is run again when it comes again.
// Expired records are removed by Run itself, at most once a minute of the engine clock.
//
// Thread-safe.
#ifndef STATEWATCH_SERVER_REQUEST_LEDGER_H_
#define STATEWATCH_SERVER_REQUEST_LEDGER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/api.h"
#include "statewatch/request_ids.h"

namespace statewatch::server {

// The answer as a record keeps it.
RequestAnswer RecordedAnswer(const ApiResponse& answer);

// Has the calling thread's request seal, if one is armed, write the answer `render` makes of
// the engine call's result in the effect's own commit group, so that the answer is durable
// with the effect (a retry after a crash or a failover gets it, and no second group is
// written). For a handler whose answer is `render` of one engine call's result: T is that
// result, std::vector<RecordResult> (RecordMany), std::vector<Notice> (Drain) or bool
// (Watch); call it just before the engine call, and answer with `render` of the result.
template <typename T>
void AnswerInGroup(ApiResponse (*render)(const T&)) {
  RequestSeal* seal = ArmedRequestSeal();
  if (seal == nullptr) return;
  seal->AnswerWith([render](const SealedOutcome& outcome) -> std::optional<RequestAnswer> {
    const T* const* result = std::get_if<const T*>(&outcome);
    if (result == nullptr) return std::nullopt;
    return RecordedAnswer(render(**result));
  });
}

// The same for a handler that makes one engine write (one command or one side-table group)
// and answers `answer` whenever it succeeds and changed something (a deletion, a reset, a
// transcript append, an acknowledgement of a delivery). A side table's write that found
// nothing to change says so (GroupWrite::ChangedNothing); the handler's other answer (a 404)
// is then written after it, as for any answer not rendered with the group.
void AnswerInGroupOnSuccess(const ApiResponse& answer);

// The same with an answer made on the commit leader once the write has built (what
// AnswerStoredInGroup builds on).
void AnswerInGroupOnSuccess(std::function<ApiResponse()> render);

// For a handler whose one write fills in what its answer shows (the merged session record,
// the webhook as stored, the upstream link with its marker): runs `write(T* stored)`, which
// fills `*stored` inside its commit group, with the answer `render(*stored)` written in that
// group; returns that answer, or the write's error. `*stored` lives in a std::shared_ptr the
// seal's renderer keeps, since the seal may outlive the handler's frame.
template <typename T, typename Write, typename Render>
Result<ApiResponse> AnswerStoredInGroup(Write&& write, Render render) {
  auto stored = std::make_shared<T>();
  AnswerInGroupOnSuccess([stored, render] { return render(*stored); });
  if (Status s = write(stored.get()); !s.ok()) return s;
  return render(*stored);
}

// For a handler whose answer the layer below makes inside the group that applies it (a run's
// reply or end: the update with the ids its deliveries got, known only there) or before its
// last write (a session tool's result): returns the slot that layer fills — on the commit
// leader, or on the request's thread before that write — and the seal writes
// `render(**slot)` into the group of the first write after it is filled; nullptr when no
// seal is armed (nothing to fill). A group that carries the seal before the slot is filled
// writes the record without the answer; a slot never filled leaves the answer to be written
// after the handler answers.
template <typename T, typename Render>
std::shared_ptr<std::optional<T>> AnswerFilledInGroup(Render render) {
  RequestSeal* seal = ArmedRequestSeal();
  if (seal == nullptr) return nullptr;
  auto slot = std::make_shared<std::optional<T>>();
  seal->AnswerWith([slot, render](const SealedOutcome&) -> std::optional<RequestAnswer> {
    if (!slot->has_value()) return std::nullopt;
    return RecordedAnswer(render(**slot));
  });
  return slot;
}

class RequestLedger {
 public:
  using Handler = std::function<ApiResponse(const ApiRequest&)>;

  // Without a table (an Engine not made by Engine::Open) Run only validates the header.
  RequestLedger(Engine& engine, int64_t ttl_ms = RequestIds::kDefaultTtlMs);

  // Runs `handle` for `request` at most once per request id (see above). `request.header`
  // must read X-Request-Id; a request without the header is handled as it is.
  ApiResponse Run(const ApiRequest& request, const Handler& handle);

  // Removes the expired records now; how many went.
  Result<uint64_t> Sweep();

  // The request's digest: method, target, X-Agent-Id, X-Session-Key and body.
  static std::string Digest(const ApiRequest& request);

 private:
  // Records the answer of a finished request (if it is to be kept) and ends its in-flight
  // mark.
  void Finish(const std::string& id, const std::shared_ptr<RequestSeal>& seal,
              const ApiResponse& answer);
  void MaybeSweep(int64_t now);

  Engine& engine_;
  std::unique_ptr<RequestIds> table_;
  const int64_t ttl_ms_;

  std::mutex mu_;
  // Requests running here: id -> when they started (engine clock). An entry older than the
  // window (a parked answer whose client left) no longer blocks its id.
  std::unordered_map<std::string, int64_t> in_flight_;
  int64_t next_sweep_ms_ = 0;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_REQUEST_LEDGER_H_
