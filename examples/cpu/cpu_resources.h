// What the example CPU driver publishes, in the node's pool (named after the
// node):
//  - grouped mode: one device per socket ("cpu-socket-<id>") or NUMA node
//    ("cpu-numa-<id>", or "numa-<id>" as dra-example-driver's cpu profile
//    calls them) that many claims share (allowMultipleAllocations),
//    each taking `cpu` CPUs of its capacity, mapped to the node's
//    allocatable `cpu` (nodeAllocatableResources capacityKey);
//  - individual mode: one device per CPU ("cpu-<id>"), each worth one node
//    CPU (deviceMultiplier 1);
//  - with memory devices, one per NUMA node ("memory-numa-<id>"), shared
//    the same way by `memory`, mapped to the node's `memory`.
// Claims ask for `<driver>/cpu` and `<driver>/memory`, as with the upstream
// CPU driver. A Kubernetes 1.38 scheduler matches them to the bare names; an
// older one matches names as written, so there the capacities are published
// qualified (PublishOptions::bare_capacity_names).
// Every device has the attribute `resource`: "cpu" or "memory", for
// DeviceClasses (CEL sees no device names), and
// resource.kubernetes.io/pcieRoot when its NUMA nodes have exactly one PCIe
// root, for claims that want CPUs next to a GPU or NIC.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "dra/kubeletplugin/options.h"
#include "dra/log.h"
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
  // "cpu" and "memory" rather than "<driver>/cpu" and "<driver>/memory".
  bool bare_capacity_names = false;
  // Grouped NUMA nodes are "<numa_device_prefix><id>".
  std::string numa_device_prefix = "cpu-numa-";
};

// Device names.
std::string SocketDeviceName(int socket);                           // "cpu-socket-<id>"
std::string NumaDeviceName(const PublishOptions& options, int id);  // "cpu-numa-<id>" by default
std::string CpuDeviceName(int cpu);                                 // "cpu-<id>"
std::string MemoryDeviceName(int numa_node);                        // "memory-numa-<id>"
// Capacity names: "cpu" and "memory" when bare, else "<driver>/cpu" and
// "<driver>/memory".
std::string CpuCapacityName(const std::string& driver_name, bool bare);
std::string MemoryCapacityName(const std::string& driver_name, bool bare);

// Whether a scheduler of this gitVersion ("v1.38.0") matches a claim's
// "<driver>/cpu" to a device's bare "cpu": from 1.38.
bool MatchesBareCapacityNames(std::string_view server_version);

// Sets publish.bare_capacity_names as the API server's version wants
// (MatchesBareCapacityNames) and, where the names stay qualified, lets the
// publisher accept them. A server that cannot be asked gets qualified names,
// which every release matches.
void ChooseCapacityNames(dra::kubeletplugin::Options& options, PublishOptions& publish, const dra::Logger& logger);

dra::resourceslice::Pool NodePool(const Topology& topology, const PublishOptions& options);

}  // namespace cpu
