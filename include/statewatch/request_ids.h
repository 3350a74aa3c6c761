// statewatch::RequestIds — the durable records behind the daemon's `X-Request-Id`
// deduplication (docs/request-ids.md): for each request id the digest
// of the request that used it first and, once known, the answer it got. A retry of the same
// request within the window (15 minutes) is answered from the record and applied at most
// once; the same id on another request is refused.
//
// The records live in the engine's `requests` column family under 'Q' <id> and are written
// through the commit groups (engine/group_write.h): replayed after a crash, carried in a
// cluster partition's replicated log, so a standby that takes over knows them.
//
// The record is written with the operation's own effect:
//   1. the seal. While a RequestSeal is armed on a thread (ArmRequestSeal), every engine
//      write command the thread makes carries it; the commit leader writes the record
//      {digest, created_at, answer} in the group of the first such command that builds
//      (engine_impl.h's Command, engine/write_path.cc's RunGroup). The effect and the record
//      are one atomic write: there is no moment where the effect is durable and the record
//      is not, so a retry can never apply the request again.
//   2. the answer. A handler whose answer is made from one engine call's result (events,
//      drains) gives the seal a renderer first (AnswerWith); the leader renders the answer
//      from the command's result and writes it in the same record, so a retry always gets
//      the first answer. Otherwise, once the handler has answered, PutAnswer adds the answer
//      in a group of its own: a crash (or a failover) between the two loses the answer, not
//      the record, and a retry learns that the request was applied and its answer is gone.
//
// REQUIRES: the engine was made by Engine::Open and outlives the handle. Thread-safe.
#ifndef STATEWATCH_REQUEST_IDS_H_
#define STATEWATCH_REQUEST_IDS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/status.h"

namespace statewatch {

namespace engine {
class SideTableHost;
}  // namespace engine

struct RequestRecord {
  std::string digest;         // of the request that used the id first (opaque bytes)
  int64_t created_at_ms = 0;  // the engine clock when the first write (or the answer) landed
  bool answered = false;      // false: sealed with the effect, answer not (yet) written
  int status = 0;             // the answer, when answered
  std::string content_type;
  std::string body;
};

// The stored record: a FlatBuffer (schema/request_ids.fbs).
std::string EncodeRequestRecord(const RequestRecord& r);
// Corruption for bytes that are not a record (the format of earlier builds is still read).
Result<RequestRecord> DecodeRequestRecord(std::string_view bytes);

// Whether `id` is a valid X-Request-Id: 1 to 128 printable ASCII characters (0x20..0x7E).
bool IsValidRequestId(std::string_view id);

// A fresh X-Request-Id: 32 random hex digits (the CLI's for each mutating request; a node's
// for a drain a client sent without one).
std::string NewRequestId();

// What a request answered, as the record keeps it.
struct RequestAnswer {
  int status = 0;
  std::string content_type;
  std::string body;
};

// The result of the engine command a seal rides on, as the commit leader has it once the
// command has built (before the group is durable): the events' results of Record/RecordMany,
// the notices of Drain, whether a Watch holds its cursor, what a WatchMany registered, what an
// Unwatch removed, whether
// a side table's write changed anything (GroupWrite::ChangedNothing); monostate for the other
// commands (acks, resets, deletions: their result is their success).
using SealedOutcome =
    std::variant<std::monostate, const std::vector<RecordResult>*, const std::vector<Notice>*,
                 const bool*, const WatchManyResult*, const UnwatchResult*>;

// Renders a request's answer from the outcome of its engine command, on the commit leader's
// thread; nullopt when this outcome is not one it renders (a later command of the request
// may carry the answer; else it is written after the handler answers, in a group of its own).
using AnswerRenderer = std::function<std::optional<RequestAnswer>(const SealedOutcome&)>;

// The seal of one request: what the commit leader writes with the request's first effect.
// Shared between the request's thread and the leader that writes it.
class RequestSeal {
 public:
  RequestSeal(std::string id, std::string digest)
      : id_(std::move(id)), digest_(std::move(digest)) {}
  const std::string& id() const { return id_; }
  const std::string& digest() const { return digest_; }
  // Whether a commit group wrote the record (with the effect of the command it rode on).
  bool sealed() const { return sealed_at_ms_.load(std::memory_order_acquire) != 0; }
  int64_t sealed_at_ms() const { return sealed_at_ms_.load(std::memory_order_acquire); }

