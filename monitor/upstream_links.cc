#include "monitor/upstream_links.h"

#include <openssl/evp.h>

#include "statewatch/session_key.h"  // ResolveSession, IsValidUtf8

namespace statewatch::monitor {

std::string SourceHash(const UpstreamLink& link) {
  std::string joined = link.host_id + '\n' + link.thread_id + '\n' + link.upstream_ref;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest fails only on allocation failure; an empty hash then still yields a key that
  // is stable for this process, and the event is recorded rather than lost.
  if (EVP_Digest(joined.data(), joined.size(), md, &len, EVP_sha256(), nullptr) != 1) len = 0;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len && out.size() < 16; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xf]);
  }
  return out;
}

bool SameSource(const UpstreamLink& a, const UpstreamLink& b) {
  return a.upstream_kind == b.upstream_kind && a.upstream_ref == b.upstream_ref &&
         a.host_id == b.host_id && a.thread_id == b.thread_id;
}

bool SameLink(const UpstreamLink& a, const UpstreamLink& b) {
  return a.session == b.session && a.catalog_id == b.catalog_id && SameSource(a, b) &&
         a.marker == b.marker && a.last_scanned_at_ms == b.last_scanned_at_ms &&
         a.missing_count == b.missing_count;
}

std::string HumanMessageDedupeKey(const UpstreamLink& link, uint64_t position) {
  return "upstream:" + link.session.session_key + ":" + SourceHash(link) + ":" +
         std::to_string(position);
}

std::string MissingDedupeKey(const UpstreamLink& link) {
  return "upstream-missing:" + link.session.session_key + ":" + SourceHash(link) + ":" +
         std::to_string(link.last_scanned_at_ms);
}

std::unique_lock<std::mutex> LockLinkWrites() {
  static std::mutex mu;
  return std::unique_lock<std::mutex>(mu);
}

namespace {

Status ValidateRequest(const ProviderRegistry& providers, UpstreamLink& l,
                       const UpstreamProvider** provider) {
  auto name = ResolveSession(l.session.session_key, l.session.agent_id);
  if (!name.ok()) return name.status();
  l.session = *name;
  if (l.catalog_id.empty()) return Status::InvalidArgument("catalogId must not be empty");
  for (const std::string* f : {&l.catalog_id, &l.host_id, &l.thread_id, &l.upstream_ref}) {
    if (!IsValidUtf8(*f)) return Status::InvalidArgument("upstream link field is not UTF-8");
  }
  auto it = providers.find(l.upstream_kind);
  if (it == providers.end() || !it->second) {
    std::string known;
    for (const auto& [kind, p] : providers) known += (known.empty() ? "" : ", ") + kind;
    return Status::InvalidArgument("upstreamKind must be one of: " + known + " (got \"" +
                                   l.upstream_kind + "\")");
  }
  *provider = it->second.get();
  return (*provider)->ValidateRef(l.upstream_ref);
}

}  // namespace

Status CreateOrRefreshLink(Engine& engine, const ProviderRegistry& providers,
                           UpstreamLink requested, bool marker_given, UpstreamLink* stored) {
  const UpstreamProvider* provider = nullptr;
  SW_RETURN_IF_ERROR(ValidateRequest(providers, requested, &provider));
  auto lock = LockLinkWrites();
  auto existing = engine.GetUpstreamLink(requested.session);
  if (!existing.ok()) return existing.status();
  UpstreamLink link = requested;
  if (existing->has_value() && SameSource(**existing, requested)) {
    link.marker = (*existing)->marker;
    SourceCheck check = provider->CheckSource(link);
    if (check.exists() && check.end_marker < link.marker) link.marker = check.end_marker;
  } else if (!marker_given) {
    SourceCheck check = provider->CheckSource(link);
    if (!check.exists()) {
      return Status::NotFound("upstream source of " + link.session.session_key +
                              " cannot be read, so it has no current end: " + check.message);
    }
    link.marker = check.end_marker;
  }
  link.missing_count = 0;
  link.last_scanned_at_ms = engine.clock().NowMs();
  SW_RETURN_IF_ERROR(engine.PutUpstreamLink(link));
  if (stored) *stored = link;
  return Status::OK();
}

Status CreateOrRefreshLink(Engine& engine, UpstreamLink requested, bool marker_given,
                           UpstreamLink* stored) {
  static const ProviderRegistry builtin = BuiltinProviders();
  return CreateOrRefreshLink(engine, builtin, std::move(requested), marker_given, stored);
}

Result<bool> RemoveUpstreamLink(Engine& engine, const SessionName& session) {
  auto lock = LockLinkWrites();
  auto existing = engine.GetUpstreamLink(session);
  if (!existing.ok()) return existing.status();
  if (!existing->has_value()) return false;
  SW_RETURN_IF_ERROR(engine.DeleteUpstreamLink(session));
  return true;
}

}  // namespace statewatch::monitor
