#include "kubeletplugin/device_exclusivity.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace dra::kubeletplugin::internal {
namespace {

HeldDevice Held(std::string pool, std::string device, std::optional<std::string> share_id, bool admin_access,
                const DeviceUnits& units) {
  HeldDevice held{std::move(pool), std::move(device), std::move(share_id), admin_access};
  if (units) {
    held.units = units(held.pool, held.device);
    std::sort(held.units.begin(), held.units.end());
    held.units.erase(std::unique(held.units.begin(), held.units.end()), held.units.end());
  }
  return held;
}

// A held device without a pool is one known from a CDI spec alone (a
// quarantined claim's, or an adopted one's): it is the device of that name in
// any pool, and its allocation was shared when the other one is (a device
// either allows multiple allocations, each with a shareID, or not).
bool SameDevice(const HeldDevice& a, const HeldDevice& b) {
  return (a.pool == b.pool || a.pool.empty() || b.pool.empty()) && a.device == b.device;
}

// A unit both occupy, or nullopt.
std::optional<std::string> SharedUnit(const HeldDevice& a, const HeldDevice& b) {
  std::vector<std::string> shared;
  std::set_intersection(a.units.begin(), a.units.end(), b.units.begin(), b.units.end(), std::back_inserter(shared));
  if (shared.empty()) return std::nullopt;
  return shared.front();
}

}  // namespace

std::vector<HeldDevice> HeldDevicesOf(const k8s::ResourceClaim& claim, const DeviceUnits& units) {
  std::vector<HeldDevice> held;
  if (!claim.status.allocation.has_value()) return held;
  for (const k8s::DeviceRequestAllocationResult& result : claim.status.allocation->devices.results) {
    held.push_back(Held(result.pool, result.device, result.share_id, result.admin_access.value_or(false), units));
  }
  return held;
}

std::vector<HeldDevice> HeldDevicesOf(std::span<const Device> prepared, const DeviceUnits& units) {
  std::vector<HeldDevice> held;
  for (const Device& device : prepared) {
    held.push_back(Held(device.pool_name, device.device_name, device.share_id, /*admin_access=*/false, units));
  }
  return held;
}

std::vector<std::string> HoldKeys(std::span<const HeldDevice> devices) {
  std::vector<std::string> keys;
  for (const HeldDevice& device : devices) {
    if (device.admin_access) continue;
    keys.push_back(absl::StrCat(device.share_id.has_value() ? "share:" : "device:", device.device));
    for (const std::string& unit : device.units) keys.push_back(absl::StrCat("unit:", unit));
  }
  return keys;
}

std::vector<std::string> WantedKeys(std::span<const HeldDevice> devices) {
  std::vector<std::string> keys;
  for (const HeldDevice& device : devices) {
    if (device.admin_access) continue;
    keys.push_back(absl::StrCat("device:", device.device));
    if (!device.share_id.has_value()) keys.push_back(absl::StrCat("share:", device.device));
    for (const std::string& unit : device.units) keys.push_back(absl::StrCat("unit:", unit));
  }
  return keys;
}

std::optional<std::string> Collision(std::span<const HeldDevice> wanted, const Holder& holder) {
  for (const HeldDevice& want : wanted) {
    for (const HeldDevice& held : holder.devices) {
      if (want.admin_access || held.admin_access) continue;
      const bool same = SameDevice(want, held);
      const std::optional<std::string> unit = same ? std::nullopt : SharedUnit(want, held);
      if (!same && !unit.has_value()) continue;
      if (same && want.share_id.has_value() && (held.share_id.has_value() || held.pool.empty())) continue;
      // A quarantined claim may be known by its UID alone.
      const std::string claim = holder.claim.name.empty()
                                    ? absl::StrCat("claim UID ", holder.claim.uid)
                                    : absl::StrCat("claim ", holder.claim.ToString(), " (UID ", holder.claim.uid, ")");
      std::string why = absl::StrCat("device ", want.pool, "/", want.device, " is in use by ", claim, ", ",
                                     holder.prepared ? "prepared" : "whose preparation started", " on this node");
      if (unit.has_value()) {
        absl::StrAppend(&why, " (its device ", held.pool, "/", held.device, " occupies the same unit \"", *unit, "\")");
      }
      // The orphan check unprepares only claims whose preparation started.
      absl::StrAppend(
          &why,
          ": a device without a shareID or adminAccess serves one claim at a time; this claim is "
          "prepared once the kubelet has unprepared that one (after its pod's containers stopped)",
          holder.prepared || holder.claim.name.empty() ? "" : " or the orphan check has (its ResourceClaim gone)");
      return why;
    }
  }
  return std::nullopt;
}

}  // namespace dra::kubeletplugin::internal
