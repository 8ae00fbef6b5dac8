// Devices the publisher tests (integration against the fake API server, e2e
// against kube-apiserver) publish: plain GPUs, and one device that uses every
// field a ResourceSlice device has.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_slice.h"
#include "dra/k8s/resource_slice_json.h"
#include "dra/resourceslice/driver_resources.h"
#include "dra/resourceslice/split.h"

namespace dra::testing {

// "gpu-<i>": attributes index and model, 16Gi of memory capacity.
inline k8s::Device Gpu(int i) {
  k8s::Device device;
  device.name = absl::StrCat("gpu-", i);
  device.attributes["index"].int_value = i;
  device.attributes["model"].string_value = "a100";
  device.capacity["memory"].value = *k8s::Quantity::Parse("16Gi");
  return device;
}

// A pool `pool` of gpu-0..gpu-<devices - 1>, split as the API requires.
inline resourceslice::DriverResources GpuPool(const std::string& pool, int devices) {
  std::vector<k8s::Device> list;
  for (int i = 0; i < devices; ++i) list.push_back(Gpu(i));
  resourceslice::DriverResources resources;
  resources.pools[pool].slices = resourceslice::SplitIntoSlices(std::move(list));
  return resources;
}

// The counter set DeviceWithEveryField consumes from.
inline k8s::CounterSet GpuMemoryCounters() {
  k8s::CounterSet counters;
  counters.name = "gpu-0-memory";
  counters.counters["memory"].value = *k8s::Quantity::Parse("80Gi");
  return counters;
}

// gpu-0 with a capacity request policy, consumed counters, a taint,
// bindsToNode, binding (failure) conditions, allowMultipleAllocations, a list
// attribute and nodeAllocatableResources (mapping and overhead).
inline k8s::Device DeviceWithEveryField() {
  k8s::Device device = Gpu(0);
  device.capacity["memory"].request_policy.emplace().default_value = *k8s::Quantity::Parse("1Gi");
  device.capacity["memory"].request_policy->valid_range.emplace().min = *k8s::Quantity::Parse("1024Mi");
  device.capacity["memory"].request_policy->valid_range->step = *k8s::Quantity::Parse("1Gi");
  device.consumes_counters.emplace_back().counter_set = GpuMemoryCounters().name;
  device.consumes_counters[0].counters["memory"].value = *k8s::Quantity::Parse("10Gi");
  device.taints.emplace_back().key = "example.com/degraded";
  device.taints[0].value = "ecc";
  device.taints[0].effect = "NoSchedule";
  device.binds_to_node = true;
  device.binding_conditions = {"example.com/attached"};
  device.binding_failure_conditions = {"example.com/attach-failed"};
  device.allow_multiple_allocations = true;
  device.attributes["models"].string_values = {"a100", "a100-80g"};
  device.node_allocatable_resources["cpu"].mapping.emplace().device_multiplier = *k8s::Quantity::Parse("8");
  device.node_allocatable_resources["memory"].mapping.emplace().capacity_key = "memory";
  device.node_allocatable_resources["memory"].mapping->capacity_multiplier = *k8s::Quantity::Parse("1");
  device.node_allocatable_resources["memory"].overhead.emplace().per_pod = *k8s::Quantity::Parse("64Mi");
  return device;
}

// Checks that `stored` (as the server returned it) still has every field of
// `sent` (DeviceWithEveryField) that the server must keep as sent.
inline void CheckStoredIntact(const k8s::Device& stored, const k8s::Device& sent) {
  CHECK(stored.binds_to_node == sent.binds_to_node);
  CHECK(stored.binding_conditions == sent.binding_conditions);
  CHECK(stored.binding_failure_conditions == sent.binding_failure_conditions);
  CHECK(stored.node_allocatable_resources == sent.node_allocatable_resources);
  CHECK(stored.consumes_counters == sent.consumes_counters);
  CHECK(stored.capacity == sent.capacity);
  CHECK(stored.attributes == sent.attributes);
  CHECK(stored.allow_multiple_allocations == sent.allow_multiple_allocations);
  REQUIRE(stored.taints.size() == sent.taints.size());
  for (size_t i = 0; i < sent.taints.size(); ++i) {
    CHECK(stored.taints[i].key == sent.taints[i].key);
    CHECK(stored.taints[i].value == sent.taints[i].value);
    CHECK(stored.taints[i].effect == sent.taints[i].effect);
  }
}

// The slices `field_selector` selects, typed, sorted by name (= slice order).
inline std::vector<k8s::ResourceSlice> ListSlices(k8s::Client& client, const std::string& field_selector) {
  k8s::ListOptions options;
  options.field_selector = field_selector;
  absl::StatusOr<k8s::ListResult> list = client.ListAll(k8s::kResourceSlices, "", options);
  INFO(list.status().ToString());
  REQUIRE(list.ok());
  std::vector<k8s::ResourceSlice> slices;
  for (const nlohmann::json& item : list->items) {
    absl::StatusOr<k8s::ResourceSlice> slice = k8s::ResourceSliceFromJson(item);
    INFO(slice.status().ToString());
    REQUIRE(slice.ok());
    slices.push_back(*std::move(slice));
  }
  std::sort(slices.begin(), slices.end(),
            [](const auto& a, const auto& b) { return a.metadata.name < b.metadata.name; });
  return slices;
}

// The device names of each slice, in slice order: what was published...
inline std::vector<std::vector<std::string>> DeviceNames(const std::vector<k8s::ResourceSlice>& slices) {
  std::vector<std::vector<std::string>> out;
  for (const k8s::ResourceSlice& slice : slices) {
    std::vector<std::string>& names = out.emplace_back();
    for (const k8s::Device& device : slice.spec.devices) names.push_back(device.name);
  }
  return out;
}

// ...and what was asked for.
inline std::vector<std::vector<std::string>> DeviceNames(const resourceslice::Pool& pool) {
  std::vector<std::vector<std::string>> out;
  for (const resourceslice::Slice& slice : pool.slices) {
    std::vector<std::string>& names = out.emplace_back();
    for (const k8s::Device& device : slice.devices) names.push_back(device.name);
  }
  return out;
}

}  // namespace dra::testing
