// Follower: a standby's follow loop inside a daemon — a Standby (cluster/standby.h) folded
// by a thread of its own every `interval` until stopped, keeping a PartitionState current.
// What `statewatch cluster follow` does in its own process, made to live beside an HTTP
// server: readers pause the fold (Paused) to see the directory between two frames, and a
// takeover stops it and closes the directory so that the owner's engine can open it.
//
// A fold error other than Corruption (a leader election, a lost connection) is retried on
// the next round; Corruption (a broken hash chain) stops the loop, keeps what was applied
// and is reported by last_error().
//
// Thread-safe.
#ifndef STATEWATCH_CLUSTER_FOLLOWER_H_
#define STATEWATCH_CLUSTER_FOLLOWER_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/partition_state.h"
#include "cluster/standby.h"
#include "log/checkpoint_store.h"
#include "log/log_backend.h"

namespace statewatch::cluster {

struct FollowerOptions {
  std::string path;  // the data directory
  std::shared_ptr<log::LogBackend> remote;
  uint32_t partition = 0;
  uint32_t partitions = 1;
  std::shared_ptr<PartitionState> state;  // required
  std::chrono::milliseconds interval{50};
  // Where a fold restores from when the stream is purged below what this node applied
  // (a standby that fell behind the owner's checkpoint); null: such a fold fails.
  std::shared_ptr<log::CheckpointStore> checkpoints;
};

class Follower {
 public:
  // Opens the directory, folds to the stream's tail once (its error is returned: a standby
  // that cannot reach its stream at start says so) and starts following.
  static Result<std::unique_ptr<Follower>> Start(const FollowerOptions& options);
  ~Follower();  // Stop()

  // Runs `fn` while no fold runs, with the applied state it sees. Fails with
  // FailedPrecondition once stopped.
  Status Paused(const std::function<Status(const AppliedState&)>& fn);

  // Stops the loop (waiting for a fold in progress) and closes the directory. Idempotent.
  void Stop();

  // The Corruption that stopped the loop; OK otherwise.
  Status last_error() const;

 private:
  Follower(const FollowerOptions& options, std::unique_ptr<Standby> standby);
  void Loop();

  const FollowerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::unique_ptr<Standby> standby_;  // null once stopped
  bool stopping_ = false;
  Status last_error_;
  std::thread thread_;
};

}  // namespace statewatch::cluster

#endif  // STATEWATCH_CLUSTER_FOLLOWER_H_
