// dra::k8s::ResourceSlice: resource.k8s.io/v1 ResourceSlice (Kubernetes 1.37,
// including alpha fields) as plain values. Field names follow the Go API in
// snake_case; the Go documentation of each field applies. `unknown_fields` is
// explained in object_meta.h. JSON codec: resource_slice_json.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dra/k8s/node_selector.h"
#include "dra/k8s/object_meta.h"
#include "dra/k8s/quantity.h"
#include "nlohmann/json.hpp"

namespace dra::k8s {

struct ResourcePool {
  std::string name;
  int64_t generation = 0;
  int64_t resource_slice_count = 0;
  nlohmann::json unknown_fields;

  bool operator==(const ResourcePool&) const = default;
};

struct Counter {
  Quantity value;
  nlohmann::json unknown_fields;

  bool operator==(const Counter&) const = default;
};

struct CounterSet {
  std::string name;
  std::map<std::string, Counter> counters;  // by counter name
  nlohmann::json unknown_fields;

  bool operator==(const CounterSet&) const = default;
};

// A device attribute value. The API requires exactly one member to be set;
// the decoder keeps whatever was sent so that validation can report it. The
// list forms are alpha (DRAListTypeAttributes).
struct DeviceAttribute {
  std::optional<int64_t> int_value;          // "int"
  std::optional<bool> bool_value;            // "bool"
  std::optional<std::string> string_value;   // "string"
  std::optional<std::string> version_value;  // "version", semver 2.0.0
  std::vector<int64_t> int_values;           // "ints"; empty: unset
  std::vector<bool> bool_values;             // "bools"; empty: unset
  std::vector<std::string> string_values;    // "strings"; empty: unset
  std::vector<std::string> version_values;   // "versions"; empty: unset
  nlohmann::json unknown_fields;

  bool operator==(const DeviceAttribute&) const = default;
};

struct CapacityRequestPolicyRange {
  Quantity min;  // required by the API
  std::optional<Quantity> max;
  std::optional<Quantity> step;
  nlohmann::json unknown_fields;

  bool operator==(const CapacityRequestPolicyRange&) const = default;
};

// At most one of valid_values and valid_range is set.
struct CapacityRequestPolicy {
  std::optional<Quantity> default_value;  // "default"
  std::vector<Quantity> valid_values;
  std::optional<CapacityRequestPolicyRange> valid_range;
  nlohmann::json unknown_fields;

  bool operator==(const CapacityRequestPolicy&) const = default;
};

struct DeviceCapacity {
  Quantity value;
  std::optional<CapacityRequestPolicy> request_policy;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceCapacity&) const = default;
};

struct DeviceCounterConsumption {
  std::string counter_set;
  std::map<std::string, Counter> counters;  // by counter name
  // KEP-5963 (1.37, gate DRADeviceCompatibilityGroups): devices consuming
  // this counter set are allocated together only if they share a group. At
  // most 2, unique, opaque to everyone but the pool's driver.
  std::vector<std::string> compatibility_groups;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceCounterConsumption&) const = default;
};

struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;                     // "None", "NoSchedule" or "NoExecute"
  std::optional<std::string> time_added;  // RFC 3339
  nlohmann::json unknown_fields;

  bool operator==(const DeviceTaint&) const = default;
};

// KEP-5517 (alpha). Either device_multiplier, or capacity_key together with
// capacity_multiplier.
struct NodeAllocatableMapping {
  std::optional<std::string> capacity_key;  // a key of Device::capacity
  std::optional<Quantity> capacity_multiplier;
  std::optional<Quantity> device_multiplier;
  nlohmann::json unknown_fields;

  bool operator==(const NodeAllocatableMapping&) const = default;
};

struct NodeAllocatableOverhead {
  std::optional<Quantity> per_pod;
  std::optional<Quantity> per_container;
  nlohmann::json unknown_fields;

  bool operator==(const NodeAllocatableOverhead&) const = default;
};

// At least one of mapping and overhead is set.
struct NodeAllocatableResource {
  std::optional<NodeAllocatableMapping> mapping;
  std::optional<NodeAllocatableOverhead> overhead;
  nlohmann::json unknown_fields;

  bool operator==(const NodeAllocatableResource&) const = default;
};

struct Device {
  std::string name;
  std::map<std::string, DeviceAttribute> attributes;  // by qualified name
  std::map<std::string, DeviceCapacity> capacity;     // by qualified name
  std::vector<DeviceCounterConsumption> consumes_counters;
  // With ResourceSliceSpec::per_device_node_selection, exactly one of these.
  std::optional<std::string> node_name;
  std::optional<NodeSelector> node_selector;
  std::optional<bool> all_nodes;
  std::vector<DeviceTaint> taints;
  std::optional<bool> binds_to_node;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<bool> allow_multiple_allocations;
  // By node-allocatable resource name ("cpu", "memory", "hugepages-2Mi", ...).
  // JSON "nodeAllocatableResources"; the codec also reads the older
  // "nodeAllocatableResourceMappings" (see resource_slice_json.h).
  std::map<std::string, NodeAllocatableResource> node_allocatable_resources;
  nlohmann::json unknown_fields;

  bool operator==(const Device&) const = default;
};

struct ResourceSliceSpec {
  std::string driver;
  ResourcePool pool;
  // Exactly one of node_name, node_selector, all_nodes (true) and
  // per_device_node_selection (true) is set.
  std::optional<std::string> node_name;
  std::optional<NodeSelector> node_selector;
  std::optional<bool> all_nodes;
  std::vector<Device> devices;
  std::optional<bool> per_device_node_selection;
  std::vector<CounterSet> shared_counters;
  // Alpha: the qualified name of a string attribute naming each device's
  // partition type.
  std::optional<std::string> partition_type_attribute;
  // Alpha: "NodePrepareResources", "NodeUnprepareResources" or "*".
  std::vector<std::string> skip_node_operations;
  nlohmann::json unknown_fields;

  bool operator==(const ResourceSliceSpec&) const = default;
};

struct ResourceSlice {
  ObjectMeta metadata;
  ResourceSliceSpec spec;
  nlohmann::json unknown_fields;

  bool operator==(const ResourceSlice&) const = default;
};

}  // namespace dra::k8s
