#include "control/operator.h"

#include <boost/json.hpp>

#include <thread>

namespace statewatch::control {
namespace json = boost::json;

namespace {

json::value UrlOf(const ClusterView& view, const std::string& node, uint32_t partition) {
  auto it = view.placement.nodes.find(node);
  if (it == view.placement.nodes.end()) return nullptr;
  const SlotReport* slot = it->second.Slot(partition);
  if (slot == nullptr) return nullptr;
  return json::value(slot->url);
}

const SlotReport* SlotOf(const ClusterView& view, const std::string& node, uint32_t partition) {
  auto it = view.placement.nodes.find(node);
  return it == view.placement.nodes.end() ? nullptr : it->second.Slot(partition);
}

bool PartitionReady(const ClusterView& view, uint32_t p, const Assignment& a) {
  const SlotReport* owner = SlotOf(view, a.owner, p);
  auto owner_node = view.placement.nodes.find(a.owner);
  // The owner's fence epoch is not compared with the assignment's: an assignment that only
  // names a new standby gets a new mod_revision without a new fence.
  if (owner == nullptr || owner->role != "owner" || owner_node->second.lease != a.owner_lease) {
    return false;
  }
  if (a.standby.empty()) return true;
  const SlotReport* standby = SlotOf(view, a.standby, p);
  return standby != nullptr && standby->role == "standby";
}

std::string LeaseHex(int64_t lease) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(lease));
  return buf;
}

// Polls the cluster view until `done` says so; IOError naming `what` on timeout.
Result<ClusterView> WaitFor(EtcdClient& etcd, const ClusterKeys& keys, const WaitOptions& options,
                            const std::function<bool(const ClusterView&)>& done,
                            const std::function<std::string(const ClusterView&)>& where) {
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  Status last = Status::OK();
  std::optional<ClusterView> seen;
  for (;;) {
    auto view = ReadClusterView(etcd, keys);
    if (view.ok()) {
      if (done(*view)) return std::move(*view);
      seen = std::move(*view);
    } else {
      last = view.status();
    }
    if (std::chrono::steady_clock::now() >= deadline ||
        (options.cancel != nullptr && options.cancel->load())) {
      std::string now = seen ? where(*seen) : "etcd not read: " + last.ToString();
      return Status::IOError("not done within " + std::to_string(options.timeout.count()) +
                             " ms (" + now + "); the request stays with the controller");
    }
    std::this_thread::sleep_for(options.poll);
  }
}

Result<ClusterView> LiveView(EtcdClient& etcd, const ClusterKeys& keys) {
  auto view = ReadClusterView(etcd, keys);
  if (!view.ok()) return view.status();
  if (view->partitions == 0) {
    return Status::NotFound("no cluster is registered under " + keys.Root() +
                            " (no node has started)");
  }
  return view;
}

}  // namespace

std::string ClusterStatusJson(const ClusterView& view, const std::string& cluster) {
  json::array nodes;
  for (const auto& [id, record] : view.placement.nodes) {
    json::array slots;
    for (const SlotReport& s : record.slots) {
      slots.push_back(json::object{{"partition", s.partition}, {"role", s.role},
                                   {"url", s.url}, {"position", s.position},
                                   {"epoch", s.epoch}});
    }
    nodes.push_back(json::object{{"id", id}, {"url", record.url},
                                 {"lease", LeaseHex(record.lease)},
                                 {"partitions", std::move(slots)}});
  }
  json::array partitions;
  for (uint32_t p = 0; p < view.partitions; ++p) {
    auto it = view.placement.assignments.find(p);
    if (it == view.placement.assignments.end()) {
      partitions.push_back(json::object{{"partition", p}, {"owner", nullptr},
                                        {"standby", nullptr}, {"epoch", 0},
                                        {"ready", false}});
      continue;
    }
    const Assignment& a = it->second;
    const SlotReport* owner = SlotOf(view, a.owner, p);
    const SlotReport* standby = a.standby.empty() ? nullptr : SlotOf(view, a.standby, p);
    json::object o{{"partition", p},
                   {"owner", a.owner},
                   {"standby", a.standby.empty() ? json::value(nullptr) : json::value(a.standby)},
                   {"epoch", a.epoch},
                   {"fenceEpoch", owner ? json::value(owner->epoch) : json::value(nullptr)},
                   {"ownerUrl", UrlOf(view, a.owner, p)},
                   {"standbyUrl", a.standby.empty() ? json::value(nullptr)
                                                    : UrlOf(view, a.standby, p)}};
    o["position"] = owner ? json::value(owner->position) : json::value(nullptr);
    o["standbyPosition"] = standby ? json::value(standby->position) : json::value(nullptr);
    if (owner && standby) {
      o["lag"] = owner->position > standby->position ? owner->position - standby->position : 0;
    } else {
      o["lag"] = nullptr;
    }
    o["ready"] = PartitionReady(view, p, a);
    partitions.push_back(std::move(o));
  }
  json::array moves;
  for (const auto& [p, to] : view.placement.moves) {
    moves.push_back(json::object{{"partition", p}, {"to", to}});
  }
  json::array drains;
  for (const auto& [node, lease] : view.placement.drains) drains.push_back(json::value(node));
  json::object out{{"cluster", cluster},
                   {"revision", view.revision},
                   {"controller", view.controller ? json::value(*view.controller)
                                                  : json::value(nullptr)},
                   {"partitionCount", view.partitions},
                   {"nodes", std::move(nodes)},
                   {"partitions", std::move(partitions)},
                   {"moves", std::move(moves)},
                   {"drains", std::move(drains)}};
  return json::serialize(out);
}

