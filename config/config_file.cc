#include "config/config_file.h"

#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>

#include "codecs/json_fields.h"
#include "config/config_readers.h"
#include "config/guards_config.h"
#include "config/webhooks_config.h"
#include "statewatch/session_key.h"
#include "tools/session_messaging.h"
#include "tools/tool_profiles.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

using config_read::Bad;
using config_read::Bool;
using config_read::Int;
using config_read::Object;

// The refusal of a wrong value under auth.*: it names the value's JSON type only, since a
// token pasted in the wrong place would otherwise reach a log through the message.
Status BadSecret(const std::string& path, std::string_view expected, const json::value& v) {
  const char* kind = v.is_object()   ? "an object"
                     : v.is_array()  ? "an array"
                     : v.is_string() ? "a string"
                     : v.is_bool()   ? "a boolean"
                     : v.is_null()   ? "null"
                                     : "a number";
  return Status::InvalidArgument(path + " must be " + std::string(expected) + " (got " + kind +
                                 "; not shown)");
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

Result<std::vector<std::string>> StringList(const json::value& v, const std::string& path) {
  if (!v.is_array()) return Bad(path, "an array of strings", v);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.as_array().size(); ++i) {
    const json::value& item = v.as_array()[i];
    if (!item.is_string() || Trim(item.as_string()).empty()) {
      return Bad(path + "[" + std::to_string(i) + "]", "a non-empty string", item);
    }
    out.push_back(Trim(item.as_string()));
  }
  return out;
}

Result<ToolProfile> Profile(const json::value& v, const std::string& path) {
  std::optional<ToolProfile> p;
  if (v.is_string()) p = ParseToolProfile(v.as_string());
  if (!p) return Bad(path, "minimal, coding, messaging or full", v);
  return *p;
}

// Calls `apply(value, path)` when `o` has `key`.
template <typename F>
Status With(const json::object& o, const std::string& path, std::string_view key, F apply) {
  const json::value* v = o.if_contains(key);
  return v == nullptr ? Status::OK() : apply(*v, Join(path, key));
}

// Applies `entry` to each item of a list in turn, each named by its path (`path[i]`); the
// first refusal stops it.
Status ApplyEach(const json::array& items, const std::string& path,
                 Status (*entry)(const json::value&, const std::string&, DaemonConfig*),
                 DaemonConfig* c) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    SW_RETURN_IF_ERROR(entry(items[i], path + "[" + std::to_string(i) + "]", c));
  }
  return Status::OK();
}

template <typename T>
auto Into(T* out) {
  return [out](auto result) -> Status { return Assign(std::move(result), out); };
}

// {"profile", "alsoAllow", "deny"} of tools.* or agents.list[i].tools.
template <typename Profile_, typename List>
Status ReadToolLists(const json::object& o, const std::string& path, Profile_* profile,
                     List* also_allow, List* deny) {
  SW_RETURN_IF_ERROR(With(o, path, "profile", [&](auto& v, auto p) {
    auto r = Profile(v, p);
    if (!r.ok()) return r.status();
    *profile = *r;
    return Status::OK();
  }));
  SW_RETURN_IF_ERROR(With(o, path, "alsoAllow", [&](auto& v, auto p) {
    auto r = StringList(v, p);
    if (!r.ok()) return r.status();
    *also_allow = std::move(*r);
    return Status::OK();
  }));
  return With(o, path, "deny", [&](auto& v, auto p) {
    auto r = StringList(v, p);
    if (!r.ok()) return r.status();
    *deny = std::move(*r);
    return Status::OK();
  });
}

Status ApplySessions(const json::value& v, const std::string& path, DaemonConfig* c) {
  auto o = Object(v, path, {"visibility"});
  if (!o.ok()) return o.status();
  return With(**o, path, "visibility", [&](auto& value, auto p) {
    std::optional<Visibility> vis;
    if (value.is_string()) vis = ParseVisibility(value.as_string());
    if (!vis) return Bad(p, "self, tree, agent or all", value);
    c->sessions.visibility = *vis;
    return Status::OK();
  });
}

