// McpServer::Session: one MCP session's state, shared by mcp_server.cc (HTTP, streams,
// notifications) and mcp_methods.cc (subscriptions). Internal to the server library.
//
// Not thread-safe: every field is guarded by the McpServer's mutex.
#ifndef STATEWATCH_SERVER_MCP_SESSION_H_
#define STATEWATCH_SERVER_MCP_SESSION_H_

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "server/mcp_server.h"

namespace statewatch::server {

struct McpServer::Session {
  struct Subscription {
    std::string uri;
    std::string watcher;  // the caller's canonical key
    SessionName target;
  };
  class Stream;

  std::string id;
  std::string session_key;  // X-Session-Key of initialize ("" when none)
  std::string agent_id;     // X-Agent-Id of initialize
  std::string authorization;
  std::string protocol_version;
  int64_t last_used_ms = 0;
  bool deleted = false;
  std::vector<Subscription> subscriptions;
  std::deque<std::string> held;    // notifications while no stream is attached
  std::shared_ptr<Stream> stream;  // the attached GET stream
  uint64_t next_event_id = 1;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_MCP_SESSION_H_
