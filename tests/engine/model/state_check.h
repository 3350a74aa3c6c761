// Compares everything an Engine can be asked about a universe of sessions with the
// ReferenceModel's answers: state versions, every journal page, every cursor, every
// watcher's pending notices and the totals of Stats().
//
// Not thread-safe.
#ifndef STATEWATCH_TESTS_ENGINE_MODEL_STATE_CHECK_H_
#define STATEWATCH_TESTS_ENGINE_MODEL_STATE_CHECK_H_

#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "engine/model/ops.h"
#include "engine/reference_model.h"
#include "statewatch/engine.h"

namespace statewatch::model {

// Collects differences, at most a few dozen lines.
class Differences {
 public:
  void Add(const std::string& what, const std::string& engine, const std::string& model) {
    if (lines_.size() < 40)
      lines_.push_back(what + "\n    engine: " + engine + "\n    model:  " + model);
  }
  template <typename T>
  void Expect(const std::string& what, const T& engine, const T& model) {
    if (!(engine == model)) Add(what, Str(engine), Str(model));
  }
  bool empty() const { return lines_.empty(); }
  ::testing::AssertionResult Result() const {
    if (lines_.empty()) return ::testing::AssertionSuccess();
    auto r = ::testing::AssertionFailure();
    for (const std::string& l : lines_) r << l << "\n";
    return r;
  }

 private:
  template <typename T>
  static std::string Str(const T& v) {
    if constexpr (std::is_same_v<T, std::string>)
      return v;
    else
      return std::to_string(v);
  }
  std::vector<std::string> lines_;
};

// Every event of the session, page by page with the largest page (bounded).
inline Result<std::vector<Event>> AllEvents(const Engine& engine, const SessionName& s) {
  std::vector<Event> out;
  Sequence after = 0;
  for (int pages = 0; pages < 1000; ++pages) {
    auto page = engine.ChangesSince(s, after, kMaxPageLimit);
    if (!page.ok()) return page.status();
    for (const Event& e : page->events) out.push_back(e);
    if (!page->truncated || page->events.empty()) return out;
    after = page->events.back().sequence;
  }
  return Status::Corruption("more than 1000 pages");
}

inline std::vector<Event> AllEvents(const ReferenceModel& model, const SessionName& s) {
  std::vector<Event> out;
  Sequence after = 0;
  for (;;) {
    ChangesPage page = model.ChangesSince(s, after, kMaxPageLimit);
    for (const Event& e : page.events) out.push_back(e);
    if (!page.truncated) return out;
    after = page.events.back().sequence;
  }
}

inline std::string DescribeEvents(const std::vector<Event>& events) {
  std::string out = "[";
  for (const Event& e : events) out += " {" + DescribeEvent(e) + "}";
  return out + " ]";
}

inline void CompareJournal(const Engine& engine, const ReferenceModel& model, const SessionName& s,
                           Differences& d) {
  std::string name = DescribeName(s);
  auto first = engine.ChangesSince(s, 0, kMaxPageLimit);
  if (!first.ok()) return d.Add("ChangesSince " + name, first.status().ToString(), "OK");
  ChangesPage want = model.ChangesSince(s, 0, kMaxPageLimit);
  first->events.clear();
  want.events.clear();
  d.Expect("page header of " + name, DescribePage(*first), DescribePage(want));
  auto events = AllEvents(engine, s);
  if (!events.ok()) return d.Add("events of " + name, events.status().ToString(), "OK");
  d.Expect("events of " + name, DescribeEvents(*events), DescribeEvents(AllEvents(model, s)));
}

inline void CompareWatcher(const Engine& engine, const ReferenceModel& model, const std::string& w,
                           const Universe& u, Differences& d) {
  auto pending = engine.PendingNotices(w);
  auto want = model.PendingNotices(w);
  if (!pending.ok()) return d.Add("PendingNotices " + w, pending.status().ToString(), "OK");
  std::string got_text, want_text;
  for (const Notice& n : *pending) got_text += " {" + DescribeNotice(n) + "}";
  for (const Notice& n : *want) want_text += " {" + DescribeNotice(n) + "}";
  d.Expect("pending notices of " + w, got_text, want_text);
  for (const SessionName& t : u.sessions) {
    auto c = engine.Cursor(w, t);
    if (!c.ok()) return d.Add("Cursor " + w, c.status().ToString(), "OK");
    d.Expect("cursor " + w + " -> " + DescribeName(t), DescribeCursor(*c),
             DescribeCursor(*model.Cursor(w, t)));
  }
}

inline void CompareTotals(const Engine& engine, const ReferenceModel& model, Differences& d) {
  auto stats = engine.Stats();
  if (!stats.ok()) return d.Add("Stats", stats.status().ToString(), "OK");
  d.Expect("last sequence", stats->last_sequence, model.last_sequence());
  d.Expect("journal rows", stats->journal_rows, model.journal_rows());
  d.Expect("sessions with a head", stats->sessions, model.head_count());
  d.Expect("cursors", stats->cursors, model.cursor_count());
  d.Expect("pending notices", stats->pending_notices, model.pending_count());
  // Pulse() is Stats()'s cheap subset: the same figures.
  auto pulse = engine.Pulse();
  if (!pulse.ok()) return d.Add("Pulse", pulse.status().ToString(), "OK");
  d.Expect("pulse: last sequence", pulse->last_sequence, stats->last_sequence);
  d.Expect("pulse: pending notices", pulse->pending_notices, stats->pending_notices);
  d.Expect("pulse: notices opened", pulse->notices_opened, stats->notices_opened);
  d.Expect("pulse: wakes sent", pulse->wakes_sent, stats->wakes_sent);
  d.Expect("pulse: write error", pulse->write_error, stats->write_error);
}

// The whole observable state of the universe.
inline ::testing::AssertionResult SameState(const Engine& engine, const ReferenceModel& model,
                                            const Universe& u) {
  Differences d;
  CompareTotals(engine, model, d);
  auto versions = engine.StateVersions(u.sessions);
  if (!versions.ok()) return ::testing::AssertionFailure() << versions.status().ToString();
  for (std::size_t i = 0; i < u.sessions.size(); ++i) {
    d.Expect("state version of " + DescribeName(u.sessions[i]), (*versions)[i],
             model.StateVersion(u.sessions[i]));
  }
  for (const SessionName& s : u.sessions) CompareJournal(engine, model, s, d);
  for (const std::string& w : u.watcher_keys) CompareWatcher(engine, model, w, u, d);
  return d.Result();
}

}  // namespace statewatch::model

#endif  // STATEWATCH_TESTS_ENGINE_MODEL_STATE_CHECK_H_
