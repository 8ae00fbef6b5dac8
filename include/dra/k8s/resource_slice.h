/// @file
/// dra::k8s::ResourceSlice: resource.k8s.io/v1 ResourceSlice (Kubernetes 1.37,
/// including alpha fields) as plain values. Field names follow the Go API in
/// snake_case; the Go documentation of each field applies. `unknown_fields` is
/// explained in object_meta.h. JSON codec: resource_slice_json.h.
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

/// The pool a slice belongs to, and how many slices it has.
struct ResourcePool {
  std::string name;                  ///< the pool's name, unique per driver
  int64_t generation = 0;            ///< bumped when the pool changes; only the slices of the highest are used
  int64_t resource_slice_count = 0;  ///< how many slices the pool has at this generation
  nlohmann::json unknown_fields;     ///< the keys this library does not model (object_meta.h)

  bool operator==(const ResourcePool&) const = default;  ///< member-wise equality
};

/// An amount of a shared counter.
struct Counter {
  Quantity value;                 ///< the amount
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const Counter&) const = default;  ///< member-wise equality
};

/// Counters that several devices draw from (partitionable devices).
struct CounterSet {
  std::string name;                         ///< the set's name, unique in the pool
  std::map<std::string, Counter> counters;  ///< by counter name
  nlohmann::json unknown_fields;            ///< the keys this library does not model (object_meta.h)

  bool operator==(const CounterSet&) const = default;  ///< member-wise equality
};

/// A device attribute value. The API requires exactly one member to be set;
/// the decoder keeps whatever was sent so that validation can report it. The
/// list forms are alpha (DRAListTypeAttributes).
struct DeviceAttribute {
  std::optional<int64_t> int_value;          ///< "int"
  std::optional<bool> bool_value;            ///< "bool"
  std::optional<std::string> string_value;   ///< "string"
  std::optional<std::string> version_value;  ///< "version", semver 2.0.0
  std::vector<int64_t> int_values;           ///< "ints"; empty: unset
  std::vector<bool> bool_values;             ///< "bools"; empty: unset
  std::vector<std::string> string_values;    ///< "strings"; empty: unset
  std::vector<std::string> version_values;   ///< "versions"; empty: unset
  nlohmann::json unknown_fields;             ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceAttribute&) const = default;  ///< member-wise equality
};

/// The amounts a claim may take of a capacity: min, then in steps, up to max.
struct CapacityRequestPolicyRange {
  Quantity min;                   ///< required by the API
  std::optional<Quantity> max;    ///< unset: up to the capacity
  std::optional<Quantity> step;   ///< unset: any amount in the range
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const CapacityRequestPolicyRange&) const = default;  ///< member-wise equality
};

/// At most one of valid_values and valid_range is set.
struct CapacityRequestPolicy {
  std::optional<Quantity> default_value;                  ///< "default"
  std::vector<Quantity> valid_values;                     ///< the amounts a claim may take
  std::optional<CapacityRequestPolicyRange> valid_range;  ///< the range a claim may take from
  nlohmann::json unknown_fields;                          ///< the keys this library does not model (object_meta.h)

  bool operator==(const CapacityRequestPolicy&) const = default;  ///< member-wise equality
};

/// One capacity of a device, e.g. its memory.
struct DeviceCapacity {
  Quantity value;                                       ///< the total
  std::optional<CapacityRequestPolicy> request_policy;  ///< how claims share it (allow_multiple_allocations)
  nlohmann::json unknown_fields;                        ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceCapacity&) const = default;  ///< member-wise equality
};

/// What a device takes from one counter set when it is allocated.
struct DeviceCounterConsumption {
  std::string counter_set;                  ///< the CounterSet's name
  std::map<std::string, Counter> counters;  ///< by counter name
  /// KEP-5963 (1.37, gate DRADeviceCompatibilityGroups): devices consuming
  /// this counter set are allocated together only if they share a group. At
  /// most 2, unique, opaque to everyone but the pool's driver.
  std::vector<std::string> compatibility_groups;
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceCounterConsumption&) const = default;  ///< member-wise equality
};

/// A taint of a device; its effect applies to claims that do not tolerate it.
struct DeviceTaint {
  std::string key;                        ///< the taint key, a qualified name
  std::string value;                      ///< the taint value
  std::string effect;                     ///< "None", "NoSchedule" or "NoExecute"
  std::optional<std::string> time_added;  ///< RFC 3339
  nlohmann::json unknown_fields;          ///< the keys this library does not model (object_meta.h)

  bool operator==(const DeviceTaint&) const = default;  ///< member-wise equality
};

