// The publisher's building blocks: slice names, the canonical comparison that
// keeps it from looping, the dropped-field report, and pool validation.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "dra/k8s/device_attributes.h"
#include "resourceslice/canonical.h"
#include "resourceslice/pool_validation.h"
#include "resourceslice/slice_names.h"

namespace dra::resourceslice {
namespace {

using Strings = std::vector<std::string>;

k8s::Quantity Q(std::string_view text) {
  absl::StatusOr<k8s::Quantity> q = k8s::Quantity::Parse(text);
  REQUIRE(q.ok());
  return *q;
}

k8s::ResourceSliceSpec Spec() {
  k8s::ResourceSliceSpec spec;
  spec.driver = "gpu.example.com";
  spec.pool.name = "node-1";
  spec.pool.generation = 1;
  spec.pool.resource_slice_count = 1;
  spec.node_name = "node-1";
  k8s::Device device;
  device.name = "gpu-0";
  device.capacity["memory"].value = Q("1024Mi");
  k8s::DeviceTaint taint;
  taint.key = "example.com/hot";
  taint.effect = "NoSchedule";
  device.taints.push_back(taint);
  device.binding_conditions = {"example.com/attached"};
  device.binding_failure_conditions = {"example.com/failed"};
  device.binds_to_node = true;
  spec.devices.push_back(device);
  return spec;
}

TEST_CASE("names: index first, as 5 hex digits, read back, order is index order") {
  CHECK(SliceGenerateName(0, "gpu.example.com", "node-1") == "00000-gpu.example.com-node-1-");
  CHECK(SliceGenerateName(26, "gpu.example.com", "net/pool-a") == "0001a-gpu.example.com-net.pool-a-");
  CHECK(ParseSliceIndex("0001a-gpu.example.com-node-1-x7k2p") == 26u);
  CHECK(ParseSliceIndex("fffff-x") == 0xfffffu);
  CHECK_FALSE(ParseSliceIndex("node-1-gpu.example.com-x7k2p").has_value());
  CHECK_FALSE(ParseSliceIndex("0001A-x").has_value());
  CHECK_FALSE(ParseSliceIndex("00001x").has_value());
  CHECK(SliceGenerateName(9, "d", "n") < SliceGenerateName(10, "d", "n"));
  CHECK(SliceGenerateName(255, "d", "n") < SliceGenerateName(256, "d", "n"));
}

TEST_CASE("SameSpec: quantities by value, server-set timeAdded ignored, within a second when both set") {
  k8s::ResourceSliceSpec desired = Spec();
  k8s::ResourceSliceSpec stored = Spec();
  stored.devices[0].capacity["memory"].value = Q("1Gi");
  stored.devices[0].taints[0].time_added = "2026-11-29T10:00:00Z";
  CHECK(SameSpec(desired, stored));

  desired.devices[0].taints[0].time_added = "2026-11-29T10:00:00.400Z";
  CHECK(SameSpec(desired, stored));
  desired.devices[0].taints[0].time_added = "2026-11-29T10:00:02Z";
  CHECK_FALSE(SameSpec(desired, stored));

  desired = Spec();
  desired.devices[0].capacity["memory"].value = Q("2Gi");
  CHECK_FALSE(SameSpec(desired, stored));
  desired = Spec();
  desired.pool.generation = 2;
  CHECK_FALSE(SameSpec(desired, stored));
  desired = Spec();
  desired.devices[0].taints[0].effect = "NoExecute";
  CHECK_FALSE(SameSpec(desired, stored));
}

TEST_CASE("KeepTaintTimes copies the stored time of the same taint of the same device") {
  k8s::ResourceSliceSpec desired = Spec();
  k8s::ResourceSliceSpec stored = Spec();
  stored.devices[0].taints[0].time_added = "2026-11-29T10:00:00Z";
  KeepTaintTimes(desired.devices, stored.devices);
  CHECK(desired.devices[0].taints[0].time_added == "2026-11-29T10:00:00Z");

  desired = Spec();
  desired.devices[0].taints[0].value = "other";
  KeepTaintTimes(desired.devices, stored.devices);
  CHECK_FALSE(desired.devices[0].taints[0].time_added.has_value());
}

TEST_CASE("DroppedFields names what the server did not store, and the gates that drop it") {
  k8s::ResourceSliceSpec sent = Spec();
  sent.devices[0].attributes["models"].string_values = {"a", "b"};
  k8s::NodeAllocatableResource cpu;
  cpu.mapping.emplace().device_multiplier = Q("8");
  sent.devices[0].node_allocatable_resources["cpu"] = cpu;
  k8s::ResourceSliceSpec stored = sent;
  stored.devices[0].taints.clear();
  stored.devices[0].binding_conditions.clear();
  stored.devices[0].binding_failure_conditions.clear();
  stored.devices[0].binds_to_node.reset();
  stored.devices[0].attributes.clear();
  stored.devices[0].node_allocatable_resources.clear();
  Strings dropped = DroppedFields(sent, stored);
  CHECK(dropped == Strings{"spec.devices[].attributes", "spec.devices[].bindingConditions",
                           "spec.devices[].bindingFailureConditions", "spec.devices[].bindsToNode",
                           "spec.devices[].nodeAllocatableResources", "spec.devices[].taints"});
  CHECK(LikelyFeatureGates(dropped) ==
        Strings{"DRADeviceTaints", "DRADeviceBindingConditions", "DRANodeAllocatableResources"});

  // A list attribute dropped alone (the attribute map stays).
  stored = sent;
  stored.devices[0].attributes["models"].string_values.clear();
  stored.devices[0].attributes["models"].string_value = "a";
  dropped = DroppedFields(sent, stored);
  CHECK(dropped == Strings{"spec.devices[].attributes[models].strings"});
  CHECK(LikelyFeatureGates(dropped) == Strings{"DRAListTypeAttributes"});

  // Fields the server added, and timeAdded, are not dropped fields.
  stored = sent;
  stored.devices[0].taints[0].time_added = "2026-11-29T10:00:00Z";
  stored.devices[0].allow_multiple_allocations = true;
  CHECK(DroppedFields(sent, stored).empty());
  sent.devices[0].allow_multiple_allocations = false;
  stored.devices[0].allow_multiple_allocations.reset();
  CHECK(LikelyFeatureGates(DroppedFields(sent, stored)) == Strings{"DRAConsumableCapacity"});
}

TEST_CASE("Compatibility groups dropped by an older server name their own gate, not the counters'") {
  k8s::ResourceSliceSpec sent = Spec();
  k8s::DeviceCounterConsumption consumption;
  consumption.counter_set = "gpu-0-counters";
  consumption.counters["memory"].value = Q("10Gi");
  consumption.compatibility_groups = {"mig-1g"};
  sent.devices[0].consumes_counters = {consumption};
  k8s::ResourceSliceSpec stored = sent;
  stored.devices[0].consumes_counters[0].compatibility_groups.clear();
  const Strings dropped = DroppedFields(sent, stored);
  CHECK(dropped == Strings{"spec.devices[].consumesCounters[].compatibilityGroups"});
  CHECK(LikelyFeatureGates(dropped) == Strings{"DRADeviceCompatibilityGroups"});

  stored.devices[0].consumes_counters.clear();
  CHECK(LikelyFeatureGates(DroppedFields(sent, stored)) == Strings{"DRAPartitionableDevices"});
}

Slice DeviceSlice(const std::string& device, const std::string& counter_set = "") {
  Slice slice;
  slice.devices = Spec().devices;
  slice.devices[0].name = device;
  if (!counter_set.empty()) {
    k8s::DeviceCounterConsumption consumption;
    consumption.counter_set = counter_set;
    consumption.counters["memory"].value = Q("1Gi");
    slice.devices[0].consumes_counters.push_back(consumption);
  }
  return slice;
}

absl::Status Validate(std::vector<Slice> slices, DriverDomainNames driver_domain_names = DriverDomainNames::kRefuse,
                      std::string* warning = nullptr) {
  Pool pool;
  pool.slices = std::move(slices);
  std::string ignored;
  return ValidatePool(
      "node-1", pool, driver_domain_names,
      [&](size_t i) {
        k8s::ResourceSlice slice;
        slice.metadata.generate_name = "00000-gpu.example.com-node-1-";
        slice.spec = Spec();
        slice.spec.devices = pool.slices[i].devices;
        slice.spec.shared_counters = pool.slices[i].shared_counters;
        return slice;
      },
      warning != nullptr ? *warning : ignored);
}

TEST_CASE("ValidatePool: each slice as the server checks it, then the rules across slices") {
  CHECK(Validate({DeviceSlice("gpu-0"), DeviceSlice("gpu-1")}).ok());

  absl::Status status = Validate({DeviceSlice("gpu-0"), DeviceSlice("GPU 1")});
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(status.message(),
                          "pool \"node-1\", slice 1 is invalid: spec.devices[0].name: Invalid value: \"GPU 1\""));

