#include "config/guards_config.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

#include "config/config_readers.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// `o[key]`, when present, as an integer in [min, max] into `*out`.
Status Int(const json::object& o, const std::string& path, std::string_view key, int64_t min,
           int64_t max, int64_t* out) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return Status::OK();
  auto n = config_read::Int(*v, path + "." + std::string(key), min, max);
  if (!n.ok()) return n.status();
  *out = *n;
  return Status::OK();
}

// A token bucket's {"perMinute", "burst"}.
Status ApplyBucket(const json::value& v, const std::string& path, int64_t* per_minute,
                   int64_t* burst) {
  auto o = config_read::Object(v, path, {"perMinute", "burst"});
  if (!o.ok()) return o.status();
  SW_RETURN_IF_ERROR(Int(**o, path, "perMinute", 1, 600000, per_minute));
  return Int(**o, path, "burst", 0, 100000, burst);
}

}  // namespace

Status ApplyGuardsSection(const json::value& v, GuardOptions* out) {
  const std::string path = "guards";
  auto o = config_read::Object(
      v, path, {"enabled", "send", "repeat", "spawn", "openRuns", "maxTrackedKeys"});
  if (!o.ok()) return o.status();
  if (const json::value* enabled = (*o)->if_contains("enabled")) {
    auto b = config_read::Bool(*enabled, path + ".enabled");
    if (!b.ok()) return b.status();
    out->enabled = *b;
  }
  if (const json::value* send = (*o)->if_contains("send")) {
    SW_RETURN_IF_ERROR(ApplyBucket(*send, path + ".send", &out->send_per_minute, &out->send_burst));
  }
  if (const json::value* repeat = (*o)->if_contains("repeat")) {
    auto r = config_read::Object(*repeat, path + ".repeat", {"maxIdentical", "windowMs"});
    if (!r.ok()) return r.status();
    SW_RETURN_IF_ERROR(
        Int(**r, path + ".repeat", "maxIdentical", 0, 1000, &out->repeat_max_identical));
    SW_RETURN_IF_ERROR(
        Int(**r, path + ".repeat", "windowMs", 1, 7LL * 86400000, &out->repeat_window_ms));
  }
  if (const json::value* spawn = (*o)->if_contains("spawn")) {
    SW_RETURN_IF_ERROR(
        ApplyBucket(*spawn, path + ".spawn", &out->spawn_per_minute, &out->spawn_burst));
  }
  if (const json::value* runs = (*o)->if_contains("openRuns")) {
    auto r = config_read::Object(*runs, path + ".openRuns", {"maxPerSession"});
    if (!r.ok()) return r.status();
    SW_RETURN_IF_ERROR(
        Int(**r, path + ".openRuns", "maxPerSession", 0, 100000, &out->max_open_runs_per_session));
  }
  SW_RETURN_IF_ERROR(Int(**o, path, "maxTrackedKeys", 1, 10000000, &out->max_tracked_keys));
  return ValidateGuardOptions(*out);
}

json::object GuardsSectionToJson(const GuardOptions& o) {
  return json::object{
      {"enabled", o.enabled},
      {"send", json::object{{"perMinute", o.send_per_minute}, {"burst", o.send_burst}}},
      {"repeat",
       json::object{{"maxIdentical", o.repeat_max_identical}, {"windowMs", o.repeat_window_ms}}},
      {"spawn", json::object{{"perMinute", o.spawn_per_minute}, {"burst", o.spawn_burst}}},
      {"openRuns", json::object{{"maxPerSession", o.max_open_runs_per_session}}},
      {"maxTrackedKeys", o.max_tracked_keys}};
}

}  // namespace statewatch::tools
