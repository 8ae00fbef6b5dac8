#include "resourceslice/canonical.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dra/k8s/resource_slice_json.h"

namespace dra::resourceslice {
namespace {

using nlohmann::json;

bool SameTime(const std::optional<std::string>& desired, const std::optional<std::string>& stored) {
  if (!desired) return true;
  if (!stored) return false;
  absl::Time a, b;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, *desired, &a, &error) ||
      !absl::ParseTime(absl::RFC3339_full, *stored, &b, &error)) {
    return *desired == *stored;
  }
  return absl::AbsDuration(a - b) <= absl::Seconds(1);
}

bool SameDevice(const k8s::Device& desired, const k8s::Device& stored) {
  if (desired.taints.size() != stored.taints.size()) return false;
  if (desired.taints.empty()) return desired == stored;
  for (size_t i = 0; i < desired.taints.size(); ++i) {
    const k8s::DeviceTaint& a = desired.taints[i];
    const k8s::DeviceTaint& b = stored.taints[i];
    if (a.key != b.key || a.value != b.value || a.effect != b.effect || a.unknown_fields != b.unknown_fields ||
        !SameTime(a.time_added, b.time_added)) {
      return false;
    }
  }
  k8s::Device a = desired;
  k8s::Device b = stored;
  a.taints.clear();
  b.taints.clear();
  return a == b;
}

// Map-valued JSON keys whose keys are names chosen by the driver.
bool IsNameMap(const std::string& key) {
  return key == "attributes" || key == "capacity" || key == "counters" || key == "nodeAllocatableResources";
}

void Diff(const json& sent, const json& stored, const std::string& path, bool name_map, std::set<std::string>& out) {
  if (sent.is_object()) {
    if (!stored.is_object()) {
      out.insert(path);
      return;
    }
    for (auto it = sent.begin(); it != sent.end(); ++it) {
      if (it.key() == "timeAdded") continue;
      const std::string child = name_map ? absl::StrCat(path, "[", it.key(), "]") : absl::StrCat(path, ".", it.key());
      auto found = stored.find(it.key());
      if (found == stored.end()) {
        out.insert(child);
      } else {
        Diff(it.value(), *found, child, !name_map && IsNameMap(it.key()), out);
      }
    }
  } else if (sent.is_array()) {
    if (!stored.is_array() || stored.size() != sent.size()) {
      out.insert(path);
      return;
    }
    for (size_t i = 0; i < sent.size(); ++i) Diff(sent[i], stored[i], path + "[]", false, out);
  } else if (sent != stored) {
    out.insert(path);
  }
}

json SpecJson(const k8s::ResourceSliceSpec& spec) {
  k8s::ResourceSlice slice;
  slice.spec = spec;
  return k8s::ToJson(slice)["spec"];
}

}  // namespace

bool SameSpec(const k8s::ResourceSliceSpec& desired, const k8s::ResourceSliceSpec& stored) {
  return SameSpec(desired, desired.devices, stored);
}

bool SameSpec(const k8s::ResourceSliceSpec& desired, const std::vector<k8s::Device>& desired_devices,
              const k8s::ResourceSliceSpec& stored) {
  if (desired.driver != stored.driver || desired.pool != stored.pool || desired.node_name != stored.node_name ||
      desired.node_selector != stored.node_selector || desired.all_nodes != stored.all_nodes ||
      desired.per_device_node_selection != stored.per_device_node_selection ||
      desired.shared_counters != stored.shared_counters ||
      desired.partition_type_attribute != stored.partition_type_attribute ||
      desired.skip_node_operations != stored.skip_node_operations || desired.unknown_fields != stored.unknown_fields ||
      desired_devices.size() != stored.devices.size()) {
    return false;
  }
  for (size_t i = 0; i < desired_devices.size(); ++i) {
    if (!SameDevice(desired_devices[i], stored.devices[i])) return false;
  }
  return true;
}

void KeepTaintTimes(std::vector<k8s::Device>& desired, const std::vector<k8s::Device>& stored) {
  for (k8s::Device& device : desired) {
    if (device.taints.empty()) continue;
    const k8s::Device* old = nullptr;
    for (const k8s::Device& candidate : stored) {
      if (candidate.name == device.name) old = &candidate;
    }
    if (old == nullptr) continue;
    for (k8s::DeviceTaint& taint : device.taints) {
      if (taint.time_added) continue;
      for (const k8s::DeviceTaint& old_taint : old->taints) {
        if (old_taint.key == taint.key && old_taint.value == taint.value && old_taint.effect == taint.effect) {
          taint.time_added = old_taint.time_added;
          break;
        }
      }
    }
  }
}

std::vector<std::string> DroppedFields(const k8s::ResourceSliceSpec& sent, const k8s::ResourceSliceSpec& stored) {
  std::set<std::string> out;
  Diff(SpecJson(sent), SpecJson(stored), "spec", false, out);
  return {out.begin(), out.end()};
}

std::vector<std::string> LikelyFeatureGates(const std::vector<std::string>& dropped_fields) {
  struct Rule {
    const char* gate;
    std::vector<const char*> markers;  // substrings of a dropped path
  };
  // Each path counts for the first rule it matches: the more specific ones
  // (a field inside consumesCounters) come first.
  static const std::vector<Rule> kRules = {
      {"DRADeviceCompatibilityGroups", {"compatibilityGroups"}},
      {"DRADeviceTaints", {".taints"}},
      {"DRAPartitionableDevices",
       {"sharedCounters", "consumesCounters", "perDeviceNodeSelection", "devices[].nodeName", "devices[].nodeSelector",
        "devices[].allNodes"}},
      {"DRADeviceBindingConditions", {"bindsToNode", "bindingConditions", "bindingFailureConditions"}},
      {"DRAConsumableCapacity", {"allowMultipleAllocations", "requestPolicy"}},
      {"DRANodeAllocatableResources", {"nodeAllocatableResources"}},
      {"DRAListTypeAttributes", {"].ints", "].bools", "].strings", "].versions"}},
      {"DRAPartitionableDevicesType", {"partitionTypeAttribute"}},
      {"DRAOptionalNodeOperations", {"skipNodeOperations"}},
  };
  std::vector<bool> hit(kRules.size(), false);
  for (const std::string& path : dropped_fields) {
    for (size_t i = 0; i < kRules.size(); ++i) {
      bool matches = false;
      for (const char* marker : kRules[i].markers) matches = matches || absl::StrContains(path, marker);
      if (matches) {
        hit[i] = true;
        break;
      }
    }
  }
  std::vector<std::string> gates;
  for (size_t i = 0; i < kRules.size(); ++i) {
    if (hit[i]) gates.push_back(kRules[i].gate);
  }
  return gates;
}

}  // namespace dra::resourceslice
