// What the example CPU driver publishes, in the node's pool (named after the
// node):
//  - grouped mode: one device per socket ("cpu-socket-<id>") or NUMA node
//    ("cpu-numa-<id>") that many claims share (allowMultipleAllocations),
//    each taking `<driver>/cpu` CPUs of its capacity, mapped to the node's
//    allocatable `cpu` (nodeAllocatableResources capacityKey);
//  - individual mode: one device per CPU ("cpu-<id>"), each worth one node
//    CPU (deviceMultiplier 1);
//  - with memory devices, one per NUMA node ("memory-numa-<id>"), shared
//    the same way by `<driver>/memory`, mapped to the node's `memory`.
// Every device has the attribute `resource`: "cpu" or "memory", for
// DeviceClasses (CEL sees no device names), and
// resource.kubernetes.io/pcieRoot when its NUMA nodes have exactly one PCIe
// root, for claims that want CPUs next to a GPU or NIC.
#pragma once

#include <set>
#include <string>

#include "dra/resourceslice/driver_resources.h"
#include "topology.h"

namespace cpu {

enum class Mode { kGrouped, kIndividual };
enum class GroupBy { kSocket, kNuma };

struct PublishOptions {
  std::string driver_name;
  std::string node_name;  // the pool's name
  Mode mode = Mode::kGrouped;
  GroupBy group_by = GroupBy::kSocket;
  bool memory_devices = false;
  std::set<int> reserved;  // never published or handed out
};

// Device names.
std::string GroupDeviceName(GroupBy by, int id);  // "cpu-socket-<id>", "cpu-numa-<id>"
std::string CpuDeviceName(int cpu);               // "cpu-<id>"
std::string MemoryDeviceName(int numa_node);      // "memory-numa-<id>"
// Capacity names: "<driver>/cpu" and "<driver>/memory".
std::string CpuCapacityName(const std::string& driver_name);
std::string MemoryCapacityName(const std::string& driver_name);

dra::resourceslice::Pool NodePool(const Topology& topology, const PublishOptions& options);

}  // namespace cpu
