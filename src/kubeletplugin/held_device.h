// A device a claim holds on the node, as the device exclusivity rule
// (Options::device_exclusivity) sees it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dra::kubeletplugin::internal {

struct HeldDevice {
  std::string pool{};
  std::string device{};
  std::optional<std::string> share_id{};  // the allocation's, when the device allows several
  bool admin_access = false;
  // The physical units it occupies (DeviceExclusivityOptions::units), sorted
  // and distinct; empty: only itself.
  std::vector<std::string> units{};

  bool operator==(const HeldDevice&) const = default;
};

}  // namespace dra::kubeletplugin::internal
