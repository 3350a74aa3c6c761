// The node's slots (one StandbyDaemon per partition it serves): opening, closing, taking
// over and handing over as the assignments say, and the owners' directory the router and
// the slots read.

#include "server/cluster_node.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "control/operator.h"
#include "server/session_mail_route.h"

namespace statewatch::server {

std::vector<control::SlotReport> ClusterNode::Reports() {
  std::vector<control::SlotReport> out;
  std::lock_guard lock(slots_mu_);
  for (const auto& [p, slot] : slots_) {
    if (!slot->daemon) continue;
    const cluster::PartitionView v = slot->daemon->partition()->view();
    control::SlotReport r;
    r.partition = p;
    r.role = cluster::PartitionRoleName(v.role);
    // Fenced but not yet bound: "owner" would send the control plane's readiness, the routers
    // and the old owner's handover to an address that refuses connections for now.
    if (v.role == cluster::PartitionRole::kOwner && slot->daemon->owner() == nullptr) {
      r.role = cluster::PartitionRoleName(cluster::PartitionRole::kSwitching);
    }
    r.url = slot->url;
    r.position = v.position;
    r.epoch = v.epoch;
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<std::string> ClusterNode::SlotLapsed(
    const std::shared_ptr<std::atomic<int64_t>>& owner_lease) const {
  const int64_t named = owner_lease->load();
  if (named != 0 && named != keeper_->lease()) {
    return "this node lost the etcd lease it was named owner under (" + std::to_string(named) +
           ")";
  }
  return keeper_->Lapsed();
}

Status ClusterNode::OpenSlot(uint32_t p) {
  auto logs = logs_.find(p);
  if (logs == logs_.end()) {
    auto opened = options_.open_partition(p);
    if (!opened.ok()) return opened.status();
    logs = logs_.emplace(p, std::move(*opened)).first;
  }
  auto slot = std::make_unique<Slot>();
  StandbyDaemonOptions so;
  so.server = options_.server;
  so.server.data_dir = options_.server.data_dir + "/p" + std::to_string(p);
  so.server.port = ports_.count(p) ? ports_[p] : 0;
  so.server.port_file.clear();  // the node's port goes there, not a slot's
  so.server.cluster_secret = secret_;
  // Session mail to another partition goes straight to that partition's owner slot
  // (docs/cluster-internals.md, "Session tools across partitions").
  SessionMailSenderOptions mail;
  mail.owner = [this](uint32_t to, bool refresh) { return OwnerOf(to, refresh); };
  mail.send = SendOverHttp;
  mail.token = options_.server.token;
  mail.secret = secret_;
  so.server.session_mail = [mail = std::move(mail)](const SessionMail& m) {
    return SendSessionMail(mail, m);
  };
  so.remote = logs->second.stream;
  so.log.partition = p;
  so.log.partitions = options_.partitions;
  so.log.node = options_.node_id;
  so.log.checkpoints = logs->second.checkpoints;
  so.log.checkpoint_every = options_.checkpoint_every;
  auto owner_lease = slot->owner_lease;
  so.lease_lapsed = [this, owner_lease] { return SlotLapsed(owner_lease); };
  so.stepping_down = [mu = slot->handover_mu, to = slot->handing_to]() -> std::optional<std::string> {
    std::lock_guard lock(*mu);
    if (to->empty()) return std::nullopt;
    return "its assignment names " + *to + " the owner";
  };
  so.owner_bound = [this] {  // publish "owner" now rather than at the next second's publish
    republish_ = true;
    wake_.notify_all();
  };
  auto daemon = StandbyDaemon::Open(so);
  if (!daemon.ok() && so.server.port != 0) {  // the old port was taken meanwhile
    so.server.port = 0;
    daemon = StandbyDaemon::Open(so);
  }
  if (!daemon.ok()) return daemon.status();
  slot->daemon = std::move(*daemon);
  ports_[p] = slot->daemon->port();
  slot->url = "http://" + options_.server.host + ":" + std::to_string(slot->daemon->port());
  Slot* raw = slot.get();
  slot->runner = std::thread([raw, p] {
    Status s = raw->daemon->Run();
    if (!s.ok()) spdlog::error("event=slot_failed partition={} error=\"{}\"", p, s.ToString());
    raw->finished = true;
  });
  spdlog::info("event=slot_open partition={} role=standby url={}", p, slot->url);
  std::lock_guard lock(slots_mu_);
  slots_[p] = std::move(slot);
  republish_ = true;
  return Status::OK();
}

void ClusterNode::CloseSlot(uint32_t p) {
  std::unique_ptr<Slot> slot;
  {
    std::lock_guard lock(slots_mu_);
    auto it = slots_.find(p);
    if (it == slots_.end()) return;
    slot = std::move(it->second);
    slots_.erase(it);
  }
  slot->daemon->Shutdown();
  if (slot->runner.joinable()) slot->runner.join();
  slot->daemon.reset();
  spdlog::info("event=slot_closed partition={}", p);
  republish_ = true;
}

void ClusterNode::MakeOwner(uint32_t p, const control::Assignment& a) {
  Slot* slot = nullptr;
  {
    std::lock_guard lock(slots_mu_);
    slot = slots_.at(p).get();
  }
  // Named before the fence, so the gate admits the new owner's requests only under this lease.
  slot->owner_lease->store(a.owner_lease);
  auto taken = slot->daemon->TakeOver(static_cast<uint64_t>(a.epoch));
  if (!taken.ok()) {
    slot->owner_lease->store(0);
    spdlog::warn("event=takeover_failed partition={} epoch={} error=\"{}\"", p, a.epoch,
                 taken.status().ToString());
    return;
  }
  spdlog::info("event=slot_owner partition={} assignment={} fence_epoch={} position={}", p,
               a.epoch, taken->epoch, taken->position);
  republish_ = true;
}

void ClusterNode::Reconcile() {
  auto view = control::ReadClusterView(*etcd_, keys_);
  if (!view.ok()) {
    if (!control::IsUnreachable(view.status())) {
      spdlog::warn("event=reconcile_failed error=\"{}\"", view.status().ToString());
    }
    return;  // keep serving as we are: nothing can be reassigned either
  }
  UpdateOwners(view->placement);
  const std::map<uint32_t, control::Assignment>& assignments = view->placement.assignments;
  const std::string& me = options_.node_id;
  const int64_t lease = keeper_->lease();
  {
    std::vector<uint32_t> should_own;
    for (const auto& [p, a] : assignments) {
      if (a.owner == me && a.owner_lease == lease) should_own.push_back(p);
    }
    std::lock_guard lock(ready_mu_);
    should_own_ = std::move(should_own);
    assignments_read_ = true;
  }
  for (uint32_t p = 0; p < options_.partitions && !stop_; ++p) {
    auto it = assignments.find(p);
    const bool owner = it != assignments.end() && it->second.owner == me &&
                       it->second.owner_lease == lease;
    const bool standby = it != assignments.end() &&
                         (it->second.standby == me || it->second.owner == me);
    cluster::PartitionRole role = cluster::PartitionRole::kStandby;
    bool present = false;
    bool finished = false;
    int64_t named_under = 0;
    {
      std::lock_guard lock(slots_mu_);
      auto s = slots_.find(p);
      if (s != slots_.end()) {
        present = true;
        role = s->second->daemon->partition()->view().role;
        finished = s->second->finished;
        named_under = s->second->owner_lease->load();
      }
    }
    if (present && finished) {  // its daemon stopped on its own (an error): start over
      CloseSlot(p);
      present = false;
    }
    if (present && role == cluster::PartitionRole::kOwner && named_under == lease && !owner &&
        it != assignments.end() && !HandedOver(p, it->second, view->placement)) {
      continue;  // a planned handover: serving writes until the new owner has fenced
    }
    if (!owner && !standby) {
      if (present) CloseSlot(p);
      continue;
    }
    // An owner slot stays while the node is still named owner under the lease it was named
    // under; any other non-standby slot (fenced out, handed over, named under a lease this
    // node no longer holds) is closed, and a fresh standby follows the new owner.
    const bool keep_owner = owner && role == cluster::PartitionRole::kOwner && named_under == lease;
    if (present && role != cluster::PartitionRole::kStandby && !keep_owner) {
      CloseSlot(p);
      present = false;
    }
    if (!present) {
      if (Status s = OpenSlot(p); !s.ok()) {
        spdlog::warn("event=slot_open_failed partition={} error=\"{}\"", p, s.ToString());
        continue;
      }
      role = cluster::PartitionRole::kStandby;
    }
    if (owner && role == cluster::PartitionRole::kStandby) MakeOwner(p, it->second);
  }
}

// An owner that a newer assignment replaced (under the lease it still holds) keeps taking
// writes until the new owner has fenced — it reports role owner for `p` under the new
// assignment — or this slot was fenced out, or a bounded wait (two lease TTLs) ran out.
// True once the slot may close.
bool ClusterNode::HandedOver(uint32_t p, const control::Assignment& a,
                             const control::PlacementInput& cluster) {
  Slot* slot = nullptr;
  {
    std::lock_guard lock(slots_mu_);
    slot = slots_.at(p).get();
  }
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(*slot->handover_mu);
    if (*slot->handing_to != a.owner) {
      *slot->handing_to = a.owner;
      slot->handover_since = now;
      spdlog::info("event=handover_begin partition={} to={} epoch={}", p, a.owner, a.epoch);
    }
  }
  auto next = cluster.nodes.find(a.owner);
  const control::SlotReport* report =
      next == cluster.nodes.end() ? nullptr : next->second.Slot(p);
  const bool fenced_by_next = report != nullptr && report->role == "owner" &&
                              next->second.lease == a.owner_lease &&
                              report->epoch >= static_cast<uint64_t>(a.epoch);
  const bool timed_out =
      now - slot->handover_since > std::chrono::seconds(2 * options_.lease_ttl_seconds);
  return fenced_by_next || timed_out ||
         slot->daemon->partition()->view().role != cluster::PartitionRole::kOwner;
}

void ClusterNode::UpdateOwners(const control::PlacementInput& cluster) {
  std::map<uint32_t, OwnerAddress> owners;
  for (const auto& [p, a] : cluster.assignments) {
    auto node = cluster.nodes.find(a.owner);
    if (node == cluster.nodes.end() || node->second.lease != a.owner_lease) continue;
    const control::SlotReport* slot = node->second.Slot(p);
    if (slot == nullptr || slot->role != "owner" || slot->url.empty()) continue;
    owners[p] = OwnerAddress{a.owner, slot->url};
  }
  std::lock_guard lock(owners_mu_);
  owners_ = std::move(owners);
}

std::optional<OwnerAddress> ClusterNode::OwnerOf(uint32_t partition, bool refresh) {
  if (refresh) {
    auto view = control::ReadClusterView(*etcd_, keys_);
    if (view.ok()) UpdateOwners(view->placement);
  }
  std::lock_guard lock(owners_mu_);
  auto it = owners_.find(partition);
  if (it == owners_.end()) return std::nullopt;
  return it->second;
}
}  // namespace statewatch::server
