#include "engine/event_validation.h"

#include <algorithm>
#include <boost/json.hpp>

#include "base/trace_context.h"
#include "statewatch/session_key.h"

namespace statewatch::engine {

KindTable::KindTable(const std::vector<KindSpec>& kinds) {
  for (const KindSpec& k : kinds) {
    if (!by_name_.count(k.name)) names_ += (names_.empty() ? "" : ", ") + k.name;
    by_name_[k.name] = k;
  }
}

const KindSpec* KindTable::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

namespace {

std::string Quote(const std::string& s) {
  std::string shown = s.size() > 80 ? s.substr(0, 80) + "..." : s;
  return "\"" + shown + "\"";
}

// Keys and ids (`text` false) also refuse NUL: they become storage keys and C strings in
// clients, where an embedded \u0000 would silently cut or alias them.
Status CheckText(const char* field, const std::string& value, std::size_t max_bytes,
                 bool text = false) {
  if (!IsValidUtf8(value)) return Status::InvalidArgument(std::string(field) + " is not valid UTF-8");
  if (!text && value.find('\0') != std::string::npos) {
    return Status::InvalidArgument(std::string(field) +
                                   " must not contain a NUL character (\\u0000)");
  }
  if (value.size() > max_bytes) {
    return Status::InvalidArgument(std::string(field) + " is longer than " +
                                   std::to_string(max_bytes) + " bytes (got " +
                                   std::to_string(value.size()) + ")");
  }
  return Status::OK();
}

// True when boost::json::serialize(parse(t)) would give `t` back byte for byte, judged from
// the text alone: no whitespace between tokens, no escapes in strings but \" and \\ (the
// ones the serializer writes too), integers only (up to 18 digits, no -0). `*keys` counts
// object keys, so that the caller can tell whether parsing collapsed duplicates.
bool LooksCanonical(std::string_view t, std::size_t* keys) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '"') {
      for (++i; i < t.size() && t[i] != '"'; ++i) {
        if (t[i] != '\\') continue;
        if (i + 1 >= t.size() || (t[i + 1] != '"' && t[i + 1] != '\\')) return false;
        ++i;
      }
      if (i + 1 < t.size() && t[i + 1] == ':') ++*keys;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t start = i + (c == '-');
      std::size_t end = start;
      while (end < t.size() && t[end] >= '0' && t[end] <= '9') ++end;
      if (end - start > 18 || (c == '-' && end - start == 1 && t[start] == '0')) return false;
      if (end < t.size() && (t[end] == '.' || t[end] == 'e' || t[end] == 'E')) return false;
      i = end - 1;
    } else if (c == 't' || c == 'n') {
      i += 3;  // true, null (the parser has checked the spelling)
    } else if (c == 'f') {
      i += 4;  // false
    } else if (c != '{' && c != '}' && c != '[' && c != ']' && c != ':' && c != ',') {
      return false;  // whitespace
    }
  }
  return true;
}

std::size_t CountMembers(const boost::json::value& v) {
  std::size_t n = 0;
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) n += 1 + CountMembers(kv.value());
  } else if (v.is_array()) {
    for (const auto& x : v.get_array()) n += CountMembers(x);
  }
  return n;
}

// Keeps a JSON object (compact: as given when it already is, else re-serialised), drops any
// other JSON value, refuses text that is not JSON at all. The parse allocates from a stack
// buffer for payloads of usual size.
Result<std::string> NormalizePayload(const std::string& text) {
  if (text.empty()) return std::string();
  if (text.size() > kMaxPayloadBytes) {
    return Status::InvalidArgument("payload is larger than " + std::to_string(kMaxPayloadBytes) +
                                   " bytes (got " + std::to_string(text.size()) + ")");
  }
  boost::system::error_code ec;
  unsigned char buffer[4096];
  boost::json::monotonic_resource arena(buffer, sizeof(buffer));
  boost::json::value v = boost::json::parse(text, ec, &arena);
  if (ec) return Status::InvalidArgument("payload is not valid JSON (got " + Quote(text) + ")");
  // docs/semantics.md, "What an event holds": non-objects are dropped.
  if (!v.is_object()) return std::string();
  std::size_t keys = 0;
  if (LooksCanonical(text, &keys) && keys == CountMembers(v)) return text;
  return boost::json::serialize(v);
}

// The session of `in`: from `memo` when the previous event named the same key and agent id
// (already checked and parsed), else checked, resolved and remembered.
Status PrepareSession(const EventInput& in, PreparedEvent& out, SessionMemo* memo) {
  if (memo && memo->valid && memo->session_key == in.session_key &&
      memo->agent_id == in.agent_id) {
    out.session = memo->session;
    return Status::OK();
  }
  SW_RETURN_IF_ERROR(CheckText("sessionKey", in.session_key, kMaxKeyBytes));
  Result<SessionName> session = ResolveSession(in.session_key, in.agent_id);
  if (!session.ok()) return session.status();
  out.session = std::move(*session);
  if (memo) {
    memo->valid = true;
    memo->session_key = in.session_key;
    memo->agent_id = in.agent_id;
    memo->session = out.session;
  }
  return Status::OK();
}

Status PrepareFields(const EventInput& in, PreparedEvent& out, SessionMemo* memo) {
  SW_RETURN_IF_ERROR(PrepareSession(in, out, memo));
  SW_RETURN_IF_ERROR(CheckText("sessionId", in.session_id, kMaxIdBytes));
  SW_RETURN_IF_ERROR(CheckText("actorId", in.actor_id, kMaxKeyBytes));
  SW_RETURN_IF_ERROR(CheckText("runId", in.run_id, kMaxIdBytes));
  SW_RETURN_IF_ERROR(CheckText("dedupeKey", in.dedupe_key, kMaxKeyBytes));
  return CheckText("summary", in.summary, 1 << 20, /*text=*/true);
}

}  // namespace

