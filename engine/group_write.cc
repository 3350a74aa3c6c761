#include "engine/group_write.h"


namespace statewatch::engine {

Result<std::optional<std::string>> GroupWrite::Get(storage::Family family,
                                                   std::string_view key) const {
  auto it = overlay_.values.find({family, std::string(key)});
  if (it != overlay_.values.end()) return it->second;
  for (const auto& [f, range] : overlay_.deleted_ranges) {
    if (f == family && key >= range.first && key < range.second) {
      return std::optional<std::string>();
    }
  }
  return store_.Get(family, key);
}

void GroupWrite::Put(storage::Family family, std::string_view key, std::string_view value) {
  batch_.Put(family, key, value);
  overlay_.values[{family, std::string(key)}] = std::string(value);
}

void GroupWrite::Delete(storage::Family family, std::string_view key) {
  batch_.Delete(family, key);
  overlay_.values[{family, std::string(key)}] = std::nullopt;
}

void GroupWrite::DeleteRange(storage::Family family, std::string_view begin, std::string_view end) {
  batch_.DeleteRange(family, begin, end);
  // Earlier writes of the range are gone too; a later Put shadows the range again.
  auto first = overlay_.values.lower_bound({family, std::string(begin)});
  auto last = overlay_.values.lower_bound({family, std::string(end)});
  overlay_.values.erase(first, last);
  overlay_.deleted_ranges.push_back({family, {std::string(begin), std::string(end)}});
}

void RegisterSideTables(SideTableHost& host) {
  RegisterRegistryDeleteStep(host);
  RegisterToolTableDeleteSteps(host);
}

}  // namespace statewatch::engine
