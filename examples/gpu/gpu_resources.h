// What the example GPU driver publishes: its GPUs as devices of the node's
// pool (whole, partitioned through shared counters, or shareable by
// capacity). reference/fabric_pool.h publishes fabric-attached GPUs.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dra/k8s/quantity.h"
#include "dra/k8s/resource_slice.h"
#include "dra/resourceslice/driver_resources.h"
#include "gpu_info.h"

namespace gpu {

struct PublishOptions {
  std::string driver_name;
  std::string node_name;
  // > 0: every GPU is offered as this many partitions, each 1/N of its
  // memory and compute, and as a whole (gpu-<i>-full), all drawn from one
  // counter set.
  int partitions = 0;
  // Each device may be allocated to several claims at once, each taking
  // memory and compute by its capacity requests.
  bool allow_multiple_allocations = false;
  // Host memory each pod using a GPU costs (nodeAllocatableResources
  // overhead, perPod), e.g. 8Gi.
  std::optional<dra::k8s::Quantity> host_memory_overhead;
  // Unhealthy GPUs (by index), and which of them are fatally so.
  std::set<int> unhealthy;
  std::set<int> fatal;
};

// The device names of a GPU: "gpu-<i>", or, when partitioned,
// "gpu-<i>-partition-<p>" and "gpu-<i>-full" (dra-example-driver's names).
std::string GpuDeviceName(int index);
std::string FullDeviceName(int index);
std::string PartitionDeviceName(int index, int partition);
// All the devices GPU `index` is published as, with `partitions`, in the
// pool's order.
std::vector<std::string> DeviceNames(int index, int partitions);
// Which units of the GPUs each device of the node's pool occupies, for the
// Helper's device exclusivity (DeviceExclusivityOptions::units): with
// partitions, partition p of GPU i occupies "gpu-<i>/<p>" and gpu-<i>-full
// all of GPU i's, so a claim for the whole GPU is refused while another holds
// one of its partitions. Without partitions: none (each GPU is only itself).
std::map<std::string, std::vector<std::string>, std::less<>> DeviceUnits(const std::vector<GpuInfo>& gpus,
                                                                         int partitions);
// The taint key an unhealthy GPU carries: "<driver>/unhealthy".
std::string UnhealthyTaintKey(const std::string& driver_name);

// The node's pool, named after the node.
dra::resourceslice::Pool NodePool(const std::vector<GpuInfo>& gpus, const PublishOptions& options);

}  // namespace gpu
