#include "control/lease_keeper.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace statewatch::control {

const char* LeaseHealthName(LeaseHealth health) {
  switch (health) {
    case LeaseHealth::kHeld: return "held";
    case LeaseHealth::kLapsed: return "lapsed";
    case LeaseHealth::kUnreachable: return "unreachable";
  }
  return "unknown";
}

LeaseKeeper::LeaseKeeper(std::shared_ptr<EtcdClient> etcd, int64_t ttl_seconds,
                         std::function<void(int64_t)> on_new_lease)
    : etcd_(std::move(etcd)), ttl_seconds_(ttl_seconds), on_new_lease_(std::move(on_new_lease)) {}

Result<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Start(
    std::shared_ptr<EtcdClient> etcd, int64_t ttl_seconds,
    std::function<void(int64_t)> on_new_lease) {
  if (ttl_seconds < 1) {
    return Status::InvalidArgument("--lease-ttl must be at least 1 second (got " +
                                   std::to_string(ttl_seconds) + ")");
  }
  std::unique_ptr<LeaseKeeper> k(new LeaseKeeper(std::move(etcd), ttl_seconds,
                                                 std::move(on_new_lease)));
  const auto sent = std::chrono::steady_clock::now();
  auto lease = k->etcd_->Grant(ttl_seconds);
  if (!lease.ok()) return lease.status();
  k->lease_ = *lease;
  k->held_until_ = sent + std::chrono::seconds(ttl_seconds);
  k->thread_ = std::thread([raw = k.get()] { raw->Loop(); });
  return k;
}

LeaseKeeper::~LeaseKeeper() { Stop(/*revoke=*/false); }

LeaseHealth LeaseKeeper::health() const {
  std::lock_guard lock(mu_);
  if (unreachable_) return LeaseHealth::kUnreachable;
  return std::chrono::steady_clock::now() < held_until_ ? LeaseHealth::kHeld
                                                        : LeaseHealth::kLapsed;
}

std::optional<std::string> LeaseKeeper::Lapsed() const {
  std::lock_guard lock(mu_);
  if (unreachable_) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  if (now < held_until_) return std::nullopt;
  const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - held_until_);
  return "its etcd lease " + std::to_string(lease_.load()) + " lapsed " +
         std::to_string(ago.count()) + " ms ago";
}

void LeaseKeeper::Stop(bool revoke) {
  {
    std::lock_guard lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (revoke) {
    if (Status s = etcd_->Revoke(lease_.load()); !s.ok()) {
      spdlog::warn("event=lease_revoke_failed lease={} error=\"{}\"", lease_.load(), s.ToString());
    }
  }
}

void LeaseKeeper::Loop() {
  const auto period = std::chrono::milliseconds(ttl_seconds_ * 1000 / 3);
  std::unique_lock lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    KeepAliveOnce();
    lock.lock();
  }
}

void LeaseKeeper::KeepAliveOnce() {
  const auto sent = std::chrono::steady_clock::now();
  auto ttl = etcd_->KeepAlive(lease_.load());
  if (ttl.ok()) {
    std::lock_guard lock(mu_);
    held_until_ = sent + std::chrono::seconds(*ttl);
    unreachable_ = false;
    return;
  }
  if (IsUnreachable(ttl.status())) {
    std::lock_guard lock(mu_);
    if (!unreachable_) {
      spdlog::warn("event=control_plane_unreachable lease={} error=\"{}\"", lease_.load(),
                   ttl.status().ToString());
    }
    unreachable_ = true;
    return;
  }
  {
    std::lock_guard lock(mu_);
    unreachable_ = false;  // a member answered
  }
  if (!ttl.status().IsNotFound()) {
    spdlog::warn("event=lease_keepalive_failed lease={} error=\"{}\"", lease_.load(),
                 ttl.status().ToString());
    return;
  }
  spdlog::warn("event=lease_lost lease={}: the node serves nothing it owned under it",
               lease_.load());
  const auto granted_at = std::chrono::steady_clock::now();
  auto fresh = etcd_->Grant(ttl_seconds_);
  if (!fresh.ok()) {
    spdlog::warn("event=lease_grant_failed error=\"{}\"", fresh.status().ToString());
    return;  // lapsed until a later round gets one
  }
  lease_ = *fresh;
  {
    std::lock_guard lock(mu_);
    held_until_ = granted_at + std::chrono::seconds(ttl_seconds_);
  }
  spdlog::info("event=lease_granted lease={}", *fresh);
  if (on_new_lease_) on_new_lease_(*fresh);
}

}  // namespace statewatch::control