  // Before the engine call, on the request's thread: the answer is rendered from the
  // command's outcome and written in the effect's group. When the group that wrote the
  // record did not render it (nullopt), each later command of the request offers its own
  // outcome, and the first one rendered is written, in that command's group, into the
  // record (its time kept): an operation of several writes answers in its last. The record
  // keeps what `render` returns, and the request's answer must be the same (RequestLedger
  // writes the real one over it if not).
  void AnswerWith(AnswerRenderer render) {
    if (!answers_held_) render_ = std::move(render);
  }
  // While held, AnswerWith is ignored: a handler that dispatches another route on its own
  // thread (the MCP endpoint's tool calls) lets that route's writes carry the seal, but that
  // route's answer is not the request's. On the request's thread, around the inner call.
  void HoldAnswers(bool held) { answers_held_ = held; }
  bool answers_held() const { return answers_held_; }
  // The answer written with the seal, or nullptr. Read once the engine call has returned.
  const RequestAnswer* answer_in_group() const {
    return answer_in_group_ ? &*answer_in_group_ : nullptr;
  }

 private:
  friend struct RequestSealAccess;
  std::string id_, digest_;
  std::atomic<int64_t> sealed_at_ms_{0};
  AnswerRenderer render_;  // set before the engine call; run by the leader
  bool answers_held_ = false;
  std::optional<RequestAnswer> answer_in_group_;  // set by the leader before the call returns
};

// The seal armed on the calling thread, or nullptr (a request without X-Request-Id).
RequestSeal* ArmedRequestSeal();

// Arms the calling thread with `seal` for its lifetime (nested arming is not supported: the
// inner one replaces the outer until it ends). Commands made on other threads never carry it.
class ArmRequestSeal {
 public:
  explicit ArmRequestSeal(std::shared_ptr<RequestSeal> seal);
  ~ArmRequestSeal();
  ArmRequestSeal(const ArmRequestSeal&) = delete;
  ArmRequestSeal& operator=(const ArmRequestSeal&) = delete;

 private:
  std::shared_ptr<RequestSeal> previous_;
};

class RequestIds {
 public:
  // How long a record answers retries (engine clock).
  static constexpr int64_t kDefaultTtlMs = 15 * 60 * 1000;

  // REQUIRES: as above. Aborts with a message for an Engine not made by Engine::Open (as
  // every side table does: engine::SideTableHostOf).
  explicit RequestIds(Engine& engine);

  // The record of `id`, whatever its age (the caller compares created_at_ms with its window).
  Result<std::optional<RequestRecord>> Get(std::string_view id) const;
  // Writes `r` (answered) as the record of `id`, in a group of its own; keeps the created_at
  // of a sealed record. Must not run while a seal is armed on this thread.
  Status PutAnswer(std::string_view id, RequestRecord r);
  // Removes every record created before `cutoff_ms`; returns how many went. Reads the
  // records outside any commit group (writers do not wait for the scan) and deletes them in
  // groups of at most `group_limit`; a record rewritten since the scan read it is kept.
  Result<uint64_t> RemoveCreatedBefore(int64_t cutoff_ms, std::size_t group_limit = 1000);
  // How many records there are, expired or not (tests, operators).
  Result<std::size_t> Count() const;

 private:
  engine::SideTableHost* host_;
};

}  // namespace statewatch

#endif  // STATEWATCH_REQUEST_IDS_H_
