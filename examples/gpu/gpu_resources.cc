#include "gpu_resources.h"

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
}

k8s::Quantity Bytes(int64_t bytes) { return k8s::Quantity::FromInt(bytes, k8s::Quantity::Format::kBinarySI); }

void SetHealth(int index, const PublishOptions& options, k8s::Device& device) {
  if (!options.unhealthy.contains(index)) return;
  k8s::DeviceTaint& taint = device.taints.emplace_back();
  taint.key = UnhealthyTaintKey(options.driver_name);
  taint.value = "true";
  taint.effect = options.fatal.contains(index) ? "NoExecute" : "NoSchedule";
}

}  // namespace

std::string GpuDeviceName(int index) { return absl::StrCat("gpu-", index); }
std::string PartitionDeviceName(int index, int partition) { return absl::StrCat("gpu-", index, "-part-", partition); }
std::string FabricDeviceName(int index) { return absl::StrCat("fabric-gpu-", index); }
std::string UnhealthyTaintKey(const std::string& driver_name) { return driver_name + "/unhealthy"; }
std::string IsPreparedCondition(const std::string& driver_name) { return driver_name + "/is-prepared"; }
std::string PreparingFailedCondition(const std::string& driver_name) { return driver_name + "/preparing-failed"; }

dra::resourceslice::Pool NodePool(const std::vector<GpuInfo>& gpus, const PublishOptions& options) {
  std::vector<k8s::Device> devices;
  std::vector<k8s::CounterSet> counter_sets;
  for (const GpuInfo& gpu : gpus) {
    const k8s::Quantity memory = Bytes(gpu.memory_bytes);
    const k8s::Quantity compute = k8s::Quantity::FromInt(gpu.compute_units);
    k8s::Device& whole = devices.emplace_back();
    whole.name = GpuDeviceName(gpu.index);
    SetAttributes(gpu, whole);
    SetHealth(gpu.index, options, whole);
    if (options.allow_multiple_allocations) {
      whole.allow_multiple_allocations = true;
      whole.capacity[kMemory] = k8s::ShareableCapacity(memory, Bytes(1LL << 30));
      whole.capacity[kCompute] = k8s::ShareableCapacity(compute, k8s::Quantity::FromInt(1));
    } else {
      whole.capacity[kMemory] = k8s::Capacity(memory);
      whole.capacity[kCompute] = k8s::Capacity(compute);
    }
    if (options.host_memory_overhead.has_value()) {
      whole.node_allocatable_resources["memory"].overhead.emplace().per_pod = *options.host_memory_overhead;
    }
    if (options.partitions <= 0) continue;

    // The whole GPU and each partition draw from one counter set, so the
    // scheduler never hands out more than the GPU has.
    k8s::CounterSet& counters = counter_sets.emplace_back();
    counters.name = CounterSetName(gpu.index);
    counters.counters[kMemory].value = memory;
    counters.counters[kCompute].value = compute;
    k8s::DeviceCounterConsumption& all = whole.consumes_counters.emplace_back();
    all.counter_set = counters.name;
    all.counters = counters.counters;
    const int64_t part_memory = gpu.memory_bytes / options.partitions;
    const int64_t part_compute = gpu.compute_units / options.partitions;
    for (int p = 0; p < options.partitions; ++p) {
      k8s::Device& part = devices.emplace_back();
      part.name = PartitionDeviceName(gpu.index, p);
      SetAttributes(gpu, part);
      part.attributes["partition"] = k8s::IntAttribute(p);
      SetHealth(gpu.index, options, part);
      part.capacity[kMemory] = k8s::Capacity(Bytes(part_memory));
      part.capacity[kCompute] = k8s::Capacity(k8s::Quantity::FromInt(part_compute));
      k8s::DeviceCounterConsumption& share = part.consumes_counters.emplace_back();
      share.counter_set = counters.name;
      share.counters[kMemory].value = Bytes(part_memory);
      share.counters[kCompute].value = k8s::Quantity::FromInt(part_compute);
      if (options.host_memory_overhead.has_value()) {
        part.node_allocatable_resources["memory"].overhead.emplace().per_pod = *options.host_memory_overhead;
      }
    }
  }
  dra::resourceslice::Pool pool;
  pool.slices = dra::resourceslice::SplitIntoSlices(std::move(devices), std::move(counter_sets));
  return pool;
}

dra::resourceslice::Pool FabricPool(const std::vector<GpuInfo>& gpus, const std::string& driver_name,
                                    const k8s::NodeSelector& selector) {
  std::vector<k8s::Device> devices;
  for (const GpuInfo& gpu : gpus) {
    k8s::Device& device = devices.emplace_back();
    device.name = FabricDeviceName(gpu.index);
    SetAttributes(gpu, device);
    device.capacity[kMemory] = k8s::Capacity(Bytes(gpu.memory_bytes));
    device.capacity[kCompute] = k8s::Capacity(k8s::Quantity::FromInt(gpu.compute_units));
    device.attributes["fabricAttached"] = k8s::BoolAttribute(true);
    device.binds_to_node = true;
    device.binding_conditions = {IsPreparedCondition(driver_name)};
    device.binding_failure_conditions = {PreparingFailedCondition(driver_name)};
  }
  dra::resourceslice::Pool pool;
  pool.nodes = dra::resourceslice::NodeSelection::kNodeSelector;
  pool.node_selector = selector;
  pool.slices = dra::resourceslice::SplitIntoSlices(std::move(devices));
  return pool;
}

}  // namespace gpu
