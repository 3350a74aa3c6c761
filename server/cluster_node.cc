#include "server/cluster_node.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <utility>

#include "control/operator.h"
#include "server/access_control.h"
#include "server/internal_call.h"
#include "server/request_guard.h"
#include "server/session_mail_route.h"
#include "server/stream_relay.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

std::atomic<bool> signalled{false};
extern "C" void OnStopSignal(int) { signalled = true; }

}  // namespace

// One partition this node serves: the standby daemon (which becomes the owner's daemon on a
// takeover) and the thread running it.
struct ClusterNode::Slot {
  std::unique_ptr<StandbyDaemon> daemon;
  std::thread runner;
  std::atomic<bool> finished{false};
  // The lease this node held when it was named owner; 0 while a standby.
  std::shared_ptr<std::atomic<int64_t>> owner_lease = std::make_shared<std::atomic<int64_t>>(0);
  // Set while this owner hands the partition to the owner a newer assignment named: the
  // new owner's name. Empty otherwise. Read by the owner's gate.
  std::shared_ptr<std::mutex> handover_mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::string> handing_to = std::make_shared<std::string>();
  std::chrono::steady_clock::time_point handover_since;
  std::string url;
};

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
  ro.send = [](const std::string& url, const std::string& method, const std::string& target,
               const std::string& body, const net::HttpRequestOptions& call) {
    return net::HttpRequest(url, method, target, body, call);
  };
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
  control::Compare absent;
  absent.key = keys_.Config();
  absent.target = control::Compare::Target::kCreateRevision;
  absent.revision = 0;
  control::TxnOp put;
  put.key = keys_.Config();
  put.value = control::EncodeClusterConfig(options_.partitions);
  auto txn = etcd_->Txn({absent}, {put});
  if (!txn.ok()) return txn.status();
  if (txn->succeeded) return Status::OK();
  auto config = etcd_->Get(keys_.Config());
  if (!config.ok()) return config.status();
  auto partitions = control::DecodeClusterConfig(config->value);
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
  control::Compare absent;
  absent.key = key;
  absent.target = control::Compare::Target::kCreateRevision;
  absent.revision = 0;
  control::TxnOp put;
  put.key = key;
  put.value = *fresh;
  auto txn = etcd_->Txn({absent}, {put});
  if (!txn.ok()) return txn.status();
  if (txn->succeeded) {
    secret_ = *fresh;
    return Status::OK();
  }
  auto stored = etcd_->Get(key);
  if (!stored.ok()) return stored.status();
  if (stored->value.size() < kMinClusterSecretBytes) {
    return Status::FailedPrecondition("cluster \"" + options_.cluster + "\": " + key +
                                      " in etcd is not a secret (" +
                                      std::to_string(stored->value.size()) + " bytes)");
  }
  secret_ = stored->value;
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

std::vector<control::SlotReport> ClusterNode::Reports() {
  std::vector<control::SlotReport> out;
  std::lock_guard lock(slots_mu_);
  for (const auto& [p, slot] : slots_) {
    if (!slot->daemon) continue;
    const cluster::PartitionView v = slot->daemon->partition()->view();
    control::SlotReport r;
    r.partition = p;
    r.role = cluster::PartitionRoleName(v.role);
    r.url = slot->url;
    r.position = v.position;
    r.epoch = v.epoch;
    out.push_back(std::move(r));
  }
  return out;
}

