#include "control/placement.h"

#include <optional>
#include <tuple>
#include <utility>

namespace statewatch::control {
namespace {

class Planner {
 public:
  explicit Planner(const PlacementInput& in) : in_(in), table_(in.assignments) {}

  PlacementPlan Run() {
    for (uint32_t p = 0; p < in_.partitions; ++p) PlanPartition(p);
    // Balancing waits while a move or drain is under way: it would undo the warm-up.
    if (plan_.changes.empty() && !waiting_) Balance();
    for (const auto& [node, lease] : in_.drains) {
      if (!Live(node) || in_.nodes.at(node).lease != lease) plan_.drains_done.push_back(node);
    }
    return std::move(plan_);
  }

 private:
  bool Live(const std::string& id) const { return !id.empty() && in_.nodes.count(id) != 0; }
  int64_t LeaseOf(const std::string& id) const { return in_.nodes.at(id).lease; }
  bool Draining(const std::string& id) const {
    auto it = in_.drains.find(id);
    return it != in_.drains.end() && Live(id) && LeaseOf(id) == it->second;
  }
  bool Eligible(const std::string& id) const { return Live(id) && !Draining(id); }

  std::pair<int, int> Load(const std::string& id) const {
    int owned = 0;
    int standing = 0;
    for (const auto& [p, a] : table_) {
      owned += a.owner == id;
      standing += a.standby == id;
    }
    return {owned, standing};
  }

  // The least loaded eligible node not in `exclude`; "" when there is none. A new owner is
  // picked by (owned, standbys, id), a new standby by (standbys, owned, id).
  std::string Pick(const std::string& exclude, bool for_standby) const {
    std::string best;
    std::tuple<int, int, std::string> best_key;
    for (const auto& [id, record] : in_.nodes) {
      if (id == exclude || !Eligible(id)) continue;
      auto [owned, standing] = Load(id);
      auto key = for_standby ? std::make_tuple(standing, owned, id)
                             : std::make_tuple(owned, standing, id);
      if (best.empty() || key < best_key) {
        best = id;
        best_key = key;
      }
    }
    return best;
  }

  // `target`'s slot of `p` is a standby fewer than warm_lag positions behind the owner's.
  bool Warm(uint32_t p, const Assignment& a, const std::string& target) const {
    if (!Live(target) || !Live(a.owner)) return false;
    const SlotReport* mine = in_.nodes.at(target).Slot(p);
    const SlotReport* owner = in_.nodes.at(a.owner).Slot(p);
    if (mine == nullptr || owner == nullptr || mine->role != "standby") return false;
    if (mine->position >= owner->position) return true;
    return owner->position - mine->position < in_.warm_lag;
  }

  void Change(uint32_t p, Assignment next, const char* reason) {
    auto it = table_.find(p);
    PlacementChange change;
    change.partition = p;
    change.expected_epoch = it == table_.end() ? 0 : it->second.epoch;
    change.next = next;
    change.reason = reason;
    next.epoch = change.expected_epoch;
    table_[p] = std::move(next);
    plan_.changes.push_back(std::move(change));
  }

  // Rule 4: standby first, then the promotion once the standby is warm.
  void StepToward(uint32_t p, const Assignment& a, const std::string& target,
                  const char* reason) {
    Assignment next = a;
    if (a.standby != target) {
      next.standby = target;
      Change(p, std::move(next), "warm-up");
      return;
    }
    if (!Warm(p, a, target)) {  // the next read may find it warm
      waiting_ = true;
      return;
    }
    next.owner = target;
    next.owner_lease = LeaseOf(target);
    next.standby = Eligible(a.owner) ? a.owner : Pick(target, /*for_standby=*/true);
    Change(p, std::move(next), reason);
  }

  // Rules 1 and 2: `owner`, under its lease, takes `p` with a new standby beside it.
  void OwnAfresh(uint32_t p, const std::string& owner, const char* reason) {
    Assignment next;
    next.owner = owner;
    next.owner_lease = LeaseOf(owner);
    next.standby = PickStandbyBeside(p, next);
    Change(p, std::move(next), reason);
  }

