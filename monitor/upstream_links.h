// Upstream links as the monitor and the daemon see them (docs/semantics.md,
// "Upstream monitor (adopted sessions)"): the source hash, the dedupe keys the monitor
// records with, and the link writes the daemon makes.
//
// Every link write of this module and of UpstreamMonitor is made under one process-wide
// lock (LockLinkWrites), so the monitor's re-read-then-write of a marker and a daemon's
// create/refresh/remove never interleave: a link refreshed during a scan always wins. The
// engine's database lock keeps other processes out, so one process-wide lock is enough.
// Links written straight through SessionTables::PutUpstreamLink bypass it; the daemon should use
// the functions below.
//
// Thread-safe.
#ifndef STATEWATCH_MONITOR_UPSTREAM_LINKS_H_
#define STATEWATCH_MONITOR_UPSTREAM_LINKS_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "monitor/upstream_provider.h"
#include "statewatch/engine.h"

namespace statewatch::monitor {

// The first 16 lower-case hex digits of SHA-256 over
//   host_id + "\n" + thread_id + "\n" + upstream_ref
// (the three joined by one '\n' each, no trailing newline), computed with OpenSSL's EVP.
// Reproducible with: printf '%s\n%s\n%s' "$host" "$thread" "$path" | sha256sum | cut -c1-16
std::string SourceHash(const UpstreamLink& link);

// Same source: the same kind, reference, host and thread (the catalog id is a label).
bool SameSource(const UpstreamLink& a, const UpstreamLink& b);
// Every field equal (a refresh always rewrites last_scanned_at_ms and missing_count).
bool SameLink(const UpstreamLink& a, const UpstreamLink& b);

// `upstream:<sessionKey>:<source hash>:<position>` where position is the marker the scan
// advanced to (the end of the bytes the event covers): a retry after a crash between the
// append and the marker write re-reads the same bytes to the same end and is deduplicated;
// if more lines arrived meanwhile the end differs and the new event covers them too, so a
// turn may be announced twice (into one pending notice) but is never lost. (Only watched
// sessions are scanned, and a bare key is never watched, so the key always names the agent.)
std::string HumanMessageDedupeKey(const UpstreamLink& link, uint64_t position);
// `upstream-missing:<sessionKey>:<source hash>:<last_scanned_at_ms>`: one missing event per
// link incarnation (last_scanned_at_ms is set when the link is created or refreshed and when
// a successful scan writes it, never by a failed check), also when a crash between the
// event and the link's removal repeats the third failed check.
std::string MissingDedupeKey(const UpstreamLink& link);

// The process-wide lock of link writes (see above).
std::unique_lock<std::mutex> LockLinkWrites();

// The upstream roots (`statewatch serve --upstream-root DIR`, repeatable): the directories
// an upstream source may lie in. The daemon reads linked files as its own user, so a link
// must never name a file outside them (/etc/shadow, another user's keys).
//
// ResolveUnderRoots resolves `path` with realpath(3) — every symlink and ".." — and accepts
// it only when the result lies inside the resolved form of one of `roots`, so a symlink
// inside a root cannot lead out of it. A file that does not exist yet resolves through its
// directory (a link may name a transcript before the client writes it). Returns the
// resolved path, or:
//   PermissionDenied  no root is configured, or the path resolves outside every root; the
//                     message names the path, what it resolved to and the roots;
//   NotFound          the path's directory does not exist (ENOENT / ENOTDIR);
//   IOError           realpath failed otherwise (EACCES, ELOOP, ...), with its reason.
// Reads the file system (realpath) on the caller's thread.
Result<std::string> ResolveUnderRoots(const std::vector<std::string>& roots,
                                      const std::string& path);

// Creates or refreshes the link of requested.session (POST /v1/upstream-links):
//  - the source path must resolve under `roots` (ResolveUnderRoots); the link stores the
//    resolved path, so what is read is what is listed;
//  - same source as the stored link (SameSource): the stored marker is kept (a marker in
//    the request is ignored), unless it lies past the source's current end, which moves it
//    to the end;
//  - a new link or a changed source: the requested marker when `marker_given`, otherwise
//    the source's current end (CheckSource), so old history is not news; a source that does
//    not exist then is NotFound;
//  - always: missing_count = 0 (a refresh restarts the count), last_scanned_at_ms = now.
// InvalidArgument for a malformed session, an empty or non-UTF-8 catalog id, an unknown
// upstream kind, or a reference the provider refuses; PermissionDenied for a source outside
// the roots (or no roots). Nothing is written on any error. `*stored` (if given) is the
// link as stored, filled inside the write's commit group (SessionTables::PutUpstreamLink).
// CheckSource runs on the caller's thread (for JSONL, one stat(2)).
Status CreateOrRefreshLink(Engine& engine, const ProviderRegistry& providers,
                           const std::vector<std::string>& roots, UpstreamLink requested,
                           bool marker_given, UpstreamLink* stored = nullptr);
// The same with BuiltinProviders().
Status CreateOrRefreshLink(Engine& engine, const std::vector<std::string>& roots,
                           UpstreamLink requested, bool marker_given,
                           UpstreamLink* stored = nullptr);

// Removes the session's link (DELETE /v1/upstream-links/{key}); false when it had none.
Result<bool> RemoveUpstreamLink(Engine& engine, const SessionName& session);

}  // namespace statewatch::monitor

#endif  // STATEWATCH_MONITOR_UPSTREAM_LINKS_H_
