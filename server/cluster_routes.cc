#include "server/cluster_routes.h"

#include "server/internal_call.h"
#include "server/internal_handlers.h"

#include <boost/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "codecs/json_fields.h"
#include "log/batch_frame.h"
#include "server/handlers.h"
#include "server/route_table.h"

namespace statewatch::server {
namespace json = boost::json;

using cluster::PartitionRole;
using cluster::PartitionView;

namespace {

constexpr std::string_view kClusterPrefix = "/v1/cluster/";

std::string PartitionName(const PartitionView& v) {
  return "partition " + std::to_string(v.partition);
}

// The routes a standby answers from its folded directory: reads that need nothing but the
// engine (no session messaging, no upstream monitor: a standby runs neither).
bool StandbyReadable(const RouteSpec& spec) {
  static const char* const kReads[] = {
      "/v1/verify", "/v1/export",  "/v1/stats", "/v1/versions",     "/v1/sessions/{key}/state",
      "/v1/notices", "/v1/cursors", "/v1/clock", "/v1/openapi.json"};
  if (spec.websocket) return false;
  bool read_method = std::string_view(spec.method) == "GET" || spec.path == "/v1/versions";
  if (!read_method) return false;
  for (const char* path : kReads) {
    if (spec.path == path) return true;
  }
  return false;
}

ApiResponse StandbyRefusal(const PartitionView& v) {
  std::string owner = v.epoch == 0 ? std::string("no owner has fenced the stream yet")
                                   : "the owner's epoch is " + std::to_string(v.epoch);
  return Api::Error(503, "standby",
                    "this node is a standby of " + PartitionName(v) + " (" + owner +
                        ", stream position " + std::to_string(v.position) +
                        " applied here): send writes to the owner, or take over with "
                        "POST /v1/cluster/takeover");
}

ApiResponse MovedRefusal(const PartitionView& v) {
  return Api::Error(503, "partition_moved",
                    PartitionName(v) + " moved: a newer owner fenced this node out (" +
                        v.moved_reason +
                        "); it serves nothing more for the partition, since its data may be "
                        "stale: ask the partition's current owner");
}

ApiResponse SwitchingRefusal(const PartitionView& v) {
  return Api::Error(503, "switching",
                    PartitionName(v) + " is being taken over by this node: retry in a moment");
}

// Every route, internal ones included, while the node's lease has lapsed (or it holds another
// lease than the one it was named owner under): the partition may have failed over already.
std::optional<ApiResponse> LapsedRefusal(
    const std::function<std::optional<std::string>()>& lease_lapsed, const PartitionView& v) {
  if (!lease_lapsed) return std::nullopt;
  std::optional<std::string> why = lease_lapsed();
  if (!why) return std::nullopt;
  return Api::Error(503, "partition_moved",
                    PartitionName(v) + " is not served by this node now: " + *why +
                        "; ask the partition's current owner");
}

// A path under /v1/cluster/ that matched no cluster row with this method. Its wording is the
// gate's own (no "(allowed: ...)"; the 404 names the cluster routes), kept byte for byte
// from before the cluster routes were rows of the route table.
ApiResponse ClusterMiss(std::string_view method, std::string_view path, const RouteLookup& found) {
  if (found.path_route) {
    ApiResponse r = Api::Error(405, "method_not_allowed",
                               std::string(method) + " is not allowed on " + std::string(path));
    r.allow = found.allow;
    return r;
  }
  std::vector<std::string_view> paths;
  for (const RouteSpec& spec : Routes()) {
    if (spec.cluster_only) paths.push_back(spec.path);
  }
  std::string names;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (i > 0) names += i + 1 == paths.size() ? " and " : ", ";
    names += paths[i];
  }
  return Api::Error(404, "not_found",
                    "no cluster route " + std::string(path) + " (this node answers " + names + ")");
}

}  // namespace

