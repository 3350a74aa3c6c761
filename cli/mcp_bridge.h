// `statewatch mcp --server URL [--token-file F] [--session-key K] [--agent-id A]`: the stdio
// bridge to a daemon's MCP endpoint, for agent runtimes that spawn MCP servers as processes
// (MCP stdio transport: newline-delimited JSON-RPC on stdin and stdout, logs on stderr).
//
//   - each line of stdin is POSTed to URL/mcp with the token, X-Session-Key/X-Agent-Id
//     (the caller the MCP session acts as), Mcp-Session-Id once initialize answered one and
//     MCP-Protocol-Version once negotiated; a JSON answer is written to stdout as one line
//     (a text/event-stream answer: each event's data, one line each); 202: nothing;
//   - an HTTP error answering a request becomes a JSON-RPC error with the request's id
//     (code -32000, the daemon's message), so the client's call fails rather than hangs;
//   - once initialized, a second connection follows GET URL/mcp and writes every event's
//     data (notifications/resources/updated) to stdout as one line; it reconnects with a
//     back-off of 100 ms doubling to 5 s while the session lives;
//   - at the end of stdin the session is deleted (DELETE URL/mcp) and the bridge exits 0.
// Requests are forwarded one at a time, in order: a sessions_send waiting for its reply
// holds the next request until it answers (as one HTTP connection would).
//
// https:// URLs are verified as every remote verb's (--ca-file, --client-cert).
#ifndef STATEWATCH_CLI_MCP_BRIDGE_H_
#define STATEWATCH_CLI_MCP_BRIDGE_H_

#include "cli/command.h"

namespace statewatch::cli {

int RunMcp(Command& c);     // local: a usage error naming --server
int RemoteMcp(Command& c);  // the bridge

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_MCP_BRIDGE_H_