Status ApplyAgentToAgent(const json::value& v, const std::string& path, DaemonConfig* c) {
  auto o = Object(v, path, {"enabled", "allow"});
  if (!o.ok()) return o.status();
  SW_RETURN_IF_ERROR(With(**o, path, "enabled", [&](auto& value, auto p) {
    return Into(&c->sessions.agent_to_agent.enabled)(Bool(value, p));
  }));
  return With(**o, path, "allow", [&](auto& value, auto p) {
    return Into(&c->sessions.agent_to_agent.allow)(StringList(value, p));
  });
}

Status ApplySubagentTools(const json::value& v, const std::string& path, DaemonConfig* c) {
  auto sub = Object(v, path, {"tools"});
  if (!sub.ok()) return sub.status();
  return With(**sub, path, "tools", [&](auto& value, auto p) -> Status {
    auto o = Object(value, p, {"allow", "deny"});
    if (!o.ok()) return o.status();
    SW_RETURN_IF_ERROR(With(**o, p, "allow", [&](auto& list, auto lp) {
      return Into(&c->tool_policy.subagent_allow)(StringList(list, lp));
    }));
    return With(**o, p, "deny", [&](auto& list, auto lp) {
      return Into(&c->tool_policy.subagent_deny)(StringList(list, lp));
    });
  });
}

Status ApplyTools(const json::value& v, DaemonConfig* c) {
  const std::string path = "tools";
  auto o =
      Object(v, path, {"profile", "alsoAllow", "deny", "sessions", "agentToAgent", "subagents"});
  if (!o.ok()) return o.status();
  ToolPolicy& t = c->tool_policy;
  SW_RETURN_IF_ERROR(ReadToolLists(**o, path, &t.profile, &t.also_allow, &t.deny));
  SW_RETURN_IF_ERROR(
      With(**o, path, "sessions", [&](auto& value, auto p) { return ApplySessions(value, p, c); }));
  SW_RETURN_IF_ERROR(With(**o, path, "agentToAgent",
                          [&](auto& value, auto p) { return ApplyAgentToAgent(value, p, c); }));
  return With(**o, path, "subagents",
              [&](auto& value, auto p) { return ApplySubagentTools(value, p, c); });
}

// {"maxSpawnDepth", "maxChildrenPerAgent", "allowAgents"} of agents.defaults.subagents or
// agents.list[i].subagents.
template <typename Depth, typename Children, typename Allow>
Status ReadSubagentLimits(const json::value& v, const std::string& path, Depth* depth,
                          Children* children, Allow* allow) {
  auto o = Object(v, path, {"maxSpawnDepth", "maxChildrenPerAgent", "allowAgents"});
  if (!o.ok()) return o.status();
  SW_RETURN_IF_ERROR(With(**o, path, "maxSpawnDepth", [&](auto& value, auto p) -> Status {
    auto n = Int(value, p, 1, kMaxSpawnDepthLimit);
    if (!n.ok()) return n.status();
    *depth = static_cast<int>(*n);
    return Status::OK();
  }));
  SW_RETURN_IF_ERROR(With(**o, path, "maxChildrenPerAgent", [&](auto& value, auto p) -> Status {
    auto n = Int(value, p, 1, kMaxChildrenLimit);
    if (!n.ok()) return n.status();
    *children = static_cast<int>(*n);
    return Status::OK();
  }));
  return With(**o, path, "allowAgents", [&](auto& value, auto p) -> Status {
    auto list = StringList(value, p);
    if (!list.ok()) return list.status();
    *allow = std::move(*list);
    return Status::OK();
  });
}