bool ClusterReady(const ClusterView& view) {
  if (view.partitions == 0) return false;
  std::size_t eligible = 0;  // live and not draining: a standby can be found among them
  for (const auto& [id, record] : view.placement.nodes) {
    auto d = view.placement.drains.find(id);
    eligible += d == view.placement.drains.end() || d->second != record.lease;
  }
  const bool want_standby = eligible >= 2;
  for (uint32_t p = 0; p < view.partitions; ++p) {
    auto it = view.placement.assignments.find(p);
    if (it == view.placement.assignments.end()) return false;
    if (want_standby && it->second.standby.empty()) return false;
    if (!PartitionReady(view, p, it->second)) return false;
  }
  return true;
}

Result<std::string> RequestMove(EtcdClient& etcd, const ClusterKeys& keys, uint32_t partition,
                                const std::string& to, const WaitOptions& options) {
  auto view = LiveView(etcd, keys);
  if (!view.ok()) return view.status();
  if (partition >= view->partitions) {
    return Status::InvalidArgument("--partition " + std::to_string(partition) +
                                   " must be below the cluster's " +
                                   std::to_string(view->partitions) + " partitions");
  }
  if (view->placement.nodes.count(to) == 0) {
    return Status::NotFound("node \"" + to + "\" is not a live member of the cluster");
  }
  auto put = etcd.Put(keys.Move(partition), EncodeMoveRequest(MoveRequest{to}));
  if (!put.ok()) return put.status();
  auto done = WaitFor(
      etcd, keys, options,
      [&](const ClusterView& v) {
        auto a = v.placement.assignments.find(partition);
        return a != v.placement.assignments.end() && a->second.owner == to &&
               PartitionReady(v, partition, a->second);
      },
      [&](const ClusterView& v) {
        auto a = v.placement.assignments.find(partition);
        if (a == v.placement.assignments.end()) return std::string("no assignment");
        return "owner " + a->second.owner + ", standby " +
               (a->second.standby.empty() ? "none" : a->second.standby);
      });
  if (!done.ok()) {
    return Status::IOError("the move of partition " + std::to_string(partition) + " to " + to +
                           " was " + done.status().message());
  }
  const Assignment& a = done->placement.assignments.at(partition);
  return json::serialize(json::object{{"partition", partition}, {"owner", a.owner},
                                      {"standby", a.standby.empty() ? json::value(nullptr)
                                                                    : json::value(a.standby)},
                                      {"epoch", a.epoch}});
}

Result<std::string> RequestDrain(EtcdClient& etcd, const ClusterKeys& keys,
                                 const std::string& node, const WaitOptions& options) {
  auto view = LiveView(etcd, keys);
  if (!view.ok()) return view.status();
  auto it = view->placement.nodes.find(node);
  if (it == view->placement.nodes.end()) {
    return Status::NotFound("node \"" + node + "\" is not a live member of the cluster");
  }
  auto put = etcd.Put(keys.Drain(node), EncodeDrainRequest(DrainRequest{it->second.lease}));
  if (!put.ok()) return put.status();
  auto holds = [&](const ClusterView& v) {
    int n = 0;
    for (const auto& [p, a] : v.placement.assignments) n += (a.owner == node) + (a.standby == node);
    return n;
  };
  auto done = WaitFor(
      etcd, keys, options, [&](const ClusterView& v) { return holds(v) == 0 && ClusterReady(v); },
      [&](const ClusterView& v) {
        return "node " + node + " still holds " + std::to_string(holds(v)) + " roles";
      });
  if (!done.ok()) {
    return Status::IOError("the drain of node " + node + " was " + done.status().message());
  }
  return json::serialize(json::object{{"node", node}, {"partitions", 0}});
}

}  // namespace statewatch::control
