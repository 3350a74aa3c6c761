#include "control/controller.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace statewatch::control {

namespace {

// A record of the cluster's directory, or nullopt (logged) when it does not decode: a bad
// record is skipped, so that one damaged key does not blind every node to the rest.
template <typename T>
std::optional<T> Decoded(const KeyValue& kv, Result<T> decoded) {
  if (decoded.ok()) return std::move(*decoded);
  spdlog::warn("event=bad_record key={} error=\"{}\"", kv.key, decoded.status().ToString());
  return std::nullopt;
}

// The partition a per-partition key names, or nullopt (logged, skipped) when it names none of
// the cluster's.
std::optional<uint32_t> PartitionKey(const KeyValue& kv, const std::string& suffix,
                                     uint32_t partitions) {
  auto p = ClusterKeys::PartitionOf(suffix, partitions);
  if (!p) {
    spdlog::warn("event=bad_record key={} error=\"not a partition of {}\"", kv.key, partitions);
  }
  return p;
}

}  // namespace

Result<ClusterView> ReadClusterView(EtcdClient& etcd, const ClusterKeys& keys) {
  auto all = etcd.Range(keys.Root());
  if (!all.ok()) return all.status();
  ClusterView view;
  view.revision = all->revision;
  for (const KeyValue& kv : all->kvs) {
    if (kv.key == keys.Config()) {
      auto p = DecodeClusterConfig(kv.value);
      if (!p.ok()) return p.status();
      view.partitions = *p;
    }
  }
  view.placement.partitions = view.partitions;
  for (const KeyValue& kv : all->kvs) {
    if (kv.key == keys.Controller()) {
      view.controller = kv.value;
      view.controller_create_revision = kv.create_revision;
      view.controller_lease = kv.lease;
    } else if (auto id = ClusterKeys::Suffix(kv.key, keys.NodesPrefix())) {
      auto record = Decoded(kv, DecodeNodeRecord(kv.value));
      if (!record) continue;
      record->lease = kv.lease;
      view.placement.nodes[*id] = std::move(*record);
    } else if (auto suffix = ClusterKeys::Suffix(kv.key, keys.AssignPrefix())) {
      auto p = PartitionKey(kv, *suffix, view.partitions);
      auto a = Decoded(kv, DecodeAssignment(kv.value));
      if (!p || !a) continue;
      a->epoch = kv.mod_revision;
      view.placement.assignments[*p] = std::move(*a);
    } else if (auto move = ClusterKeys::Suffix(kv.key, keys.MovesPrefix())) {
      auto p = PartitionKey(kv, *move, view.partitions);
      auto m = Decoded(kv, DecodeMoveRequest(kv.value));
      if (!p || !m) continue;
      view.placement.moves[*p] = m->to;
    } else if (auto node = ClusterKeys::Suffix(kv.key, keys.DrainsPrefix())) {
      auto d = Decoded(kv, DecodeDrainRequest(kv.value));
      if (!d) continue;
      view.placement.drains[*node] = d->lease;
    }
  }
  return view;
}

Controller::Controller(std::shared_ptr<EtcdClient> etcd, ClusterKeys keys, std::string node_id,
                       uint64_t warm_lag)
    : etcd_(std::move(etcd)),
      keys_(std::move(keys)),
      node_id_(std::move(node_id)),
      warm_lag_(warm_lag) {}

Result<bool> Controller::Campaign(const ClusterView& view, int64_t lease) {
  if (view.controller) {
    // Ours from an earlier round (or an earlier Controller object under the same lease).
    const bool ours = *view.controller == node_id_ && view.controller_lease == lease;
    election_revision_ = ours ? view.controller_create_revision : 0;
    return ours;
  }
  Compare absent;
  absent.key = keys_.Controller();
  absent.target = Compare::Target::kCreateRevision;
  absent.revision = 0;
  TxnOp put;
  put.key = keys_.Controller();
  put.value = node_id_;
  put.lease = lease;
  auto txn = etcd_->Txn({absent}, {put});
  if (!txn.ok()) return txn.status();
  if (!txn->succeeded) return false;
  election_revision_ = txn->revision;
  spdlog::info("event=controller_elected node={} revision={}", node_id_, txn->revision);
  return true;
}

Result<bool> Controller::Round(int64_t lease) {
  auto view = ReadClusterView(*etcd_, keys_);
  if (!view.ok()) return view.status();
  if (view->partitions == 0) return false;  // no node has written the config yet
  auto leads = Campaign(*view, lease);
  if (!leads.ok()) return leads.status();
  if (!*leads) {
    leading_ = false;
    return false;
  }
  if (!leading_.exchange(true)) spdlog::info("event=controller_leading node={}", node_id_);
  if (!view->controller) return true;  // elected in this round: plan on the next read
  view->placement.warm_lag = warm_lag_;
  PlacementPlan plan = Plan(view->placement);
  Status applied = Apply(plan);
  if (!applied.ok()) return applied;
  return leading_.load();
}

Status Controller::Apply(const PlacementPlan& plan) {
  Compare elected;
  elected.key = keys_.Controller();
  elected.target = Compare::Target::kCreateRevision;
  elected.revision = election_revision_;
  auto deposed = [this] {
    leading_ = false;
    spdlog::warn("event=controller_deposed node={}", node_id_);
    return Status::OK();
  };
  for (const PlacementChange& c : plan.changes) {
    Compare current;
    current.key = keys_.Assign(c.partition);
    current.target = Compare::Target::kModRevision;
    current.revision = c.expected_epoch;
    TxnOp put;
    put.key = keys_.Assign(c.partition);
    put.value = EncodeAssignment(c.next);
    auto txn = etcd_->Txn({elected, current}, {put});
    if (!txn.ok()) return txn.status();
    if (!txn->succeeded) {
      // Deposed, or the assignment changed meanwhile (the next round reads it)?
      auto key = etcd_->Get(keys_.Controller());
      if (!key.ok() || key->create_revision != election_revision_) return deposed();
      continue;
    }
    spdlog::info("event=assignment partition={} owner={} standby={} epoch={} reason={}",
                 c.partition, c.next.owner, c.next.standby.empty() ? "-" : c.next.standby,
                 txn->revision, c.reason);
  }
  auto remove = [&](const std::string& key, const char* what, const std::string& name) -> Status {
    TxnOp del;
    del.kind = TxnOp::Kind::kDelete;
    del.key = key;
    auto txn = etcd_->Txn({elected}, {del});
    if (!txn.ok()) return txn.status();
    if (!txn->succeeded) return deposed();
    spdlog::info("event={}_done {}", what, name);
    return Status::OK();
  };
  for (uint32_t p : plan.moves_done) {
    SW_RETURN_IF_ERROR(remove(keys_.Move(p), "move", "partition=" + std::to_string(p)));
  }
  for (const std::string& node : plan.drains_done) {
    SW_RETURN_IF_ERROR(remove(keys_.Drain(node), "drain", "node=" + node));
  }
  return Status::OK();
}

}  // namespace statewatch::control
