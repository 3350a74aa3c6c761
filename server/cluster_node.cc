// The node's lifecycle: start (etcd, the cluster's config and secret, the lease, the port),
// the reconcile / controller / saga threads, publishing the node record, and shutdown. The
// slots: server/cluster_node_slots.cc; the node's own port: server/cluster_node_port.cc.

#include "server/cluster_node.h"

#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <utility>

#include "control/operator.h"
#include "server/access_control.h"
#include "server/internal_call.h"

namespace statewatch::server {

namespace {

std::atomic<bool> signalled{false};
extern "C" void OnStopSignal(int) { signalled = true; }

// Writes `value` at `key` unless the key exists (one transaction); the value there after it:
// `value`, or what an earlier node wrote.
Result<std::string> CreateOrRead(control::EtcdClient& etcd, const std::string& key,
                                 const std::string& value) {
  control::Compare absent;
  absent.key = key;
  absent.target = control::Compare::Target::kCreateRevision;
  absent.revision = 0;
  control::TxnOp put;
  put.key = key;
  put.value = value;
  auto txn = etcd.Txn({absent}, {put});
  if (!txn.ok()) return txn.status();
  if (txn->succeeded) return value;
  auto stored = etcd.Get(key);
  if (!stored.ok()) return stored.status();
  return std::move(stored->value);
}

}  // namespace

ClusterNode::ClusterNode(ClusterNodeOptions options)
    : options_(std::move(options)),
      keys_(options_.cluster),
      access_(std::make_unique<AccessControl>(options_.server)) {}

Result<std::unique_ptr<ClusterNode>> ClusterNode::Start(ClusterNodeOptions options) {
  SW_RETURN_IF_ERROR(control::ValidateNodeId(options.node_id));
  SW_RETURN_IF_ERROR(ValidateServerOptions(options.server));
  if (!options.open_partition) return Status::InvalidArgument("ClusterNode: no open_partition");
  if (options.partitions < 1) return Status::InvalidArgument("--partitions must be at least 1");
  std::unique_ptr<ClusterNode> n(new ClusterNode(std::move(options)));
  control::EtcdOptions eo;
  eo.endpoints = n->options_.etcd;
  auto etcd = control::EtcdClient::Make(eo);
  if (!etcd.ok()) return etcd.status();
  n->etcd_ = std::move(*etcd);
  SW_RETURN_IF_ERROR(n->CheckConfig());
  SW_RETURN_IF_ERROR(n->LoadSecret());
  SW_RETURN_IF_ERROR(n->WaitForOldRecord());
  ClusterNode* raw = n.get();
  auto keeper = control::LeaseKeeper::Start(n->etcd_, n->options_.lease_ttl_seconds,
                                            [raw](int64_t) {
                                              raw->republish_ = true;
                                              raw->wake_.notify_all();
                                            });
  if (!keeper.ok()) return keeper.status();
  n->keeper_ = std::move(*keeper);
  n->controller_ = std::make_unique<control::Controller>(n->etcd_, n->keys_, n->options_.node_id,
                                                         n->options_.warm_lag);
  PartitionRouterOptions ro;
  ro.partitions = n->options_.partitions;
  ro.owner = [raw](uint32_t p, bool refresh) { return raw->OwnerOf(p, refresh); };
  ro.send = SendOverHttp;
  ro.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  ro.secret = n->secret_;  // signs the internal calls (server/internal_call.h)
  WatcherCoordinatorOptions wo;
  wo.partitions = ro.partitions;
  wo.owner = ro.owner;
  wo.send = ro.send;
  wo.sleep = ro.sleep;
  wo.token = n->options_.server.token;
  wo.secret = n->secret_;
  n->watchers_ = std::make_unique<WatcherCoordinator>(std::move(wo));
  ro.watcher_partitions = [raw](const std::string& watcher) {
    return raw->watchers_->NoticePartitions(watcher);
  };
  n->router_ = std::make_unique<PartitionRouter>(std::move(ro));
  net::ListenerLimits limits;
  limits.max_connections = 256;
  limits.max_body = n->options_.server.body_limit_bytes;
  auto listener = net::HttpListener::Bind(
      n->options_.server.host, n->options_.server.port,
      [raw](const net::ListenerRequest& r) { return raw->Handle(r); }, limits);
  if (!listener.ok()) return listener.status();
  n->listener_ = std::move(*listener);
  n->url_ = "http://" + n->options_.server.host + ":" + std::to_string(n->listener_->port());
  std::error_code ec;
  std::filesystem::create_directories(n->options_.server.data_dir, ec);
  if (ec) {
    return Status::IOError("cannot create " + n->options_.server.data_dir + ": " + ec.message());
  }
  if (!n->options_.server.port_file.empty()) {
    // Written whole, then renamed: a reader never sees half a number.
    const std::string& file = n->options_.server.port_file;
    {
      std::ofstream out(file + ".tmp", std::ios::trunc);
      out << n->listener_->port() << "\n";
      if (!out) return Status::IOError("cannot write --port-file " + file);
    }
    std::filesystem::rename(file + ".tmp", file, ec);
    if (ec) return Status::IOError("cannot write --port-file " + file + ": " + ec.message());
  }
  SW_RETURN_IF_ERROR(n->Publish());
  spdlog::info("event=node_started node={} url={} lease={} partitions={}", n->options_.node_id,
               n->url_, n->keeper_->lease(), n->options_.partitions);
  n->reconciler_ = std::thread([raw] { raw->ReconcileLoop(); });
  n->controller_thread_ = std::thread([raw] { raw->ControllerLoop(); });
  n->sagas_thread_ = std::thread([raw] {
    while (!raw->stop_) {
      {
        std::unique_lock lock(raw->wait_mu_);
        raw->wake_.wait_for(lock, std::chrono::seconds(1), [raw] { return raw->stop_.load(); });
      }
      if (raw->stop_) break;
      raw->watchers_->ResumeOnce([raw](uint32_t p) {
        auto owner = raw->OwnerOf(p, false);
        return owner && owner->node == raw->options_.node_id;
      });
    }
  });
  return n;
}

ClusterNode::~ClusterNode() { Shutdown(); }

Status ClusterNode::CheckConfig() {
  auto config = CreateOrRead(*etcd_, keys_.Config(),
                             control::EncodeClusterConfig(options_.partitions));
  if (!config.ok()) return config.status();
  auto partitions = control::DecodeClusterConfig(*config);
  if (!partitions.ok()) return partitions.status();
  if (*partitions != options_.partitions) {
    return Status::FailedPrecondition("cluster \"" + options_.cluster + "\" has " +
                                      std::to_string(*partitions) +
                                      " partitions in etcd; this node was started with "
                                      "--partitions " + std::to_string(options_.partitions));
  }
  return Status::OK();
}

// The key of the cluster's internal calls: --cluster-secret-file's (ServerOptions), else the
// one in etcd beside the config, which the first node to get here creates.
Status ClusterNode::LoadSecret() {
  if (!options_.server.cluster_secret.empty()) {
    secret_ = options_.server.cluster_secret;
    return Status::OK();
  }
  const std::string key = keys_.Root() + "secret";
  auto fresh = GenerateClusterSecret();
  if (!fresh.ok()) return fresh.status();
  auto stored = CreateOrRead(*etcd_, key, *fresh);
  if (!stored.ok()) return stored.status();
  if (stored->size() < kMinClusterSecretBytes) {
    return Status::FailedPrecondition("cluster \"" + options_.cluster + "\": " + key +
                                      " in etcd is not a secret (" +
                                      std::to_string(stored->size()) + " bytes)");
  }
  secret_ = std::move(*stored);
  return Status::OK();
}

// A record of this id left by an earlier run (kill -9) goes when its lease expires; one
// still there after a TTL and a half is kept alive by a running node.
Status ClusterNode::WaitForOldRecord() {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(options_.lease_ttl_seconds * 1500 + 1000);
  bool logged = false;
  for (;;) {
    auto record = etcd_->Get(keys_.Node(options_.node_id));
    if (!record.ok() && record.status().IsNotFound()) return Status::OK();
    if (!record.ok()) return record.status();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::FailedPrecondition("node id \"" + options_.node_id +
                                        "\" is registered by a running node (its lease " +
                                        std::to_string(record->lease) +
                                        " is kept alive); give this node another --node-id");
    }
    if (!logged) {
      spdlog::info("event=node_waiting node={}: an earlier run's record is still registered; "
                   "waiting for its lease to expire", options_.node_id);
      logged = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}
Status ClusterNode::Publish() {
  control::NodeRecord record;
  record.id = options_.node_id;
  record.url = url_;
  record.slots = Reports();
  auto put = etcd_->Put(keys_.Node(options_.node_id), control::EncodeNodeRecord(record),
                        keeper_->lease());
  return put.status();
}void ClusterNode::ReconcileLoop() {
  auto last_publish = std::chrono::steady_clock::time_point{};
  while (!stop_) {
    Reconcile();
    const auto now = std::chrono::steady_clock::now();
    if (republish_.exchange(false) || now - last_publish >= std::chrono::seconds(1)) {
      if (Status s = Publish(); !s.ok()) {
        republish_ = true;
        if (!control::IsUnreachable(s)) {
          spdlog::warn("event=publish_failed error=\"{}\"", s.ToString());
        }
      } else {
        last_publish = now;
      }
    }
    std::unique_lock lock(wait_mu_);
    wake_.wait_for(lock, options_.poll, [this] { return stop_.load() || republish_.load(); });
  }
}

void ClusterNode::ControllerLoop() {
  while (!stop_) {
    auto leads = controller_->Round(keeper_->lease());
    if (!leads.ok() && !control::IsUnreachable(leads.status())) {
      spdlog::warn("event=controller_round_failed error=\"{}\"", leads.status().ToString());
    }
    std::unique_lock lock(wait_mu_);
    wake_.wait_for(lock, options_.poll, [this] { return stop_.load(); });
  }
}
void ClusterNode::Run() {
  std::unique_lock lock(wait_mu_);
  while (!stop_ && !signalled) {
    wake_.wait_for(lock, std::chrono::milliseconds(100));
  }
  lock.unlock();
  Shutdown();
}

void ClusterNode::Shutdown() {
  if (stop_.exchange(true)) return;
  wake_.notify_all();
  if (reconciler_.joinable()) reconciler_.join();
  if (controller_thread_.joinable()) controller_thread_.join();
  if (sagas_thread_.joinable()) sagas_thread_.join();
  if (listener_) listener_->Stop();
  std::vector<uint32_t> open;
  {
    std::lock_guard lock(slots_mu_);
    for (const auto& [p, slot] : slots_) open.push_back(p);
  }
  for (uint32_t p : open) CloseSlot(p);
  if (keeper_) keeper_->Stop(/*revoke=*/true);
  spdlog::info("event=node_stopped node={}", options_.node_id);
}

void ClusterNode::HandleSignals() {
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
}

}  // namespace statewatch::server