Status ApplyAgentEntry(const json::value& v, const std::string& path, DaemonConfig* c) {
  auto o = Object(v, path, {"id", "tools", "subagents"});
  if (!o.ok()) return o.status();
  AgentPolicyOverride a;
  const json::value* id = (*o)->if_contains("id");
  if (id == nullptr) return Status::InvalidArgument(path + ".id is required");
  if (!id->is_string()) return Bad(path + ".id", "an agent id", *id);
  auto normalized = NormalizeAgentId(id->as_string());
  if (!normalized.ok())
    return Status::InvalidArgument(path + ".id: " + normalized.status().message());
  a.id = *normalized;
  SW_RETURN_IF_ERROR(With(**o, path, "tools", [&](auto& value, auto p) -> Status {
    auto tools = Object(value, p, {"profile", "alsoAllow", "deny"});
    if (!tools.ok()) return tools.status();
    return ReadToolLists(**tools, p, &a.profile, &a.also_allow, &a.deny);
  }));
  SW_RETURN_IF_ERROR(With(**o, path, "subagents", [&](auto& value, auto p) {
    return ReadSubagentLimits(value, p, &a.max_spawn_depth, &a.max_children_per_agent,
                              &a.allow_agents);
  }));
  for (const AgentPolicyOverride& earlier : c->tool_policy.agents) {
    if (earlier.id == a.id) {
      return Status::InvalidArgument(path + ".id \"" + a.id + "\" appears twice in agents.list");
    }
  }
  c->tool_policy.agents.push_back(std::move(a));
  return Status::OK();
}

Status ApplyAgents(const json::value& v, DaemonConfig* c) {
  const std::string path = "agents";
  auto o = Object(v, path, {"defaults", "list"});
  if (!o.ok()) return o.status();
  SW_RETURN_IF_ERROR(With(**o, path, "defaults", [&](auto& value, auto p) -> Status {
    auto defaults = Object(value, p, {"subagents"});
    if (!defaults.ok()) return defaults.status();
    ToolPolicy& t = c->tool_policy;
    return With(**defaults, p, "subagents", [&](auto& sub, auto sp) {
      return ReadSubagentLimits(sub, sp, &t.max_spawn_depth, &t.max_children_per_agent,
                                &t.allow_agents);
    });
  }));
  return With(**o, path, "list", [&](auto& value, auto p) -> Status {
    if (!value.is_array()) return Bad(p, "an array of agents", value);
    c->tool_policy.agents.clear();  // the file's list replaces the one it is applied onto
    return ApplyEach(value.as_array(), p, ApplyAgentEntry, c);
  });
}

Status ApplySession(const json::value& v, DaemonConfig* c) {
  const std::string path = "session";
  auto o = Object(v, path, {"agentToAgent"});
  if (!o.ok()) return o.status();
  return With(**o, path, "agentToAgent", [&](auto& value, auto p) -> Status {
    auto a2a = Object(value, p, {"maxPingPongTurns"});
    if (!a2a.ok()) return a2a.status();
    return With(**a2a, p, "maxPingPongTurns", [&](auto& n, auto np) -> Status {
      auto turns = Int(n, np, 0, kMaxPingPongTurnsLimit);
      if (!turns.ok()) return turns.status();
      c->max_ping_pong_turns = static_cast<int>(*turns);
      return Status::OK();
    });
  });
}

Status ApplyUpstream(const json::value& v, DaemonConfig* c) {
  const std::string path = "upstream";
  auto o = Object(v, path, {"firstTickMs", "intervalMs", "roots"});
  if (!o.ok()) return o.status();
  constexpr int64_t kDay = 24LL * 3600 * 1000;
  SW_RETURN_IF_ERROR(With(**o, path, "firstTickMs", [&](auto& value, auto p) {
    return Into(&c->upstream_first_tick_ms)(Int(value, p, 1, kDay));
  }));
  SW_RETURN_IF_ERROR(With(**o, path, "intervalMs", [&](auto& value, auto p) {
    return Into(&c->upstream_interval_ms)(Int(value, p, 1, kDay));
  }));
  return With(**o, path, "roots", [&](auto& value, auto p) -> Status {
    auto roots = StringList(value, p);
    if (!roots.ok()) return roots.status();
    for (std::size_t i = 0; i < roots->size(); ++i) {
      if ((*roots)[i].front() != '/') {
        return Status::InvalidArgument(p + "[" + std::to_string(i) +
                                       "] must be an absolute path (got \"" + (*roots)[i] + "\")");
      }
    }
    c->upstream_roots = std::move(*roots);
    return Status::OK();
  });
}