Status ClusterNode::Publish() {
  control::NodeRecord record;
  record.id = options_.node_id;
  record.url = url_;
  record.slots = Reports();
  auto put = etcd_->Put(keys_.Node(options_.node_id), control::EncodeNodeRecord(record),
                        keeper_->lease());
  return put.status();
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
  // Session mail to another partition goes straight to that partition's owner slot (§15.8).
  SessionMailSenderOptions mail;
  mail.owner = [this](uint32_t to, bool refresh) { return OwnerOf(to, refresh); };
  mail.send = [](const std::string& url, const std::string& method, const std::string& target,
                 const std::string& body, const net::HttpRequestOptions& call) {
    return net::HttpRequest(url, method, target, body, call);
  };
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

void ClusterNode::ReconcileLoop() {
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

// Ready when the node holds its lease, has read the assignments, and owns — as a serving
// owner whose engine takes writes — every partition an assignment names it the owner of
// under its current lease. A partition it stands by for, or is handing over, does not count.
net::ListenerAnswer ClusterNode::Readiness() {
  json::object checks;
  std::string not_ready;
  auto fail = [&](const std::string& check, const std::string& why) {
    checks[check] = why;
    not_ready += (not_ready.empty() ? "" : "; ") + check + " " + why;
  };
  const control::LeaseHealth health = keeper_->health();
  checks["lease"] = control::LeaseHealthName(health);
  if (health != control::LeaseHealth::kHeld) fail("lease", control::LeaseHealthName(health));
  std::vector<uint32_t> should_own;
  bool read = false;
  {
    std::lock_guard lock(ready_mu_);
    should_own = should_own_;
    read = assignments_read_;
  }
  if (!read) fail("assignments", "not read from etcd yet");
  json::object partitions;
  {
    std::lock_guard lock(slots_mu_);  // a slot in the map is not being closed
    for (uint32_t p : should_own) {
      std::string state = "owned";
      auto it = slots_.find(p);
      Daemon* owner = it == slots_.end() || it->second->finished ? nullptr
                                                                 : it->second->daemon->owner();
      if (owner == nullptr) {
        state = "not owned yet (no serving owner slot)";
      } else if (auto stats = owner->engine().Stats(); !stats.ok()) {
        state = "storage unknown: " + stats.status().ToString();
      } else if (!stats->write_error.empty()) {
        state = "writes refused: " + stats->write_error;
      }
      partitions[std::to_string(p)] = state;
      if (state != "owned") fail("partition " + std::to_string(p), state);
    }
  }
  checks["partitions"] = std::move(partitions);
  json::object body{{"status", not_ready.empty() ? "ready" : "not_ready"},
                    {"node", options_.node_id},
                    {"checks", std::move(checks)}};
  if (not_ready.empty()) return {200, json::serialize(body)};
  body["error"] = json::object{{"code", "not_ready"}, {"message", "not ready: " + not_ready}};
  return {503, json::serialize(body)};
}

net::ListenerAnswer ClusterNode::Handle(const net::ListenerRequest& r) {
  const std::string path = r.target.substr(0, r.target.find('?'));
  // HEAD is GET without the body (the listener leaves it out).
  const std::string method = r.method == "HEAD" ? "GET" : r.method;
  // The node's own routes: /healthz and /readyz public, /v1/cluster/* admin. Any other
  // route goes to the partition's owner with the client's Authorization as sent: a known
  // token here, the route's scope there (its route table).
  const bool is_public = path == "/healthz" || path == "/readyz";
  if (!is_public) {
    const bool own = path.rfind("/v1/cluster/", 0) == 0;
    std::optional<Refusal> refused;
    if (own) {
      refused = access_->Check(r.authorization, auth::Scope::kAdmin, method, path);
    } else if (auto grant = access_->Authenticate(r.authorization);
               std::holds_alternative<Refusal>(grant)) {
      refused = std::get<Refusal>(std::move(grant));
    }
    if (refused) {
      net::ListenerAnswer a = JsonErrorAnswer(refused->status, refused->code, refused->message);
      if (refused->status == 401) a.headers.emplace_back("WWW-Authenticate", "Bearer");
      return a;
    }
  }
  if (path == "/readyz" && method == "GET") return Readiness();
  if (path == "/healthz" && method == "GET") {
    const control::LeaseHealth health = keeper_->health();
    return {200, json::serialize(json::object{
                     {"status", health == control::LeaseHealth::kHeld ? "ok" : "degraded"},
                     {"node", options_.node_id},
                     {"lease", control::LeaseHealthName(health)},
                     {"controller", controller_->leading()}})};
  }
  if (path == "/v1/cluster/status" && method == "GET") {
    auto view = control::ReadClusterView(*etcd_, keys_);
    if (!view.ok()) return JsonErrorAnswer(503, "unavailable", view.status().message());
    return {200, control::ClusterStatusJson(*view, options_.cluster)};
  }
  if ((path == "/v1/cluster/move" || path == "/v1/cluster/drain") && r.method == "POST") {
    boost::system::error_code ec;
    json::value body = json::parse(r.body, ec);
    if (ec || !body.is_object()) return JsonErrorAnswer(400, "invalid_json", "the body is not a JSON object");
    const json::object& o = body.as_object();
    control::WaitOptions wait;
    wait.cancel = &stop_;
    std::optional<Result<std::string>> answer;
    if (path == "/v1/cluster/move") {
      const json::value* p = o.if_contains("partition");
      const json::value* to = o.if_contains("to");
      if (p == nullptr || !p->is_int64() || p->as_int64() < 0 || to == nullptr ||
          !to->is_string()) {
        return JsonErrorAnswer(400, "invalid_argument",
                         "POST /v1/cluster/move needs {\"partition\": p, \"to\": \"NODE\"}");
      }
      answer = control::RequestMove(*etcd_, keys_, static_cast<uint32_t>(p->as_int64()),
                                  std::string(to->as_string()), wait);
    } else {
      const json::value* node = o.if_contains("node");
      if (node == nullptr || !node->is_string()) {
        return JsonErrorAnswer(400, "invalid_argument", "POST /v1/cluster/drain needs {\"node\": \"NODE\"}");
      }
      wait.timeout = std::chrono::milliseconds(120000);
      answer = control::RequestDrain(*etcd_, keys_, std::string(node->as_string()), wait);
    }
    if (answer->ok()) return {200, **answer};
    const Status s = answer->status();
    if (s.IsInvalidArgument()) return JsonErrorAnswer(400, "invalid_argument", s.message());
    if (s.IsNotFound()) return JsonErrorAnswer(404, "not_found", s.message());
    return JsonErrorAnswer(504, "timeout", s.message());
  }
  if (is_public || path.rfind("/v1/cluster/", 0) == 0) {
    return JsonErrorAnswer(405, "method_not_allowed", r.method + " " + path + " is not served here");
  }
  if ((path == "/v1/wakes" || path == "/v1/deliveries") && IsWebSocketUpgrade(r)) {
    net::ListenerAnswer upgrade;
    upgrade.take_socket = [this, r](int fd) {
      StreamRelayOptions o;
      o.partitions = options_.partitions;
      o.owner = [this](uint32_t p, bool refresh) { return OwnerOf(p, refresh); };
      // The client's own token upstream: the owner checks its scope (read, for a feed).
      o.token = std::string(BearerToken(r.authorization));
      o.stop = &stop_;
      o.now_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      };
      RelayStream(fd, r, o);
    };
    return upgrade;
  }
  // Any other route: the partition's owner answers it. A HEAD is asked as GET (routing
  // rules name GET, and an owner's HEAD answer announces a body it does not send, which the
  // forwarding client would read as a lost answer); the listener leaves the body out.
  if (r.method == "HEAD") {
    net::ListenerRequest get = r;
    get.method = "GET";
    return router_->Route(get);
  }
  // The watcher directory first lists where a watch's cursor goes; a reset or deletion of a
  // watcher runs as a saga at its home partition (server/watcher_sagas.h).
  if (auto refused = watchers_->BeforeForward(r)) return *refused;
  return watchers_->Remove(r, [&] { return router_->Route(r); });
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
