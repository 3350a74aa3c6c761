// cluster_smoke_model: the reference model's pending notices for one partition's operation
// log, for scripts/cluster-smoke.sh's checker ("pending notices equal to what the model
// test's reference model gives for the same log").
//
//   cluster_smoke_model [--drains] OPLOG NOW_MS WATCHER...
//
// OPLOG is JSON lines, in the order the partition applied them (the smoke's load driver is
// the partition's only writer and runs one request at a time, so its order is the log's):
//   {"op": "watch", "watcher": W, "target": T}
//   {"op": "record", "session": S, "kind": K, "actorType": A, "summary": X,
//    "dedupeKey"?: D, "watchers"?: [W...], "sequence": the engine's sequence}
//   {"op": "drain", "watcher": W, "id"?: anything, echoed with --drains}
//   {"op": "sweep"}                      (a takeover: the new owner's restart sweep)
// An event whose outcome the driver never learned must be resolved by the caller first
// (kept with the sequence the engine gave it, or dropped when it never landed).
//
// Prints one JSON object: {"<watcher>": [notice, ...], ...} for each WATCHER, each notice as
// GET /v1/notices shows it ({"targetSessionKey", "contextKey", "text"}), oldest first.
//
// With --drains it prints {"pending": that object, "drains": [...]} instead, one entry per
// drain line, in the log's order: {"line": its line number, "watcher": W, "id": the line's
// "id" as given (null without one), "notices": [notice, ...]} — the notices that drain
// acknowledged (the cursors it moved), as the drain's answer shows them. A checker compares
// them with what each drain delivered (scripts/cluster-chaos.py): a cursor that moved without
// its notice reaching the client is a lost notice. Without the flag the output is as above.
//
// Sequences: the model numbers its own operations 1, 2, 3, … while a partition of a
// cluster numbers n·P + p. A notice names a cursor's last-seen position, which is always
// a target's head — an event's sequence — so the model's event sequences are mapped to the
// engine's (the "sequence" of each record line) and the text is rebuilt with the engine's.
// A record whose model sequence the engine did not give it in the same order is reported:
// the model and the log disagree on the events themselves.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "engine/model/spec_rules.h"
#include "engine/reference_model.h"

namespace json = boost::json;
using statewatch::EventInput;
using statewatch::Notice;
using statewatch::ParseActorType;
using statewatch::Sequence;
using statewatch::SessionName;
using statewatch::model::ModelContextKey;
using statewatch::model::ModelNoticeText;
using statewatch::model::ReferenceModel;

namespace {

int Fail(const std::string& why) {
  std::cerr << "cluster_smoke_model: " << why << "\n";
  return 2;
}

std::string Str(const json::object& o, const char* name) {
  const json::value* v = o.if_contains(name);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_drains = argc > 1 && std::string(argv[1]) == "--drains";
  if (with_drains) {  // the rest as without it
    --argc;
    ++argv;
  }
  if (argc < 4) return Fail("usage: cluster_smoke_model [--drains] OPLOG NOW_MS WATCHER...");
  std::ifstream in(argv[1]);
  if (!in) return Fail(std::string("cannot read ") + argv[1]);
  const int64_t now = std::stoll(argv[2]);

  ReferenceModel model;
  std::map<Sequence, Sequence> engine_seq{{0, 0}};  // model's event sequence -> engine's
  // A notice as the engine shows it: its text names the engine's sequence for the model's.
  auto render = [&](const Notice& n, json::object* out) -> bool {
    auto mapped = engine_seq.find(n.since);
    if (mapped == engine_seq.end()) return false;
    *out = json::object{{"targetSessionKey", n.target.session_key},
                        {"contextKey", ModelContextKey(n.target.session_key)},
                        {"text", ModelNoticeText(n.target.session_key, mapped->second)}};
    return true;
  };
  json::array drains;  // --drains: what each drain line acknowledged
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) return Fail("line " + std::to_string(line_no) + ": not a JSON object");
    const json::object& o = v.as_object();
    const std::string op = Str(o, "op");
    if (op == "watch") {
      if (!model.Watch(Str(o, "watcher"), SessionName{"", Str(o, "target")}, now)) {
        return Fail("line " + std::to_string(line_no) + ": the model refuses the watch");
      }
    } else if (op == "record") {
      EventInput e;
      e.session_key = Str(o, "session");
      e.kind = Str(o, "kind");
      auto actor = ParseActorType(Str(o, "actorType"));
      if (!actor) return Fail("line " + std::to_string(line_no) + ": bad actorType");
      e.actor_type = *actor;
      e.summary = Str(o, "summary");
      e.dedupe_key = Str(o, "dedupeKey");
      if (const json::value* w = o.if_contains("watchers"); w && w->is_array()) {
        for (const json::value& x : w->as_array()) e.watchers.emplace_back(x.as_string());
      }
      e.occurred_at_ms = now;
      auto r = model.RecordMany({e}, now);
      if (!r.ok()) return Fail("line " + std::to_string(line_no) + ": the model refuses the event");
      const json::value* seq = o.if_contains("sequence");
      if (!seq || !seq->is_int64()) {
        return Fail("line " + std::to_string(line_no) + ": a record needs the engine's sequence");
      }
      const Sequence engine = static_cast<Sequence>(seq->as_int64());
      auto [it, fresh] = engine_seq.emplace(r->front().event.sequence, engine);
      if (!fresh && it->second != engine) {
        return Fail("line " + std::to_string(line_no) + ": the model deduplicated this event to " +
                    "the one the engine numbered " + std::to_string(it->second) +
                    ", the engine answered " + std::to_string(engine));
      }
    } else if (op == "drain") {
      auto acknowledged = model.Drain(Str(o, "watcher"), now);
      if (!acknowledged.ok()) {
        return Fail("line " + std::to_string(line_no) + ": the model refuses the drain");
      }
      if (with_drains) {
        json::array list;
        for (const Notice& n : *acknowledged) {
          json::object notice;
          if (!render(n, &notice)) {
            return Fail("line " + std::to_string(line_no) + ": a drained notice names model " +
                        "sequence " + std::to_string(n.since) + ", which is no event's");
          }
          list.emplace_back(std::move(notice));
        }
        const json::value* id = o.if_contains("id");
        drains.emplace_back(json::object{{"line", line_no},
                                         {"watcher", Str(o, "watcher")},
                                         {"id", id != nullptr ? *id : json::value()},
                                         {"notices", std::move(list)}});
      }
    } else if (op == "sweep") {
      model.Sweep(now);
    } else {
      return Fail("line " + std::to_string(line_no) + ": unknown op \"" + op + "\"");
    }
  }

  json::object out;
  for (int i = 3; i < argc; ++i) {
    auto notices = model.PendingNotices(argv[i]);
    if (!notices.ok()) return Fail(std::string("bad watcher ") + argv[i]);
    json::array list;
    for (const Notice& n : *notices) {
      json::object notice;
      if (!render(n, &notice)) {
        return Fail("a notice names model sequence " + std::to_string(n.since) +
                    ", which is no event's");
      }
      list.emplace_back(std::move(notice));
    }
    out[argv[i]] = std::move(list);
  }
  if (with_drains) {
    out = json::object{{"pending", std::move(out)}, {"drains", std::move(drains)}};
  }
  std::cout << json::serialize(out) << "\n";
  return 0;
}