// One entry of auth.tokens. A refusal never quotes "token" or "sha256": the file's secret
// must not reach a log through an error message.
Status ApplyTokenEntry(const json::value& v, const std::string& path, DaemonConfig* c) {
  if (!v.is_object()) return BadSecret(path, "an object", v);
  auto o = Object(v, path, {"name", "token", "sha256", "scope"});
  if (!o.ok()) return o.status();
  auth::AccessToken t;
  const json::value* name = (*o)->if_contains("name");
  if (name == nullptr || !name->is_string() || Trim(name->as_string()).empty()) {
    return Status::InvalidArgument(path + ".name is required (a non-empty string)");
  }
  t.name = Trim(name->as_string());
  const json::value* token = (*o)->if_contains("token");
  const json::value* sha256 = (*o)->if_contains("sha256");
  if ((token == nullptr) == (sha256 == nullptr)) {
    return Status::InvalidArgument(path + " (\"" + t.name +
                                   "\") needs exactly one of token and sha256");
  }
  if (token != nullptr) {
    if (!token->is_string() || token->as_string().empty() ||
        token->as_string().find_first_of(" \t\r\n") != json::string::npos) {
      return Status::InvalidArgument(path +
                                     ".token must be a non-empty string without spaces "
                                     "(its value is not shown)");
    }
    t.sha256 = auth::Sha256(token->as_string());
  } else {
    std::optional<std::string> digest;
    if (sha256->is_string()) digest = auth::DigestFromHex(sha256->as_string());
    if (!digest) {
      return Status::InvalidArgument(path +
                                     ".sha256 must be 64 hexadecimal digits, the output "
                                     "of printf %s TOKEN | sha256sum (its value is not shown)");
    }
    t.sha256 = std::move(*digest);
  }
  const json::value* scope = (*o)->if_contains("scope");
  std::optional<auth::Scope> parsed;
  if (scope != nullptr && scope->is_string()) parsed = auth::ParseScope(scope->as_string());
  if (scope == nullptr) {
    return Status::InvalidArgument(path + ".scope is required (read, write or admin)");
  }
  if (!parsed) return Bad(path + ".scope", "read, write or admin", *scope);
  t.scope = *parsed;
  for (const auth::AccessToken& earlier : c->tokens) {
    if (earlier.name == t.name) {
      return Status::InvalidArgument(path + ".name \"" + t.name +
                                     "\" appears twice in auth.tokens");
    }
    if (earlier.sha256 == t.sha256) {
      return Status::InvalidArgument(path + " (\"" + t.name + "\") is the same token as \"" +
                                     earlier.name + "\"");
    }
  }
  c->tokens.push_back(std::move(t));
  return Status::OK();
}

Status ApplyAuth(const json::value& v, DaemonConfig* c) {
  const std::string path = "auth";
  if (!v.is_object()) return BadSecret(path, "an object", v);
  auto o = Object(v, path, {"tokens", "openMetrics"});
  if (!o.ok()) return o.status();
  SW_RETURN_IF_ERROR(With(**o, path, "openMetrics", [&](auto& value, auto p) -> Status {
    if (!value.is_bool()) return BadSecret(p, "true or false", value);
    c->open_metrics = value.as_bool();
    return Status::OK();
  }));
  return With(**o, path, "tokens", [&](auto& value, auto p) -> Status {
    if (!value.is_array()) return BadSecret(p, "an array of tokens", value);
    c->tokens.clear();  // the file's list replaces the one it is applied onto
    return ApplyEach(value.as_array(), p, ApplyTokenEntry, c);
  });
}

