// The daemon's configuration file: `statewatch serve --config FILE` reads it at start and
// again on SIGHUP; `statewatch config check FILE` validates it and prints the effective
// policy. JSON (comments and trailing commas allowed), with the reference gateway's key
// names, so that a refusal naming a key is literally true of the file:
//
//   {
//     "tools": {
//       "profile": "coding",                       // minimal | coding | messaging | full
//       "alsoAllow": ["sessions_spawn"],           // tool names or "group:sessions"
//       "deny": ["sessions_send"],
//       "sessions": {"visibility": "tree"},        // self | tree | agent | all
//       "agentToAgent": {"enabled": true, "allow": ["main", "ops*"]},
//       "subagents": {"tools": {"allow": ["session_status"], "deny": []}}
//     },
//     "agents": {
//       "defaults": {"subagents": {"maxSpawnDepth": 2, "maxChildrenPerAgent": 5,
//                                  "allowAgents": ["research"]}},
//       "list": [{"id": "ops", "tools": {"profile": "messaging"},
//                 "subagents": {"maxSpawnDepth": 1}}]
//     },
//     "session": {"agentToAgent": {"maxPingPongTurns": 5}},   // 0..20
//     "upstream": {"firstTickMs": 15000, "intervalMs": 60000, "roots": ["/home/me/.claude"]},
//     "auth": {                                    // config/access_tokens.h
//       "tokens": [{"name": "gateway", "sha256": "<64 hex digits>", "scope": "write"},
//                  {"name": "grafana", "token": "<the token itself>", "scope": "read"}],
//       "openMetrics": false                       // true: GET /metrics needs no token
//     },
//     "retention": {"ms": 2592000000, "pruneIntervalMs": 3600000},
//     "guards": {                                  // config/guards_config.h, docs/guards.md
//       "enabled": true,
//       "send": {"perMinute": 30, "burst": 10},    // sessions_send per caller -> target
//       "repeat": {"maxIdentical": 3, "windowMs": 600000},  // the same message again
//       "spawn": {"perMinute": 12, "burst": 20},   // sessions_spawn per agent
//       "openRuns": {"maxPerSession": 32}          // runs one session has open
//     }
//   }
//
// Every key is optional; a key the file leaves out keeps the value it is applied onto. An
// unknown key or a bad value is refused with its path:
//   `unknown key tools.sessions.visiblity (known: visibility)`
//   `agents.list[0].subagents.maxSpawnDepth must be an integer from 1 to 5 (got 9)`
//
// Thread-safe: pure functions (LoadConfigFile reads the file).
#ifndef STATEWATCH_CONFIG_CONFIG_FILE_H_
#define STATEWATCH_CONFIG_CONFIG_FILE_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/access_tokens.h"
#include "statewatch/options.h"
#include "statewatch/status.h"
#include "tools/session_tools.h"
#include "tools/tool_policy.h"
#include "tools/loop_guards.h"
#include "webhooks/webhook_options.h"

namespace statewatch::tools {

// Everything the file can set, with the daemon's defaults.
struct DaemonConfig {
  SessionToolsOptions sessions;  // tools.sessions.visibility, tools.agentToAgent
  ToolPolicy tool_policy;        // tools.profile / alsoAllow / deny / subagents, agents.*
  int max_ping_pong_turns = 5;   // session.agentToAgent.maxPingPongTurns
  // upstream.*: the upstream monitor's cadence and the directories its JSONL links may
  // name (empty: any). Applied at start; a reload keeps the running monitor's.
  int64_t upstream_first_tick_ms = 15000;
  int64_t upstream_interval_ms = 60000;
  std::vector<std::string> upstream_roots;
  // auth.tokens: bearer tokens besides serve --token, each with its scope (a token's text
  // is never kept: only its SHA-256). auth.openMetrics: GET /metrics without a token.
  // Applied at start and on every reload.
  std::vector<auth::AccessToken> tokens;
  bool open_metrics = false;
  // retention.ms: history kept by occurredAt, and the idle expiry of cursors
  // (EngineOptions::retention_ms); retention.pruneIntervalMs: how often the daemon prunes.
  // Applied at start; a reload keeps the running values.
  int64_t retention_ms = EngineOptions{}.retention_ms;
  int64_t prune_interval_ms = EngineOptions{}.prune_interval_ms;
  // webhooks.*: the notice webhooks (config/webhooks_config.h). Applied at start; a reload
  // keeps the running values.
  webhooks::WebhookOptions webhooks;
  // guards.*: the loop and cost guards of sessions_send and sessions_spawn
  // (config/guards_config.h). Applied at start and on every reload.
  GuardOptions guards;
};

// Applies the JSON text of a configuration file onto `*config`. On an error `*config` may be
// partly changed: apply onto a copy. InvalidArgument names the path (or the JSON syntax
// error with its line and column).
Status ApplyConfigText(std::string_view text, DaemonConfig* config);

// Reads `path` and applies it onto `*config`. NotFound / IOError when it cannot be read.
Status ApplyConfigFile(const std::string& path, DaemonConfig* config);

// The effective configuration in the file's own shape, plus "resolved": the policy each
// agent of agents.list gets (ToolPolicyToJson).
boost::json::object DaemonConfigToJson(const DaemonConfig& config);

}  // namespace statewatch::tools

#endif  // STATEWATCH_CONFIG_CONFIG_FILE_H_