  void PlanPartition(uint32_t p) {
    auto it = table_.find(p);
    if (it == table_.end()) {  // rule 1
      std::string owner = Pick("", /*for_standby=*/false);
      if (owner.empty()) return;
      OwnAfresh(p, owner, "assign");
      return;
    }
    const Assignment a = it->second;
    if (!Live(a.owner) || LeaseOf(a.owner) != a.owner_lease) {  // rule 2
      // Availability first: a live standby is promoted even when it is draining.
      std::string owner = (a.standby != a.owner && Live(a.standby)) ? a.standby
                                                                     : Pick("", false);
      if (owner.empty()) return;  // no live node: nothing can serve it
      OwnAfresh(p, owner, "failover");
      return;
    }
    if (a.standby.empty() || a.standby == a.owner || !Eligible(a.standby)) {  // rule 3
      std::string standby = Pick(a.owner, /*for_standby=*/true);
      if (standby != a.standby) {
        Assignment next = a;
        next.standby = standby;
        Change(p, std::move(next), "standby");
        return;
      }
    }
    if (auto m = in_.moves.find(p); m != in_.moves.end()) {  // rule 4
      const std::string& target = m->second;
      if (!Eligible(target)) {  // gone or draining: the move (or its pin) ends
        plan_.moves_done.push_back(p);
        return;
      }
      if (target == a.owner) return;  // done; it stays as a pin the balancer respects
      StepToward(p, a, target, "move");
      return;
    }
    if (Draining(a.owner)) {
      std::string target = Eligible(a.standby) ? a.standby : Pick(a.owner, true);
      if (!target.empty()) StepToward(p, a, target, "drain");
    }
  }

  // A standby for `next` (its owner already chosen), counted as if `next` were in place.
  std::string PickStandbyBeside(uint32_t p, const Assignment& next) {
    auto saved = table_.find(p) == table_.end() ? std::optional<Assignment>()
                                                : std::optional<Assignment>(table_[p]);
    Assignment counted = next;
    counted.standby.clear();
    table_[p] = counted;
    std::string standby = Pick(next.owner, /*for_standby=*/true);
    if (saved) {
      table_[p] = *saved;
    } else {
      table_.erase(p);
    }
    return standby;
  }

  // The eligible nodes holding the most and the fewest owned partitions (`owners`) or
  // standbys. Ties: the highest id gives, the lowest id takes (ids iterate in order).
  struct Spread {
    std::string most, least;
    int most_n = -1, least_n = 0;
    bool Uneven() const { return !most.empty() && most != least && most_n - least_n >= 2; }
  };
  Spread SpreadOf(bool owners) const {
    Spread s;
    for (const auto& [id, record] : in_.nodes) {
      if (!Eligible(id)) continue;
      auto [owned, standing] = Load(id);
      const int n = owners ? owned : standing;
      if (s.most.empty() || n >= s.most_n) {
        s.most = id;
        s.most_n = n;
      }
      if (s.least.empty() || n < s.least_n) {
        s.least = id;
        s.least_n = n;
      }
    }
    return s;
  }

  // Rule 5: one step a round, owners before standbys; partitions a move pins stay put.
  void Balance() {
    const Spread owners = SpreadOf(/*owners=*/true);
    if (owners.Uneven()) {
      const Assignment* pick = nullptr;
      uint32_t pick_p = 0;
      for (const auto& [p, a] : table_) {  // prefer one whose standby is already `least`
        if (a.owner != owners.most || in_.moves.count(p) != 0) continue;
        if (pick == nullptr || (a.standby == owners.least && pick->standby != owners.least)) {
          pick = &a;
          pick_p = p;
        }
      }
      if (pick != nullptr) {
        const Assignment a = *pick;
        StepToward(pick_p, a, owners.least, "balance");
      }
      return;
    }
    const Spread standbys = SpreadOf(/*owners=*/false);
    if (!standbys.Uneven()) return;
    for (const auto& [p, a] : table_) {
      if (a.standby != standbys.most || a.owner == standbys.least || in_.moves.count(p) != 0) {
        continue;
      }
      Assignment next = a;
      next.standby = standbys.least;
      Change(p, std::move(next), "balance");
      return;
    }
  }

  const PlacementInput& in_;
  std::map<uint32_t, Assignment> table_;
  PlacementPlan plan_;
  bool waiting_ = false;  // a move waits for its target to warm up
};

}  // namespace

PlacementPlan Plan(const PlacementInput& input) { return Planner(input).Run(); }

}  // namespace statewatch::control