Status ApplyRetention(const json::value& v, DaemonConfig* c) {
  const std::string path = "retention";
  auto o = Object(v, path, {"ms", "pruneIntervalMs"});
  if (!o.ok()) return o.status();
  constexpr int64_t kTenYears = 3650LL * 24 * 3600 * 1000;
  SW_RETURN_IF_ERROR(With(**o, path, "ms", [&](auto& value, auto p) {
    return Into(&c->retention_ms)(Int(value, p, 1, kTenYears));
  }));
  return With(**o, path, "pruneIntervalMs", [&](auto& value, auto p) {
    return Into(&c->prune_interval_ms)(Int(value, p, 1000, kTenYears));
  });
}

Status ApplyDocument(const json::value& doc, DaemonConfig* c) {
  auto o =
      Object(doc, "",
             {"tools", "agents", "session", "upstream", "auth", "retention", "webhooks", "guards"});
  if (!o.ok()) return o.status();
  SW_RETURN_IF_ERROR(With(**o, "", "tools", [&](auto& v, auto) { return ApplyTools(v, c); }));
  SW_RETURN_IF_ERROR(With(**o, "", "agents", [&](auto& v, auto) { return ApplyAgents(v, c); }));
  SW_RETURN_IF_ERROR(With(**o, "", "session", [&](auto& v, auto) { return ApplySession(v, c); }));
  SW_RETURN_IF_ERROR(With(**o, "", "upstream", [&](auto& v, auto) { return ApplyUpstream(v, c); }));
  SW_RETURN_IF_ERROR(With(**o, "", "auth", [&](auto& v, auto) { return ApplyAuth(v, c); }));
  SW_RETURN_IF_ERROR(
      With(**o, "", "retention", [&](auto& v, auto) { return ApplyRetention(v, c); }));
  SW_RETURN_IF_ERROR(
      With(**o, "", "guards", [&](auto& v, auto) { return ApplyGuardsSection(v, &c->guards); }));
  SW_RETURN_IF_ERROR(With(**o, "", "webhooks",
                          [&](auto& v, auto) { return ApplyWebhooksSection(v, &c->webhooks); }));
  return ValidateToolPolicy(c->tool_policy);
}

// Line and column (1-based) of byte `offset` in `text`.
std::string Where(std::string_view text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

json::array Strings(const std::vector<std::string>& list) {
  json::array out;
  for (const std::string& s : list) out.emplace_back(s);
  return out;
}

}  // namespace

Status ApplyConfigText(std::string_view text, DaemonConfig* config) {
  try {
    json::parse_options options;
    options.allow_comments = true;
    options.allow_trailing_commas = true;
    json::stream_parser parser({}, options);
    std::error_code ec;
    std::size_t used = parser.write_some(text.data(), text.size(), ec);
    if (!ec) parser.finish(ec);
    if (ec) {
      return Status::InvalidArgument("the configuration is not valid JSON at " + Where(text, used) +
                                     ": " + ec.message());
    }
    return ApplyDocument(parser.release(), config);
  } catch (const std::exception& e) {  // allocation failures: this is the edge
    return Status::InvalidArgument(std::string("cannot read the configuration: ") + e.what());
  }
}

Status ApplyConfigFile(const std::string& path, DaemonConfig* config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string why = std::strerror(errno);
    if (errno == ENOENT) return Status::NotFound("cannot open " + path + ": " + why);
    return Status::IOError("cannot open " + path + ": " + why);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IOError("cannot read " + path);
  Status s = ApplyConfigText(text.str(), config);
  if (!s.ok()) return Status::InvalidArgument(path + ": " + s.message());
  return Status::OK();
}

