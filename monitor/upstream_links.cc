#include "monitor/upstream_links.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/hex.h"
#include "base/sha256.h"
#include "statewatch/session_key.h"  // ResolveSession, IsValidUtf8
#include "statewatch/session_tables.h"

namespace statewatch::monitor {

std::string SourceHash(const UpstreamLink& link) {
  std::string joined = link.host_id + '\n' + link.thread_id + '\n' + link.upstream_ref;
  // When OpenSSL cannot allocate, the all-zero digest (base/sha256.h) still yields a key that
  // is stable for this process, and the event is recorded rather than lost.
  return hex::Encode(sha256::BytesOf(joined).substr(0, 8));
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

// realpath(3) into a std::string; nullopt with *error = errno on failure.
std::optional<std::string> RealPath(const std::string& path, int* error = nullptr) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) {
    if (error) *error = errno;
    return std::nullopt;
  }
  std::string out(resolved);
  std::free(resolved);
  return out;
}

// A path that does not exist yet resolves through its directory. Its last component must
// not exist at all: a dangling symlink would be followed once its target appears.
Result<std::string> ResolveMissingFile(const std::string& path) {
  std::size_t slash = path.rfind('/');
  std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string base = path.substr(slash + 1);
  if (slash == std::string::npos || base.empty() || base == "." || base == "..") {
    return Status::NotFound("upstream source " + path + " does not exist");
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    return Status::PermissionDenied("upstream source " + path +
                                    " is a symlink whose target does not exist");
  }
  int err = 0;
  auto parent = RealPath(dir, &err);
  if (!parent) {
    std::string why = std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) {
      return Status::NotFound("the directory of upstream source " + path + " does not exist (" +
                              why + ")");
    }
    return Status::IOError("cannot resolve the directory of upstream source " + path + ": " + why);
  }
  return (*parent == "/" ? "" : *parent) + "/" + base;
}

bool IsInside(const std::string& resolved, const std::string& root) {
  if (root == "/") return true;
  return resolved == root ||
         (resolved.size() > root.size() && resolved.compare(0, root.size(), root) == 0 &&
          resolved[root.size()] == '/');
}

}  // namespace

Result<std::string> ResolveUnderRoots(const std::vector<std::string>& roots,
                                      const std::string& path) {
  if (roots.empty()) {
    return Status::PermissionDenied("upstream source " + path +
                                    " refused: no upstream root is configured (--upstream-root "
                                    "DIR), so no upstream link is accepted");
  }
  std::string resolved;
  int err = 0;
  if (auto real = RealPath(path, &err)) {
    resolved = std::move(*real);
  } else if (err == ENOENT) {
    auto missing = ResolveMissingFile(path);
    if (!missing.ok()) return missing.status();
    resolved = std::move(*missing);
  } else if (err == ENOTDIR) {
    return Status::NotFound("upstream source " + path + " does not exist (" + std::strerror(err) +
                            ")");
  } else {
    return Status::IOError("cannot resolve upstream source " + path + ": " + std::strerror(err));
  }
  std::string listed;
  for (const std::string& root : roots) {
    auto real_root = RealPath(root);
    if (real_root && IsInside(resolved, *real_root)) return resolved;
    listed += (listed.empty() ? "" : ", ") + root;
  }
  std::string shown = resolved == path ? path : path + " (resolves to " + resolved + ")";
  return Status::PermissionDenied("upstream source " + shown + " is outside the upstream roots (" +
                                  listed +
                                  "); add --upstream-root DIR for a directory that holds it");
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
                           const std::vector<std::string>& roots, UpstreamLink requested,
                           bool marker_given, UpstreamLink* stored) {
  const UpstreamProvider* provider = nullptr;
  SW_RETURN_IF_ERROR(ValidateRequest(providers, requested, &provider));
  auto resolved = ResolveUnderRoots(roots, requested.upstream_ref);
  if (!resolved.ok()) return resolved.status();
  requested.upstream_ref = std::move(*resolved);
  auto lock = LockLinkWrites();
  auto existing = SessionTablesView(engine).GetUpstreamLink(requested.session);
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
  return SessionTables(engine).PutUpstreamLink(link, stored);
}

Status CreateOrRefreshLink(Engine& engine, const std::vector<std::string>& roots,
                           UpstreamLink requested, bool marker_given, UpstreamLink* stored) {
  static const ProviderRegistry builtin = BuiltinProviders();
  return CreateOrRefreshLink(engine, builtin, roots, std::move(requested), marker_given, stored);
}

Result<bool> RemoveUpstreamLink(Engine& engine, const SessionName& session) {
  auto lock = LockLinkWrites();
  auto existing = SessionTablesView(engine).GetUpstreamLink(session);
  if (!existing.ok()) return existing.status();
  if (!existing->has_value()) return false;
  SW_RETURN_IF_ERROR(SessionTables(engine).DeleteUpstreamLink(session));
  return true;
}

}  // namespace statewatch::monitor