/// KEP-5517 (alpha). Either device_multiplier, or capacity_key together with
/// capacity_multiplier.
struct NodeAllocatableMapping {
  std::optional<std::string> capacity_key;      ///< a key of Device::capacity
  std::optional<Quantity> capacity_multiplier;  ///< times the consumed capacity named by capacity_key
  std::optional<Quantity> device_multiplier;    ///< times the number of allocated devices
  nlohmann::json unknown_fields;                ///< the keys this library does not model (object_meta.h)

  bool operator==(const NodeAllocatableMapping&) const = default;  ///< member-wise equality
};

/// A fixed amount of a node allocatable resource that using the device costs (KEP-5517, alpha).
struct NodeAllocatableOverhead {
  std::optional<Quantity> per_pod;        ///< once per pod
  std::optional<Quantity> per_container;  ///< once per container
  nlohmann::json unknown_fields;          ///< the keys this library does not model (object_meta.h)

  bool operator==(const NodeAllocatableOverhead&) const = default;  ///< member-wise equality
};

/// At least one of mapping and overhead is set.
struct NodeAllocatableResource {
  std::optional<NodeAllocatableMapping> mapping;    ///< an amount derived from the allocation
  std::optional<NodeAllocatableOverhead> overhead;  ///< a fixed amount on top
  nlohmann::json unknown_fields;                    ///< the keys this library does not model (object_meta.h)

  bool operator==(const NodeAllocatableResource&) const = default;  ///< member-wise equality
};

/// One device of a slice.
struct Device {
  std::string name;                                         ///< unique in the pool; a DNS label
  std::map<std::string, DeviceAttribute> attributes;        ///< by qualified name
  std::map<std::string, DeviceCapacity> capacity;           ///< by qualified name
  std::vector<DeviceCounterConsumption> consumes_counters;  ///< what it takes from the pool's counter sets
  /// With ResourceSliceSpec::per_device_node_selection, exactly one of these.
  ///@{
  std::optional<std::string> node_name;
  std::optional<NodeSelector> node_selector;
  std::optional<bool> all_nodes;
  ///@}
  std::vector<DeviceTaint> taints;              ///< see DeviceTaint
  std::optional<bool> binds_to_node;            ///< the allocation selects the one node the scheduler picked (KEP-5007)
  std::vector<std::string> binding_conditions;  ///< conditions that must be True before the pod binds (KEP-5007)
  std::vector<std::string> binding_failure_conditions;  ///< conditions that fail the binding when True (KEP-5007)
  std::optional<bool> allow_multiple_allocations;       ///< several claims may share the device's capacity
  /// By node-allocatable resource name ("cpu", "memory", "hugepages-2Mi", ...).
  /// JSON "nodeAllocatableResources"; the codec also reads the older
  /// "nodeAllocatableResourceMappings" (see resource_slice_json.h).
  std::map<std::string, NodeAllocatableResource> node_allocatable_resources;
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const Device&) const = default;  ///< member-wise equality
};

/// The slice's spec: the driver, the pool, the nodes and the devices.
struct ResourceSliceSpec {
  std::string driver;  ///< the driver that publishes the slice
  ResourcePool pool;   ///< the pool the slice belongs to
  /// Exactly one of node_name, node_selector, all_nodes (true) and
  /// per_device_node_selection (true) is set.
  ///@{
  std::optional<std::string> node_name;
  std::optional<NodeSelector> node_selector;
  std::optional<bool> all_nodes;
  ///@}
  std::vector<Device> devices;                    ///< at most 128 (64 with taints, counters or list attributes)
  std::optional<bool> per_device_node_selection;  ///< each device names its nodes
  std::vector<CounterSet> shared_counters;        ///< counter sets of the pool, in a slice without devices
  /// Alpha: the qualified name of a string attribute naming each device's
  /// partition type.
  std::optional<std::string> partition_type_attribute;
  /// Alpha: "NodePrepareResources", "NodeUnprepareResources" or "*".
  std::vector<std::string> skip_node_operations;
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const ResourceSliceSpec&) const = default;  ///< member-wise equality
};

/// A ResourceSlice: some of a driver's devices in one pool.
struct ResourceSlice {
  ObjectMeta metadata;            ///< name, labels, owner references, ...
  ResourceSliceSpec spec;         ///< driver, pool, nodes and devices
  nlohmann::json unknown_fields;  ///< the keys this library does not model (object_meta.h)

  bool operator==(const ResourceSlice&) const = default;  ///< member-wise equality
};

}  // namespace dra::k8s
