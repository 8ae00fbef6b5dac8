#include "cpu_resources.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "dra/k8s/client.h"
#include "dra/k8s/device_attributes.h"
#include "dra/resourceslice/split.h"

namespace cpu {
namespace k8s = dra::k8s;

namespace {

std::vector<int> Allocatable(const std::vector<int>& cpus, const std::set<int>& reserved) {
  std::vector<int> out;
  for (int c : cpus) {
    if (!reserved.contains(c)) out.push_back(c);
  }
  return out;
}

// The one value of `field` over `cpus`, if they all share it.
template <typename Field>
std::optional<int> Common(const Topology& topology, const std::vector<int>& cpus, Field field) {
  std::set<int> values;
  for (int id : cpus) values.insert(field(*topology.Find(id)));
  if (values.size() != 1) return std::nullopt;
  return *values.begin();
}

// The one PCIe root of the NUMA nodes of `cpus`, when there is exactly one:
// then a claim can ask for CPUs next to a GPU or NIC with matchAttribute.
std::optional<std::string> PcieRoot(const Topology& topology, const std::vector<int>& cpus) {
  std::set<int> nodes;
  for (int id : cpus) nodes.insert(topology.Find(id)->numa_node);
  std::set<std::string> roots;
  for (int node : nodes) {
    if (auto it = topology.pcie_roots.find(node); it != topology.pcie_roots.end()) {
      roots.insert(it->second.begin(), it->second.end());
    }
  }
  if (roots.size() != 1) return std::nullopt;
  return *roots.begin();
}

// A device that claims share by `capacity_name`, mapped to the node's
// allocatable `resource`.
k8s::Device SharedDevice(std::string name, const std::string& capacity_name, k8s::Quantity total, k8s::Quantity step,
                         const std::string& resource) {
  k8s::Device device;
  device.name = std::move(name);
  device.allow_multiple_allocations = true;
  device.capacity[capacity_name] = k8s::ShareableCapacity(std::move(total), std::move(step));
  // One node CPU (byte) per unit of capacity; 1.37 wants the multiplier said.
  k8s::NodeAllocatableMapping& mapping = device.node_allocatable_resources[resource].mapping.emplace();
  mapping.capacity_key = capacity_name;
  mapping.capacity_multiplier = k8s::Quantity::FromInt(1);
  return device;
}

}  // namespace

std::string SocketDeviceName(int socket) { return absl::StrCat("cpu-socket-", socket); }
std::string NumaDeviceName(const PublishOptions& options, int id) {
  return absl::StrCat(options.numa_device_prefix, id);
}
std::string CpuDeviceName(int cpu) { return absl::StrCat("cpu-", cpu); }
std::string MemoryDeviceName(int numa_node) { return absl::StrCat("memory-numa-", numa_node); }
std::string CpuCapacityName(const std::string& driver_name, bool bare) { return bare ? "cpu" : driver_name + "/cpu"; }
std::string MemoryCapacityName(const std::string& driver_name, bool bare) {
  return bare ? "memory" : driver_name + "/memory";
}

bool MatchesBareCapacityNames(std::string_view server_version) {
  absl::string_view version(server_version.data(), server_version.size());
  int minor = 0;
  return absl::ConsumePrefix(&version, "v1.") &&
         absl::SimpleAtoi(version.substr(0, version.find_first_not_of("0123456789")), &minor) && minor >= 38;
}

void ChooseCapacityNames(dra::kubeletplugin::Options& options, PublishOptions& publish, const dra::Logger& logger) {
  // Claims ask for "<driver>/cpu" and "<driver>/memory", as with the
  // upstream CPU driver. A 1.38 scheduler matches them to bare names, which
  // the publisher then insists on (DriverDomainNames::kRefuse, the default);
  // an older one matches names as written (kubernetes#142202), so there the
  // qualified names are published, and allowed.
  absl::StatusOr<std::string> server_version = options.kube_client->ServerVersion();
  if (!server_version.ok()) {
    logger.Warning(
        "Cannot ask the API server's version; publishing qualified capacity names, which every release "
        "matches",
        {{"err", server_version.status().ToString()}});
  }
  publish.bare_capacity_names = server_version.ok() && MatchesBareCapacityNames(*server_version);
  if (!publish.bare_capacity_names) {
    options.resource_slices.driver_domain_names = dra::resourceslice::DriverDomainNames::kAllow;
  }
}

dra::resourceslice::Pool NodePool(const Topology& topology, const PublishOptions& options) {
  std::vector<k8s::Device> devices;
  const bool smt = topology.smt();
  if (options.mode == Mode::kGrouped) {
    std::vector<std::pair<int, std::vector<int>>> groups;
    if (options.group_by == GroupBy::kSocket) {
      for (int socket : topology.Sockets()) groups.emplace_back(socket, topology.SocketCpus(socket));
    } else {
      for (const auto& [id, node] : topology.numa_nodes) groups.emplace_back(id, topology.NumaCpus(id));
    }
    for (const auto& [id, cpus] : groups) {
      const std::vector<int> allocatable = Allocatable(cpus, options.reserved);
      if (allocatable.empty()) continue;
      k8s::Device device = SharedDevice(
          options.group_by == GroupBy::kSocket ? SocketDeviceName(id) : NumaDeviceName(options, id),
          CpuCapacityName(options.driver_name, options.bare_capacity_names),
          k8s::Quantity::FromInt(static_cast<int64_t>(allocatable.size())), k8s::Quantity::FromInt(1), "cpu");
      if (std::optional<int> socket = Common(topology, cpus, [](const Cpu& c) { return c.socket_id; })) {
        device.attributes["socketID"] = k8s::IntAttribute(*socket);
      }
      if (std::optional<int> node = Common(topology, cpus, [](const Cpu& c) { return c.numa_node; })) {
        device.attributes["numaNodeID"] = k8s::IntAttribute(*node);
        device.attributes[k8s::kNumaNodeAttribute] = k8s::IntAttribute(*node);
      }
      if (std::optional<std::string> root = PcieRoot(topology, cpus)) {
        device.attributes[k8s::kPcieRootAttribute] = k8s::StringAttribute(*root);
      }
      device.attributes["smtEnabled"] = k8s::BoolAttribute(smt);
      device.attributes["resource"] = k8s::StringAttribute("cpu");
      devices.push_back(std::move(device));
    }
  } else {
    for (const Cpu& cpu : topology.cpus) {
      if (options.reserved.contains(cpu.id)) continue;
      k8s::Device& device = devices.emplace_back();
      device.name = CpuDeviceName(cpu.id);
      device.attributes["cpuID"] = k8s::IntAttribute(cpu.id);
      device.attributes["coreID"] = k8s::IntAttribute(cpu.core_id);
      device.attributes["socketID"] = k8s::IntAttribute(cpu.socket_id);
      device.attributes["numaNodeID"] = k8s::IntAttribute(cpu.numa_node);
      device.attributes[k8s::kNumaNodeAttribute] = k8s::IntAttribute(cpu.numa_node);
      device.attributes["smtEnabled"] = k8s::BoolAttribute(smt);
      if (std::optional<std::string> root = PcieRoot(topology, {cpu.id})) {
        device.attributes[k8s::kPcieRootAttribute] = k8s::StringAttribute(*root);
      }
      device.attributes["resource"] = k8s::StringAttribute("cpu");
      device.node_allocatable_resources["cpu"].mapping.emplace().device_multiplier = k8s::Quantity::FromInt(1);
    }
  }
  if (options.memory_devices) {
    for (const auto& [id, node] : topology.numa_nodes) {
      // Whole MiB, the step claims take it in.
      constexpr int64_t kMiB = int64_t{1} << 20;
      const int64_t memory = node.memory_bytes / kMiB * kMiB;
      if (memory <= 0) continue;
      k8s::Device device =
          SharedDevice(MemoryDeviceName(id), MemoryCapacityName(options.driver_name, options.bare_capacity_names),
                       k8s::Quantity::FromInt(memory, k8s::Quantity::Format::kBinarySI),
                       k8s::Quantity::FromInt(kMiB, k8s::Quantity::Format::kBinarySI), "memory");
      device.attributes["numaNodeID"] = k8s::IntAttribute(id);
      device.attributes[k8s::kNumaNodeAttribute] = k8s::IntAttribute(id);
      device.attributes["resource"] = k8s::StringAttribute("memory");
      if (auto roots = topology.pcie_roots.find(id); roots != topology.pcie_roots.end() && roots->second.size() == 1) {
        device.attributes[k8s::kPcieRootAttribute] = k8s::StringAttribute(roots->second.front());
      }
      devices.push_back(std::move(device));
    }
  }
  dra::resourceslice::Pool pool;
  pool.slices = dra::resourceslice::SplitIntoSlices(std::move(devices));
  return pool;
}

}  // namespace cpu
