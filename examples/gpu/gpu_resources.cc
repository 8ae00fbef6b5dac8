#include "gpu_resources.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "dra/k8s/device_attributes.h"
#include "dra/resourceslice/split.h"

namespace gpu {
namespace {

namespace k8s = dra::k8s;

constexpr char kMemory[] = "memory";
constexpr char kCompute[] = "compute";

std::string CounterSetName(int index) { return absl::StrCat(GpuDeviceName(index), "-counters"); }

void SetAttributes(const GpuInfo& gpu, k8s::Device& device) {
  device.attributes["index"] = k8s::IntAttribute(gpu.index);
  device.attributes["uuid"] = k8s::StringAttribute(gpu.uuid);
  device.attributes["model"] = k8s::StringAttribute(gpu.model);
  device.attributes["productName"] = k8s::StringAttribute(gpu.product_name);
  device.attributes["driverVersion"] = k8s::VersionAttribute(gpu.driver_version);
  // A GPU in MIG mode is partitioned by its hardware: claims that need the
  // whole GPU select migEnabled == false.
  device.attributes["migEnabled"] = k8s::BoolAttribute(gpu.mig_enabled);
  device.attributes[k8s::kPciBusIdAttribute] = k8s::StringAttribute(gpu.pci_bus_id);
  if (!gpu.pcie_root.empty()) device.attributes[k8s::kPcieRootAttribute] = k8s::StringAttribute(gpu.pcie_root);
  if (gpu.numa_node.has_value()) device.attributes[k8s::kNumaNodeAttribute] = k8s::IntAttribute(*gpu.numa_node);
}

k8s::Quantity Bytes(int64_t bytes) { return k8s::Quantity::FromInt(bytes, k8s::Quantity::Format::kBinarySI); }

// A device's share of the GPU's multiprocessors, split `parts` ways; none
// when the count is unknown.
std::optional<k8s::Quantity> Compute(const std::optional<int64_t>& multiprocessors, int parts) {
  if (!multiprocessors.has_value()) return std::nullopt;
  return k8s::Quantity::FromInt(*multiprocessors / parts);
}

void SetHealth(int index, const PublishOptions& options, k8s::Device& device) {
  if (!options.unhealthy.contains(index)) return;
  k8s::DeviceTaint& taint = device.taints.emplace_back();
  taint.key = UnhealthyTaintKey(options.driver_name);
  taint.value = "true";
  taint.effect = options.fatal.contains(index) ? "NoExecute" : "NoSchedule";
}

}  // namespace

std::string GpuDeviceName(int index) { return absl::StrCat("gpu-", index); }
std::string FullDeviceName(int index) { return absl::StrCat("gpu-", index, "-full"); }
std::string PartitionDeviceName(int index, int partition) {
  return absl::StrCat("gpu-", index, "-partition-", partition);
}

std::vector<std::string> DeviceNames(int index, int partitions) {
  if (partitions <= 0) return {GpuDeviceName(index)};
  std::vector<std::string> names;
  for (int p = 0; p < partitions; ++p) names.push_back(PartitionDeviceName(index, p));
  names.push_back(FullDeviceName(index));
  return names;
}
std::map<std::string, std::vector<std::string>, std::less<>> DeviceUnits(const std::vector<GpuInfo>& gpus,
                                                                         int partitions) {
  std::map<std::string, std::vector<std::string>, std::less<>> units;
  for (const GpuInfo& gpu : gpus) {
    for (int p = 0; p < partitions; ++p) {
      const std::string unit = absl::StrCat(GpuDeviceName(gpu.index), "/", p);
      units[PartitionDeviceName(gpu.index, p)].push_back(unit);
      units[FullDeviceName(gpu.index)].push_back(unit);
    }
  }
  return units;
}

std::string UnhealthyTaintKey(const std::string& driver_name) { return driver_name + "/unhealthy"; }

dra::resourceslice::Pool NodePool(const std::vector<GpuInfo>& gpus, const PublishOptions& options) {
  std::vector<k8s::Device> devices;
  std::vector<k8s::CounterSet> counter_sets;
  for (const GpuInfo& gpu : gpus) {
    const k8s::Quantity memory = Bytes(gpu.memory_bytes);
    // Without a known multiprocessor count the devices have no compute
    // capacity (a 0 would fit no request for compute).
    const std::optional<k8s::Quantity> compute = Compute(gpu.compute_units, 1);
    const int partitions = std::max(options.partitions, 0);
    const int64_t part_memory = partitions > 0 ? gpu.memory_bytes / partitions : 0;
    const std::string counter_set = CounterSetName(gpu.index);
    // The partitions, then the whole GPU, in dra-example-driver's order (the
    // scheduler tries devices in slice order: a claim any of them fits gets a
    // partition from both drivers). Each draws its memory and compute from
    // the GPU's counter set, so the scheduler never hands out more than the
    // GPU has.
    auto add = [&](std::string name, const k8s::Quantity& device_memory,
                   const std::optional<k8s::Quantity>& device_compute) -> k8s::Device& {
      k8s::Device& device = devices.emplace_back();
      device.name = std::move(name);
      SetAttributes(gpu, device);
      SetHealth(gpu.index, options, device);
      if (options.allow_multiple_allocations) {
        device.allow_multiple_allocations = true;
        device.capacity[kMemory] = k8s::ShareableCapacity(device_memory, Bytes(1LL << 30));
        if (device_compute) {
          device.capacity[kCompute] = k8s::ShareableCapacity(*device_compute, k8s::Quantity::FromInt(1));
        }
      } else {
        device.capacity[kMemory] = k8s::Capacity(device_memory);
        if (device_compute) device.capacity[kCompute] = k8s::Capacity(*device_compute);
      }
      if (options.host_memory_overhead.has_value()) {
        device.node_allocatable_resources["memory"].overhead.emplace().per_pod = *options.host_memory_overhead;
      }
      if (partitions > 0) {
        device.attributes["partitionable"] = k8s::BoolAttribute(true);
        k8s::DeviceCounterConsumption& consumption = device.consumes_counters.emplace_back();
        consumption.counter_set = counter_set;
        consumption.counters[kMemory].value = device_memory;
        if (device_compute) consumption.counters[kCompute].value = *device_compute;
      }
      return device;
    };
    if (partitions == 0) {
      add(GpuDeviceName(gpu.index), memory, compute);
      continue;
    }
    k8s::CounterSet& counters = counter_sets.emplace_back();
    counters.name = counter_set;
    counters.counters[kMemory].value = memory;
    if (compute) counters.counters[kCompute].value = *compute;
    for (int p = 0; p < partitions; ++p) {
      k8s::Device& part =
          add(PartitionDeviceName(gpu.index, p), Bytes(part_memory), Compute(gpu.compute_units, partitions));
      part.attributes["partition"] = k8s::IntAttribute(p);
    }
    add(FullDeviceName(gpu.index), memory, compute).attributes["full"] = k8s::BoolAttribute(true);
  }
  dra::resourceslice::Pool pool;
  pool.slices = dra::resourceslice::SplitIntoSlices(std::move(devices), std::move(counter_sets));
  return pool;
}

}  // namespace gpu