  status = Validate({DeviceSlice("gpu-0"), DeviceSlice("gpu-0")});
  CHECK(status.message() ==
        "pool \"node-1\" is invalid: slices[1].spec.devices[0].name: Invalid value: \"gpu-0\": device names must be "
        "unique in a pool");

  Slice counters;
  k8s::CounterSet set;
  set.name = "gpu-0-memory";
  set.counters["memory"].value = Q("16Gi");
  counters.shared_counters.push_back(set);
  CHECK(Validate({counters, DeviceSlice("gpu-0", "gpu-0-memory")}).ok());
  status = Validate({counters, DeviceSlice("gpu-0", "gpu-9-memory")});
  CHECK(status.message() ==
        "pool \"node-1\" is invalid: slices[1].spec.devices[0].consumesCounters[0].counterSet: Invalid value: "
        "\"gpu-9-memory\": must name a counter set in the pool's sharedCounters");
}

TEST_CASE("ValidatePool: names qualified with the driver's own domain warn, or are refused as by Go from 1.38") {
  Slice slice = DeviceSlice("gpu-0");
  slice.devices[0].attributes["gpu.example.com/model"] = k8s::StringAttribute("A100");
  const std::string expected =
      "pool \"node-1\", slice 0 is invalid: spec.devices[0].attributes[gpu.example.com/model]: Invalid value: "
      "\"gpu.example.com/model\": use unqualified \"model\", the driver name is added implicitly";
  CHECK(Validate({slice}).message() == expected);
  std::string warning;
  CHECK(Validate({slice}, DriverDomainNames::kWarn, &warning).ok());
  CHECK(warning == expected);
  CHECK(Validate({slice}, DriverDomainNames::kAllow, &warning).ok());
  CHECK(warning.empty());
  // Every slice that has them is named.
  Slice second = DeviceSlice("gpu-1");
  second.devices[0].capacity["gpu.example.com/memory"].value = Q("16Gi");
  CHECK(Validate({slice, second}, DriverDomainNames::kWarn, &warning).ok());
  CHECK(warning == expected +
                       "; pool \"node-1\", slice 1 is invalid: spec.devices[0].capacity[gpu.example.com/memory]: "
                       "Invalid value: \"gpu.example.com/memory\": use unqualified \"memory\", the driver name is "
                       "added implicitly");

  slice.devices[0].attributes.clear();
  slice.devices[0].capacity["gpu.example.com/memory"].value = Q("16Gi");
  CHECK(absl::StrContains(Validate({slice}).message(),
                          "spec.devices[0].capacity[gpu.example.com/memory]: Invalid value"));

  // Another domain, and unqualified names, are fine.
  slice.devices[0].capacity.clear();
  slice.devices[0].attributes["resource.kubernetes.io/pcieRoot"] = k8s::StringAttribute("pci0000:00");
  slice.devices[0].attributes["model"] = k8s::StringAttribute("A100");
  CHECK(Validate({slice}, DriverDomainNames::kWarn, &warning).ok());
  CHECK(warning.empty());
}

}  // namespace
}  // namespace dra::resourceslice
