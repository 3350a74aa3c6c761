#include "control/cluster_records.h"

#include <boost/json.hpp>

#include <charconv>

namespace statewatch::control {
namespace json = boost::json;

namespace {

Result<json::object> ParseObject(std::string_view text, const char* what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Status::Corruption(std::string(what) + " is not JSON: " + ec.message());
  if (!v.is_object()) return Status::Corruption(std::string(what) + " is not a JSON object");
  return std::move(v.as_object());
}

Result<std::string> StringField(const json::object& o, const char* name, const char* what,
                                bool required = true) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr) {
    if (!required) return std::string();
    return Status::Corruption(std::string(what) + " has no \"" + name + "\"");
  }
  if (!v->is_string()) {
    return Status::Corruption(std::string(what) + ": \"" + name + "\" is not a string");
  }
  return std::string(v->as_string());
}

// A non-negative integer field, written as a JSON number or (for 64-bit ids) a string.
Result<uint64_t> NumberField(const json::object& o, const char* name, const char* what,
                             bool required = true) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr) {
    if (!required) return uint64_t{0};
    return Status::Corruption(std::string(what) + " has no \"" + name + "\"");
  }
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64() && v->as_int64() >= 0) return static_cast<uint64_t>(v->as_int64());
  if (v->is_string()) {
    const json::string& s = v->as_string();
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return n;
  }
  return Status::Corruption(std::string(what) + ": \"" + name +
                            "\" is not a non-negative integer");
}

// Stores an OK field's value in `*out` (converted to its type); otherwise its status.
template <typename T, typename Out>
Status Into(Result<T> field, Out* out) {
  if (!field.ok()) return field.status();
  *out = static_cast<Out>(std::move(*field));
  return Status::OK();
}

}  // namespace

std::optional<std::string> ClusterKeys::Suffix(std::string_view key, std::string_view prefix) {
  if (key.substr(0, prefix.size()) != prefix) return std::nullopt;
  return std::string(key.substr(prefix.size()));
}

std::optional<uint32_t> ClusterKeys::PartitionOf(std::string_view suffix, uint32_t partitions) {
  uint32_t p = 0;
  auto [end, ec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), p);
  if (ec != std::errc() || end != suffix.data() + suffix.size() || suffix.empty()) {
    return std::nullopt;
  }
  if (p >= partitions) return std::nullopt;
  return p;
}

Status ValidateNodeId(std::string_view id) {
  bool ok = !id.empty() && id.size() <= 64;
  for (char c : id) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    ok = ok && allowed;
  }
  if (ok) return Status::OK();
  return Status::InvalidArgument("--node-id must be 1 to 64 characters of A-Z a-z 0-9 . _ - (got \"" +
                                 std::string(id) + "\")");
}

const SlotReport* NodeRecord::Slot(uint32_t partition) const {
  for (const SlotReport& s : slots) {
    if (s.partition == partition) return &s;
  }
  return nullptr;
}

std::string EncodeNodeRecord(const NodeRecord& record) {
  json::array slots;
  for (const SlotReport& s : record.slots) {
    slots.push_back(json::object{{"partition", s.partition},
                                 {"role", s.role},
                                 {"url", s.url},
                                 {"position", s.position},
                                 {"epoch", s.epoch}});
  }
  return json::serialize(
      json::object{{"id", record.id}, {"url", record.url}, {"partitions", std::move(slots)}});
}

Result<NodeRecord> DecodeNodeRecord(std::string_view text) {
  constexpr const char* kWhat = "node record";
  auto o = ParseObject(text, kWhat);
  if (!o.ok()) return o.status();
  NodeRecord r;
  SW_RETURN_IF_ERROR(Into(StringField(*o, "id", kWhat), &r.id));
  SW_RETURN_IF_ERROR(Into(StringField(*o, "url", kWhat), &r.url));
  const json::value* slots = o->if_contains("partitions");
  if (slots == nullptr || !slots->is_array()) {
    return Status::Corruption("node record: \"partitions\" is not an array");
  }
  for (const json::value& v : slots->as_array()) {
    if (!v.is_object()) return Status::Corruption("node record: a partition is not an object");
    const json::object& s = v.as_object();
    SlotReport slot;
    SW_RETURN_IF_ERROR(Into(NumberField(s, "partition", kWhat), &slot.partition));
    SW_RETURN_IF_ERROR(Into(StringField(s, "role", kWhat), &slot.role));
    SW_RETURN_IF_ERROR(Into(StringField(s, "url", kWhat), &slot.url));
    SW_RETURN_IF_ERROR(Into(NumberField(s, "position", kWhat), &slot.position));
    SW_RETURN_IF_ERROR(Into(NumberField(s, "epoch", kWhat), &slot.epoch));
    r.slots.push_back(std::move(slot));
  }
  return r;
}

std::string EncodeAssignment(const Assignment& a) {
  return json::serialize(json::object{{"owner", a.owner},
                                      {"ownerLease", std::to_string(a.owner_lease)},
                                      {"standby", a.standby}});
}

Result<Assignment> DecodeAssignment(std::string_view text) {
  constexpr const char* kWhat = "assignment";
  auto o = ParseObject(text, kWhat);
  if (!o.ok()) return o.status();
  Assignment a;
  SW_RETURN_IF_ERROR(Into(StringField(*o, "owner", kWhat), &a.owner));
  SW_RETURN_IF_ERROR(Into(NumberField(*o, "ownerLease", kWhat), &a.owner_lease));
  SW_RETURN_IF_ERROR(Into(StringField(*o, "standby", kWhat, /*required=*/false), &a.standby));
  return a;
}

std::string EncodeMoveRequest(const MoveRequest& request) {
  return json::serialize(json::object{{"to", request.to}});
}

Result<MoveRequest> DecodeMoveRequest(std::string_view text) {
  auto o = ParseObject(text, "move request");
  if (!o.ok()) return o.status();
  auto to = StringField(*o, "to", "move request");
  if (!to.ok()) return to.status();
  return MoveRequest{std::move(*to)};
}

std::string EncodeDrainRequest(const DrainRequest& request) {
  return json::serialize(json::object{{"lease", std::to_string(request.lease)}});
}

Result<DrainRequest> DecodeDrainRequest(std::string_view text) {
  auto o = ParseObject(text, "drain request");
  if (!o.ok()) return o.status();
  auto lease = NumberField(*o, "lease", "drain request");
  if (!lease.ok()) return lease.status();
  return DrainRequest{static_cast<int64_t>(*lease)};
}

std::string EncodeClusterConfig(uint32_t partitions) {
  return json::serialize(json::object{{"partitions", partitions}});
}

Result<uint32_t> DecodeClusterConfig(std::string_view text) {
  auto o = ParseObject(text, "cluster config");
  if (!o.ok()) return o.status();
  auto p = NumberField(*o, "partitions", "cluster config");
  if (!p.ok()) return p.status();
  if (*p < 1 || *p > 65535) {
    return Status::Corruption("cluster config: \"partitions\" " + std::to_string(*p) +
                              " is not from 1 to 65535");
  }
  return static_cast<uint32_t>(*p);
}

}  // namespace statewatch::control