ClusterGate::ClusterGate(std::shared_ptr<cluster::PartitionState> state, Hooks hooks)
    : state_(std::move(state)), hooks_(std::move(hooks)) {}

std::optional<ApiResponse> ClusterGate::Intercept(const HandlerContext& ctx,
                                                  const ApiRequest& request,
                                                  std::string_view path,
                                                  const RouteLookup& found) {
  if (path.substr(0, kClusterPrefix.size()) == kClusterPrefix && !found.route) {
    return ClusterMiss(request.method, path, found);
  }
  if (IsInternalPath(path) && !found.route) {  // the router's calls (server/internal_handlers.h)
    const PartitionView view = state_->view();
    if (auto refused = LapsedRefusal(hooks_.lease_lapsed, view)) return refused;
    if (view.role == PartitionRole::kMoved) return MovedRefusal(view);
    if (view.role == PartitionRole::kStandby) return StandbyRefusal(view);
    if (view.role == PartitionRole::kSwitching) return SwitchingRefusal(view);
    return AnswerInternal(ctx, request, path);
  }
  if (!found.route) return std::nullopt;  // 404 / 405 as in any mode
  const RouteSpec& spec = Routes()[*found.route];
  // The cluster routes answer in every role (a moved node's digest refuses in Digest).
  if (spec.cluster_only) return std::nullopt;
  if (spec.path == "/healthz" || spec.path == "/metrics") return std::nullopt;
  const PartitionView view = state_->view();
  if (auto refused = LapsedRefusal(hooks_.lease_lapsed, view)) return refused;
  switch (view.role) {
    case PartitionRole::kOwner:
      if (hooks_.stepping_down && (spec.websocket || std::string_view(spec.method) == "GET")) {
        if (std::optional<std::string> why = hooks_.stepping_down()) {
          return Api::Error(503, "partition_moved",
                            PartitionName(view) + " is moving off this node: " + *why +
                                "; read from the partition's new owner");
        }
      }
      return std::nullopt;
    case PartitionRole::kMoved:
      return MovedRefusal(view);
    case PartitionRole::kSwitching:
      return SwitchingRefusal(view);
    case PartitionRole::kStandby:
      if (!StandbyReadable(spec) || !hooks_.with_snapshot) return StandbyRefusal(view);
      return FromSnapshot(ctx, request, found);
  }
  return std::nullopt;
}

ApiResponse ClusterGate::AnswerClusterRoute(ClusterRoute route, const HandlerContext& ctx,
                                            const ApiRequest& request) {
  const PartitionView view = state_->view();
  switch (route) {
    case ClusterRoute::kStatus:
      return StatusAnswer(view);
    case ClusterRoute::kDigest:
      if (view.role == PartitionRole::kMoved) return MovedRefusal(view);
      return Digest(ctx, view);
    case ClusterRoute::kTakeover:
      return Takeover(request, view);
  }
  return Api::Error(500, "internal", "unknown cluster route");
}

ApiResponse ClusterGate::StatusAnswer(const PartitionView& v) const {
  json::object o{{"partition", v.partition},
                 {"role", cluster::PartitionRoleName(v.role)},
                 {"epoch", v.epoch},
                 {"position", v.position}};
  if (v.role == PartitionRole::kOwner) o["takenOverAt"] = v.taken_over_at;
  if (v.role == PartitionRole::kMoved) o["movedReason"] = v.moved_reason;
  // The last cluster checkpoint this node wrote or restored (0: none since it started).
  o["checkpointPosition"] = v.checkpoint_position;
  return JsonResponse(200, o);
}

