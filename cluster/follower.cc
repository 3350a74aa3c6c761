#include "cluster/follower.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace statewatch::cluster {

Result<std::unique_ptr<Follower>> Follower::Start(const FollowerOptions& options) {
  if (!options.state) return Status::InvalidArgument("Follower: options.state is null");
  FoldOptions fold;
  fold.checkpoints = options.checkpoints;
  fold.state = options.state;
  auto standby = Standby::Open(options.path, options.remote, options.partition,
                               options.partitions, std::move(fold));
  if (!standby.ok()) return standby.status();
  SW_RETURN_IF_ERROR((*standby)->CatchUp());
  const AppliedState& a = (*standby)->applied();
  options.state->Followed(a.position, a.chain.fence_epoch);
  std::unique_ptr<Follower> f(new Follower(options, std::move(*standby)));
  f->thread_ = std::thread([raw = f.get()] { raw->Loop(); });
  return f;
}

Follower::Follower(const FollowerOptions& options, std::unique_ptr<Standby> standby)
    : options_(options), standby_(std::move(standby)) {}

Follower::~Follower() { Stop(); }

void Follower::Loop() {
  // Named so that a profile (and scripts/cluster-scaling-bench.py, reading
  // /proc/<pid>/task/*/comm) can tell a node's standby folds from its owner's work.
  pthread_setname_np(pthread_self(), "sw-standby");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    Status st = standby_->CatchUp();
    const AppliedState& a = standby_->applied();
    options_.state->Followed(a.position, a.chain.fence_epoch);
    if (st.code() == Status::Code::kCorruption) {
      spdlog::error("event=follow_stopped partition={} position={} error=\"{}\"",
                    options_.partition, a.position, st.ToString());
      last_error_ = st;
      return;  // what was applied stays; the directory stays open for reads
    }
    if (!st.ok()) spdlog::warn("event=follow_retry error=\"{}\"", st.ToString());
    wake_.wait_for(lock, options_.interval, [this] { return stopping_; });
  }
}

Status Follower::Paused(const std::function<Status(const AppliedState&)>& fn) {
  std::lock_guard lock(mu_);
  if (!standby_) {
    return Status::FailedPrecondition("partition " + std::to_string(options_.partition) +
                                      ": this node no longer follows the stream");
  }
  return fn(standby_->applied());
}

void Follower::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  standby_.reset();  // releases the directory's lock
}

Status Follower::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

}  // namespace statewatch::cluster
