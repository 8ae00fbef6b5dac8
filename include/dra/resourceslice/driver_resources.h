/// @file
/// dra::resourceslice::DriverResources: what a driver wants published as
/// ResourceSlices, pool by pool. The Publisher (publisher.h) turns each Slice
/// into one ResourceSlice; SplitIntoSlices (split.h) makes Slices that the API
/// server accepts from a flat device list.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dra/k8s/node_selector.h"
#include "dra/k8s/resource_slice.h"

namespace dra::resourceslice {

/// One ResourceSlice's worth of a pool. The API server takes either devices or
/// shared counters in a slice, not both.
struct Slice {
  std::vector<k8s::Device> devices;              ///< the slice's devices
  std::vector<k8s::CounterSet> shared_counters;  ///< the slice's counter sets

  bool operator==(const Slice&) const = default;  ///< member-wise equality
};

/// Which nodes can reach a pool's devices.
enum class NodeSelection {
  kThisNode,      ///< spec.nodeName = Options::node_name; slices owned by the Node
  kNodeSelector,  ///< spec.nodeSelector = Pool::node_selector (network-attached)
  kAllNodes,      ///< spec.allNodes = true
  kPerDevice,     ///< spec.perDeviceNodeSelection = true: each device says
};

/// One pool of devices: which nodes reach it and its slices.
struct Pool {
  /// Default: this node.
  NodeSelection nodes = NodeSelection::kThisNode;
  /// Used with kNodeSelector only; must have exactly one term.
  k8s::NodeSelector node_selector;
  /// The lowest pool generation to publish; 0 (the default) lets the
  /// publisher count from 1. Raising it rewrites every slice of the pool.
  int64_t generation = 0;
  /// Optional node operations (KEP-5945; Kubernetes 1.37, alpha gate
  /// DRAOptionalNodeOperations on the API server, scheduler and kubelet):
  /// kubelet calls this driver does not need for the pool's devices,
  /// "NodeUnprepareResources", "NodePrepareResources" (only with
  /// NodeUnprepareResources) or "*". Every slice of the pool carries it, the
  /// scheduler copies it into each allocation, and the kubelet skips the call
  /// for a claim whose devices of this driver all skip it. An older server,
  /// or one with the gate off, drops the field: the publisher reports that.
  std::vector<std::string> skip_node_operations;
  /// In order: slice i gets a name starting with i as 5 hex digits, so the
  /// allocator (first fit in name order) sees them in this order. An empty
  /// list removes the pool; a pool without devices should publish one empty
  /// Slice ("no devices" is not "no pool").
  std::vector<Slice> slices;

  bool operator==(const Pool&) const = default;  ///< member-wise equality
};

/// Everything a driver publishes, pool by pool.
struct DriverResources {
  /// By pool name (a DNS subdomain, or several joined by '/'). A node-local
  /// driver usually has one pool named after its node.
  std::map<std::string, Pool> pools;

  bool operator==(const DriverResources&) const = default;  ///< member-wise equality
};

}  // namespace dra::resourceslice
