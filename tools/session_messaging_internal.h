// Internal to the SessionMessaging implementation (tools/session_messaging*.cc), split by
// concern the way RocksDB splits db_impl_*.cc:
//   session_messaging.cc            options, lifecycle, the plumbing every tool shares, CallTool
//   session_messaging_send.cc       sessions_send: the send state machine, replies, timeouts
//   session_messaging_spawn.cc      sessions_spawn, run ends and announcements, sessions_yield
//   session_messaging_spawn_remote.cc  sessions_spawn into another partition (session mail)
//   session_messaging_subagents.cc  subagents list | steer | kill
//   session_messaging_json.cc       the gateway's JSON: deliveries, run updates, bodies
// Nothing here is part of the tools API.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_TOOLS_SESSION_MESSAGING_INTERNAL_H_
#define STATEWATCH_TOOLS_SESSION_MESSAGING_INTERNAL_H_

#include <boost/json.hpp>
#include <exception>
#include <string>
#include <string_view>

#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"
#include "statewatch/watcher_directory.h"
#include "tools/session_messaging.h"

namespace statewatch::tools::messaging_internal {

// The steps of a spawn run's session mail (the key is `<runId>:<step>`). The forwarder sends
// the rows of one run in key order, each after the one before was acknowledged
// (tools/session_mail_forwarder.h), so these sort in the order they must arrive: the child
// before any steer, a steer before the run's end, the end before a kill's stop.
inline constexpr char kMailStepSpawn[] = "1spawn";
inline constexpr char kMailStepSteer[] = "2steer";  // + ":<ms, 16 digits>:<uuid>"
inline constexpr char kMailStepEnd[] = "3end";
inline constexpr char kMailStepStop[] = "4stop";

// Tool entry points are the edge: Boost.JSON throws (allocation, .at()) become a Status.
template <typename F>
auto Guarded(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::IOError(std::string(what) + " failed: " + e.what());
  }
}

// WatcherDirectory::Register with the thread's X-Request-Id seal set aside: a send or a spawn
// across partitions lists the target's partition first, in a group of its own, and its
// request's record belongs with the mail that follows — the request's effect.
Result<WatcherListing> UnsealedRegister(Engine& engine, const std::string& watcher,
                                        uint32_t partition);
// The stored run `run_id`; NotFound "Unknown runId: <run_id>" when there is none.
Result<RunRecord> KnownRun(const Engine& engine, const std::string& run_id);
// A random RFC 4122 version-4 UUID (run ids, child session keys).
std::string NewUuidV4();
// `text` as a JSON object; an empty object when it is not one.
boost::json::object ParseObject(std::string_view text);
// Code points in valid UTF-8 `s`.
std::size_t CountChars(std::string_view s);
// The required string parameter `name` of a tool call, at most kMaxMessageBytes long (the
// sessions_send message, the sessions_spawn task). InvalidArgument naming `name` when it is
// missing, not a string, or too large.
Result<std::string> RequiredTextParam(const boost::json::object& params, const char* name);
// A reply that ends the ping-pong loop: exactly REPLY_SKIP (trimmed) or nothing.
bool StopsLoop(std::string_view reply);
// `traceparent`: the run's W3C trace context (RunRecord::traceparent), "" if none.
Delivery MakeDelivery(const SessionName& to, std::string type, const std::string& run_id,
                      std::string text, const std::string& source_key, std::string source_tool,
                      std::string traceparent = {});
// The caller's traceparent as version 00, or "" when it is absent or invalid (W3C: a
// receiver ignores a traceparent it cannot parse).
std::string CallerTrace(std::string_view traceparent);
// The run id of a requester's yield record (persisted: DO NOT CHANGE).
std::string YieldRunId(const SessionName& requester);
// A child as announcements and lists name it: its label in quotes, else its key.
std::string ChildName(const RunRecord& run);
const char* OutcomeWords(std::string_view status);
// The announcement of a finished child run.
std::string AnnounceText(const RunRecord& run);
// The options of a spawn run (runs written before RunRecord::spawn kept them as JSON in
// extra_json: {"runtime", "model"?, "thinking"?, "thread", "sandbox", "context", "depth"}).
SpawnOptions SpawnOptionsOf(const RunRecord& run);
// The sessions_send result a send run stands for.
boost::json::object SendResultJson(const RunRecord& run, bool watch, bool watched);

}  // namespace statewatch::tools::messaging_internal

#endif  // STATEWATCH_TOOLS_SESSION_MESSAGING_INTERNAL_H_