// The export's bytes are the projection-independent truth both roles must agree on; their
// SHA-256 lets two nodes be compared without shipping the export. An owner's position may
// move while it reads: compare digests when no writer runs.
ApiResponse ClusterGate::Digest(const HandlerContext& ctx, const PartitionView& view) const {
  ApiResponse exported;
  uint64_t position = view.position;
  if (view.role == PartitionRole::kStandby && hooks_.with_snapshot) {
    Status s = hooks_.with_snapshot([&](Engine& engine, uint64_t at) {
      HandlerContext snap{engine, ctx.options, nullptr, ctx.metrics, ctx.after_write,
                          ctx.services};
      exported = HandleExport(snap);
      position = at;
      return Status::OK();
    });
    if (!s.ok()) return StatusResponse(s);
  } else if (view.role == PartitionRole::kOwner) {
    exported = HandleExport(ctx);
  } else {
    return Api::Error(503, "switching", PartitionName(view) + " is being taken over: retry");
  }
  if (exported.status != 200) return exported;
  json::object o{{"partition", view.partition},
                 {"role", cluster::PartitionRoleName(view.role)},
                 {"position", position},
                 {"digest", log::HashHex(log::HashFrame(exported.body))},
                 {"bytes", exported.body.size()}};
  return JsonResponse(200, o);
}

namespace {

// The answer to a takeover request on a node in `view.role`, or nullopt for a standby.
std::optional<ApiResponse> RoleConflict(const PartitionView& view) {
  switch (view.role) {
    case PartitionRole::kOwner:
      return Api::Error(409, "already_owner",
                        "this node already owns " + PartitionName(view) + " (epoch " +
                            std::to_string(view.epoch) + ", taken over at stream position " +
                            std::to_string(view.taken_over_at) + ")");
    case PartitionRole::kMoved:
      return Api::Error(409, "partition_moved",
                        PartitionName(view) + " moved away from this node (" +
                            view.moved_reason +
                            "); restart it as a standby to follow the new owner");
    case PartitionRole::kSwitching:
      return Api::Error(409, "switching",
                        "a takeover of " + PartitionName(view) + " is already under way here");
    case PartitionRole::kStandby:
      break;
  }
  return std::nullopt;
}

}  // namespace

ApiResponse ClusterGate::Takeover(const ApiRequest& request, const PartitionView& view) const {
  ApiResponse bad;
  auto body = ParseBody(request.body, &bad, json::value(json::object{}));
  if (!body) return bad;
  if (!body->is_object()) {
    return Api::Error(400, "invalid_argument", "the takeover body must be a JSON object");
  }
  if (Status s = tools::CheckKnownFields(body->as_object(), {"partition"}); !s.ok()) {
    return StatusResponse(s);
  }
  if (const json::value* p = body->as_object().if_contains("partition")) {
    if (!p->is_int64() || p->as_int64() != static_cast<int64_t>(view.partition)) {
      return Api::Error(400, "invalid_argument",
                        "this node serves " + PartitionName(view) + ", not partition " +
                            json::serialize(*p));
    }
  }
  if (auto conflict = RoleConflict(view)) return *conflict;
  if (!hooks_.takeover) {
    return Api::Error(409, "not_standby", "this node cannot take " + PartitionName(view) + " over");
  }
  auto taken = hooks_.takeover();
  if (!taken.ok()) {
    // A concurrent takeover request won the race: the same 409 as had it come first.
    if (auto conflict = RoleConflict(state_->view())) return *conflict;
    return StatusResponse(taken.status());
  }
  json::object o{{"partition", view.partition},
                 {"role", "owner"},
                 {"epoch", taken->epoch},
                 {"position", taken->position}};
  return JsonResponse(200, o);
}

ApiResponse ClusterGate::FromSnapshot(const HandlerContext& ctx, const ApiRequest& request,
                                      const RouteLookup& found) const {
  ApiResponse out;
  Status s = hooks_.with_snapshot([&](Engine& engine, uint64_t) {
    HandlerContext snap{engine, ctx.options, nullptr, ctx.metrics, ctx.after_write, ctx.services};
    out = Routes()[*found.route].handle(snap, request, found.match);
    return Status::OK();
  });
  if (!s.ok()) return StatusResponse(s);
  return out;
}

}  // namespace statewatch::server