namespace {

json::object ResolvedJson(const ToolPolicy& p) {
  json::object o;
  o["profile"] = ToolProfileName(p.profile);
  o["alsoAllow"] = Strings(p.also_allow);
  o["deny"] = Strings(p.deny);
  o["maxSpawnDepth"] = p.max_spawn_depth;
  o["maxChildrenPerAgent"] = p.max_children_per_agent;
  o["allowAgents"] = Strings(p.allow_agents);
  json::object by_depth;  // what a caller at each spawn depth may call
  for (int depth = 0; depth <= p.max_spawn_depth; ++depth) {
    by_depth[std::to_string(depth)] = Strings(AllowedSessionTools(p, depth));
  }
  o["sessionToolsBySpawnDepth"] = std::move(by_depth);
  return o;
}

// The effective policy (`statewatch config check`): the defaults, and each agent of
// agents.list resolved. Tool lists are the session tools each depth may call.
json::object ToolPolicyToJson(const ToolPolicy& policy) {
  json::object o = ResolvedJson(policy.ForAgent(""));
  o["subagentTools"] = json::object{{"allow", Strings(policy.subagent_allow)},
                                    {"deny", Strings(policy.subagent_deny)}};
  json::object agents;
  for (const AgentPolicyOverride& a : policy.agents) {
    agents[a.id] = ResolvedJson(policy.ForAgent(a.id));
  }
  o["agents"] = std::move(agents);
  return o;
}

}  // namespace

json::object DaemonConfigToJson(const DaemonConfig& c) {
  const ToolPolicy& t = c.tool_policy;
  json::array agents;
  for (const AgentPolicyOverride& a : t.agents) {
    json::object entry{{"id", a.id}};
    json::object tools;
    if (a.profile) tools["profile"] = ToolProfileName(*a.profile);
    if (a.also_allow) tools["alsoAllow"] = Strings(*a.also_allow);
    if (a.deny) tools["deny"] = Strings(*a.deny);
    if (!tools.empty()) entry["tools"] = std::move(tools);
    json::object sub;
    if (a.max_spawn_depth) sub["maxSpawnDepth"] = *a.max_spawn_depth;
    if (a.max_children_per_agent) sub["maxChildrenPerAgent"] = *a.max_children_per_agent;
    if (a.allow_agents) sub["allowAgents"] = Strings(*a.allow_agents);
    if (!sub.empty()) entry["subagents"] = std::move(sub);
    agents.push_back(std::move(entry));
  }
  json::object o;
  o["tools"] = json::object{
      {"profile", ToolProfileName(t.profile)},
      {"alsoAllow", Strings(t.also_allow)},
      {"deny", Strings(t.deny)},
      {"sessions", json::object{{"visibility", VisibilityName(c.sessions.visibility)}}},
      {"agentToAgent", json::object{{"enabled", c.sessions.agent_to_agent.enabled},
                                    {"allow", Strings(c.sessions.agent_to_agent.allow)}}},
      {"subagents", json::object{{"tools", json::object{{"allow", Strings(t.subagent_allow)},
                                                        {"deny", Strings(t.subagent_deny)}}}}}};
  o["agents"] = json::object{
      {"defaults",
       json::object{{"subagents", json::object{{"maxSpawnDepth", t.max_spawn_depth},
                                               {"maxChildrenPerAgent", t.max_children_per_agent},
                                               {"allowAgents", Strings(t.allow_agents)}}}}},
      {"list", std::move(agents)}};
  o["session"] =
      json::object{{"agentToAgent", json::object{{"maxPingPongTurns", c.max_ping_pong_turns}}}};
  o["upstream"] = json::object{{"firstTickMs", c.upstream_first_tick_ms},
                               {"intervalMs", c.upstream_interval_ms},
                               {"roots", Strings(c.upstream_roots)}};
  json::array tokens;  // names and scopes: never a token or its digest
  for (const auth::AccessToken& token : c.tokens) {
    tokens.push_back(json::object{{"name", token.name}, {"scope", auth::ScopeName(token.scope)}});
  }
  o["auth"] = json::object{{"tokens", std::move(tokens)}, {"openMetrics", c.open_metrics}};
  o["retention"] = json::object{{"ms", c.retention_ms}, {"pruneIntervalMs", c.prune_interval_ms}};
  o["webhooks"] = WebhooksSectionToJson(c.webhooks);
  o["guards"] = GuardsSectionToJson(c.guards);
  o["resolved"] = ToolPolicyToJson(t);
  return o;
}

}  // namespace statewatch::tools
