#include "log/mem_log.h"

#include <algorithm>
#include <chrono>

namespace statewatch::log {
namespace {

std::string Describe(const AppendOptions& o) {
  return "expected_last " + std::to_string(o.expected_last) +
         (o.dedupe_id.empty() ? std::string() : ", id \"" + o.dedupe_id + "\"");
}

}  // namespace

MemLog::MemLog(MemLogOptions options)
    : options_(std::move(options)), rng_(options_.faults.seed), faults_(options_.faults) {}

int64_t MemLog::NowMs() const {
  if (options_.clock) return options_.clock->NowMs();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool MemLog::Roll(double probability) {
  if (probability <= 0) return false;
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < probability;
}

void MemLog::SetFaults(const MemLogFaults& faults) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_ = faults;
  rng_.seed(faults.seed);
}

MemLog::Counters MemLog::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

Result<LogPosition> MemLog::Append(std::string_view data, const AppendOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  RedeliverPendingLocked();
  if (Roll(faults_.lose_request)) {
    ++counters_.lost_requests;
    return Status::IOError("MemLog fault: the append request was lost (" + Describe(options) +
                           "); outcome unknown to the caller");
  }
  Request request{std::string(data),
                  options.writes ? std::string(options.writes->Serialized()) : std::string(),
                  options};
  request.options.writes = nullptr;
  Result<LogPosition> result = ApplyLocked(request);
  if (result.ok() && Roll(faults_.redeliver)) pending_redelivery_ = std::move(request);
  if (Roll(faults_.lose_ack)) {
    ++counters_.lost_acks;
    return Status::IOError("MemLog fault: the answer to the append was lost (" + Describe(options) +
                           "); outcome unknown to the caller");
  }
  return result;
}

void MemLog::RedeliverPendingLocked() {
  if (!pending_redelivery_) return;
  // The duplicate's answer goes nowhere, as a transport retry's would.
  Result<LogPosition> ignored = ApplyLocked(*pending_redelivery_);
  (void)ignored;
  pending_redelivery_.reset();
  ++counters_.redelivered;
}

Result<LogPosition> MemLog::ApplyLocked(const Request& request) {
  const int64_t now = NowMs();
  ExpireDedupeLocked(now);
  const AppendOptions& o = request.options;
  // Dedupe before the CAS, as JetStream does: a retried append that already landed gets its
  // position back even though the tail has moved past it.
  if (!o.dedupe_id.empty()) {
    auto it = dedupe_.find(o.dedupe_id);
    if (it != dedupe_.end()) {
      ++counters_.deduplicated;
      return it->second.first;
    }
  }
  const LogPosition tail = first_ + records_.size() - 1;
  if (o.expected_last != tail) {
    ++counters_.cas_rejected;
    return Status::FailedPrecondition("append refused: the log's last position is " +
                                      std::to_string(tail) + ", not the expected " +
                                      std::to_string(o.expected_last) +
                                      " (another writer appended: this writer is fenced)");
  }
  if (options_.capacity_bytes != 0 &&
      bytes_ + request.data.size() + request.writes.size() > options_.capacity_bytes) {
    return Status::NoSpace("log full: " + std::to_string(bytes_) + " of " +
                           std::to_string(options_.capacity_bytes) + " bytes used, record of " +
                           std::to_string(request.data.size()) + " bytes refused");
  }
  records_.push_back(request.data);
  writes_.push_back(request.writes);
  bytes_ += request.data.size() + request.writes.size();
  ++counters_.appended;
  const LogPosition position = tail + 1;
  if (!o.dedupe_id.empty()) {
    dedupe_[o.dedupe_id] = {position, now};
    dedupe_order_.emplace_back(now, o.dedupe_id);
  }
  return position;
}

void MemLog::ExpireDedupeLocked(int64_t now_ms) {
  while (!dedupe_order_.empty() &&
         now_ms - dedupe_order_.front().first >= options_.dedupe_window_ms) {
    auto it = dedupe_.find(dedupe_order_.front().second);
    if (it != dedupe_.end() && it->second.second == dedupe_order_.front().first) {
      dedupe_.erase(it);
    }
    dedupe_order_.pop_front();
  }
}

Result<std::vector<LogRecord>> MemLog::ReadFrom(LogPosition from, std::size_t max_records) {
  std::lock_guard<std::mutex> lock(mu_);
  const LogPosition start = std::max<LogPosition>(from, 1);
  if (start < first_) {
    return Status::NotFound("log position " + std::to_string(start) +
                            " was purged: the log starts at " + std::to_string(first_));
  }
  std::vector<LogRecord> out;
  const LogPosition end = first_ + records_.size();  // one past the tail
  for (LogPosition p = start; p < end && out.size() < max_records; ++p) {
    out.push_back({p, records_[p - first_], writes_[p - first_]});
  }
  return out;
}

Result<LogPosition> MemLog::Tail() {
  std::lock_guard<std::mutex> lock(mu_);
  return first_ + records_.size() - 1;
}

Status MemLog::PurgeBelow(LogPosition position) {
  std::lock_guard<std::mutex> lock(mu_);
  const LogPosition end = first_ + records_.size();
  if (position > end) {
    return Status::InvalidArgument("cannot purge below position " + std::to_string(position) +
                                   ": the log's last position is " + std::to_string(end - 1));
  }
  while (first_ < position) {
    bytes_ -= records_.front().size() + writes_.front().size();
    records_.pop_front();
    writes_.pop_front();
    ++first_;
  }
  return Status::OK();
}

}  // namespace statewatch::log