std::string FoldSummary(const std::string& s, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') continue;  // CRLF -> one space
    out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
  }
  if (out.size() <= max_bytes) return out;
  std::size_t cut = max_bytes;
  // Step back over continuation bytes so no UTF-8 sequence is split.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
  out.resize(cut);
  return out;
}

SessionName CanonicalSession(const SessionName& s) {
  auto r = ResolveSession(s.session_key, s.agent_id);
  return r.ok() ? *r : s;
}

Result<std::optional<SessionName>> ParseWatcherKey(const std::string& key) {
  Result<ParsedKey> parsed = ParseSessionKey(key);
  if (!parsed.ok()) {
    return Status::InvalidArgument("watcher " + Quote(key) + " is malformed: " +
                                   parsed.status().message());
  }
  if (!parsed->agent_scoped) return std::optional<SessionName>();
  return std::optional<SessionName>(SessionName{parsed->agent_id, parsed->canonical});
}

// The canonical (watcher, target) pair a registration names, or InvalidArgument saying why it
// is refused (docs/semantics.md, "How a watcher starts watching"): a malformed or bare key on
// either side, a target whose key and agent id disagree, a watcher that is its own target.
Result<std::pair<SessionName, SessionName>> ResolveWatchPair(const std::string& watcher_key,
                                                            const SessionName& target) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) {
    return Status::InvalidArgument("watcher " + Quote(watcher_key) +
                                   " is not agent-scoped (agent:<agentId>:<rest>)");
  }
  auto t = ParseSessionKey(target.session_key);
  if (!t.ok()) {
    return Status::InvalidArgument("target " + Quote(target.session_key) + " is malformed: " +
                                   t.status().message());
  }
  if (!t->agent_scoped) {
    return Status::InvalidArgument("target " + Quote(target.session_key) +
                                   " is not agent-scoped (agent:<agentId>:<rest>)");
  }
  auto resolved = ResolveSession(target.session_key, target.agent_id);
  if (!resolved.ok()) {
    return Status::InvalidArgument("target " + Quote(target.session_key) + ": " +
                                   resolved.status().message());
  }
  if (*resolved == **w) {
    return Status::InvalidArgument("watcher " + Quote(watcher_key) + " is its own target");
  }
  return std::make_pair(std::move(**w), std::move(*resolved));
}

Result<PreparedEvent> PrepareEvent(const EventInput& in, const KindTable& kinds, int64_t now_ms,
                                   std::size_t summary_max_bytes, SessionMemo* memo) {
  PreparedEvent out;
  SW_RETURN_IF_ERROR(PrepareFields(in, out, memo));
  const KindSpec* kind = kinds.Find(in.kind);
  if (!kind) {
    return Status::InvalidArgument("unknown kind " + Quote(in.kind) +
                                   " (valid kinds: " + kinds.names() + ")");
  }
  out.kind = *kind;
  Result<std::string> payload = NormalizePayload(in.payload_json);
  if (!payload.ok()) return payload.status();

  Event& e = out.event;
  e.session_key = out.session.session_key;
  e.agent_id = out.session.agent_id;
  e.session_id = in.session_id;
  e.kind = in.kind;
  e.actor_type = in.actor_type;
  e.actor_id = in.actor_id;
  e.run_id = in.run_id;
  int64_t at = in.occurred_at_ms.value_or(now_ms);
  e.occurred_at_ms = std::clamp(at, now_ms - kClampWindowMs, now_ms);
  e.summary = FoldSummary(in.summary, summary_max_bytes);
  e.payload_json = std::move(*payload);
  e.dedupe_key = in.dedupe_key;
  if (!in.traceparent.empty()) {
    std::optional<std::string> trace = trace::NormalizeTraceparent(in.traceparent);
    if (!trace) {
      return Status::InvalidArgument(
          "traceparent must be a W3C trace context: 00-<32 hex>-<16 hex>-<2 hex>, lower-case, "
          "ids not all zero (got " + Quote(in.traceparent) + ")");
    }
    e.traceparent = std::move(*trace);
  }

  if (!in.actor_id.empty()) {
    Result<ParsedKey> actor = ParseSessionKey(in.actor_id);
    if (actor.ok() && actor->agent_scoped) {
      out.actor_session = SessionName{actor->agent_id, actor->canonical};
      e.actor_id = actor->canonical;
    }
  }
  // docs/semantics.md, "Sessions and their keys": a bare target gets the journal, a state version
  // and changesSince, but never a cursor, a notice or a wake — whichever way the watcher comes (a
  // producer's list or a child_spawned seed), exactly as Watch() refuses a bare target. The
  // watchers are still validated, so a malformed key is refused the same way for every target.
  const bool bare_target = out.session.session_key.rfind("agent:", 0) != 0;
  for (const std::string& w : in.watchers) {
    auto parsed = ParseWatcherKey(w);
    if (!parsed.ok()) return parsed.status();
    if (bare_target) continue;
    if (!*parsed || **parsed == out.session) continue;  // bare keys and the target itself
    if (std::find(out.watchers.begin(), out.watchers.end(), **parsed) == out.watchers.end()) {
      out.watchers.push_back(**parsed);
    }
  }
  return out;
}

}  // namespace statewatch::engine
