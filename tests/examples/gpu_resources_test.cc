// What the example GPU driver publishes, checked against the API server's
// validation rules (ValidateResourceSlice) and the official OpenAPI document
// as well as field by field.
#include <catch2/catch.hpp>

#include "fabric_pool.h"
#include "gpu_extras.h"
#include "gpu_resources.h"
#include "mock_gpus.h"
#include "pool_check.h"

namespace {

namespace k8s = dra::k8s;
using dra::resourceslice::Pool;

std::vector<gpu::GpuInfo> Gpus(int n) { return *gpu::MockGpus("node-a", n, "").Discover(); }

gpu::PublishOptions Options() {
  gpu::PublishOptions options;
  options.driver_name = "gpu.example.com";
  options.node_name = "node-a";
  return options;
}

// Every slice of the pool as the API server would take it.
void CheckValid(const Pool& pool, bool node_local = true) {
  dra::testing::CheckPoolValid(pool, "gpu.example.com", node_local ? "node-a" : "");
}

TEST_CASE("whole GPUs carry the documented attributes and capacity", "[gpu][resources]") {
  const Pool pool = gpu::NodePool(Gpus(2), Options());
  CheckValid(pool);
  REQUIRE(pool.slices.size() == 1);
  REQUIRE(pool.slices[0].devices.size() == 2);
  const k8s::Device& device = pool.slices[0].devices[1];
  CHECK(device.name == "gpu-1");
  CHECK(device.attributes.at("index").int_value == 1);
  CHECK(device.attributes.at("uuid").string_value->rfind("GPU-", 0) == 0);
  CHECK(device.attributes.at("model").string_value == "LATEST-GPU-MODEL");
  CHECK(device.attributes.at("productName").string_value == "Mock GPU 80GB");
  CHECK(device.attributes.at("driverVersion").version_value == "1.0.0");
  CHECK(device.attributes.at("migEnabled").bool_value == false);
  CHECK(device.attributes.at("resource.kubernetes.io/pciBusID").string_value == "0000:43:00.0");
  CHECK(device.attributes.at("resource.kubernetes.io/pcieRoot").string_value.has_value());
  CHECK(device.capacity.at("memory").value.ToString() == "80Gi");
  CHECK(device.capacity.at("compute").value.ToString() == "108");
  CHECK_FALSE(device.allow_multiple_allocations.has_value());
  CHECK(device.taints.empty());
}

TEST_CASE("partitioned GPUs: partitions and the whole draw from one counter set per GPU in slices of their own",
          "[gpu][resources]") {
  gpu::PublishOptions options = Options();
  options.partitions = 4;
  const Pool pool = gpu::NodePool(Gpus(2), options);
  CheckValid(pool);
  REQUIRE(pool.slices.size() == 2);
  REQUIRE(pool.slices[0].shared_counters.size() == 2);
  CHECK(pool.slices[0].devices.empty());
  const k8s::CounterSet& counters = pool.slices[0].shared_counters[0];
  CHECK(counters.name == "gpu-0-counters");
  CHECK(counters.counters.at("memory").value.ToString() == "80Gi");
  REQUIRE(pool.slices[1].devices.size() == 10);
  // dra-example-driver's order: a GPU's partitions, then the whole GPU.
  const k8s::Device& whole = pool.slices[1].devices[4];
  CHECK(whole.name == "gpu-0-full");
  CHECK(whole.attributes.at("full").bool_value == true);
  CHECK(whole.attributes.at("partitionable").bool_value == true);
  REQUIRE(whole.consumes_counters.size() == 1);
  CHECK(whole.consumes_counters[0].counters.at("memory").value.ToString() == "80Gi");
  const k8s::Device& part = pool.slices[1].devices[0];
  CHECK(part.name == "gpu-0-partition-0");
  CHECK(part.attributes.at("partition").int_value == 0);
  CHECK(part.attributes.at("partitionable").bool_value == true);
  CHECK_FALSE(part.attributes.contains("full"));
  CHECK(part.consumes_counters[0].counter_set == "gpu-0-counters");
  CHECK(part.consumes_counters[0].counters.at("memory").value.ToString() == "20Gi");
  CHECK(part.consumes_counters[0].counters.at("compute").value.ToString() == "27");
  CHECK(part.capacity.at("memory").value.ToString() == "20Gi");
  std::vector<std::string> names;
  for (const k8s::Device& device : pool.slices[1].devices) names.push_back(device.name);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 5) == gpu::DeviceNames(0, 4));
}

TEST_CASE("device units: a partition occupies its share of its GPU, the whole device all of them", "[gpu][resources]") {
  const auto units = gpu::DeviceUnits(Gpus(2), /*partitions=*/2);
  CHECK(units.at("gpu-0-partition-0") == std::vector<std::string>{"gpu-0/0"});
  CHECK(units.at("gpu-0-partition-1") == std::vector<std::string>{"gpu-0/1"});
  CHECK(units.at("gpu-0-full") == std::vector<std::string>{"gpu-0/0", "gpu-0/1"});
  CHECK(units.at("gpu-1-full") == std::vector<std::string>{"gpu-1/0", "gpu-1/1"});
  CHECK(units.size() == 6);
  // Without partitions every GPU is only itself.
  CHECK(gpu::DeviceUnits(Gpus(2), /*partitions=*/0).empty());
}

TEST_CASE("a GPU whose multiprocessor count is unknown has no compute capacity or counter", "[gpu][resources]") {
  std::vector<gpu::GpuInfo> gpus = Gpus(1);
  gpus[0].compute_units = std::nullopt;
  const Pool whole = gpu::NodePool(gpus, Options());
  CheckValid(whole);
  CHECK_FALSE(whole.slices[0].devices[0].capacity.contains("compute"));
  CHECK(whole.slices[0].devices[0].capacity.contains("memory"));

  gpu::PublishOptions options = Options();
  options.partitions = 2;
  options.allow_multiple_allocations = true;
  const Pool parts = gpu::NodePool(gpus, options);
  CheckValid(parts);
  CHECK_FALSE(parts.slices[0].shared_counters[0].counters.contains("compute"));
  CHECK(parts.slices[0].shared_counters[0].counters.contains("memory"));
  for (const k8s::Device& device : parts.slices[1].devices) {
    CHECK_FALSE(device.capacity.contains("compute"));
    CHECK_FALSE(device.consumes_counters[0].counters.contains("compute"));
  }
}

TEST_CASE("partitions shared by several claims each take memory and compute by request", "[gpu][resources]") {
  gpu::PublishOptions options = Options();
  options.partitions = 2;
  options.allow_multiple_allocations = true;
  const Pool pool = gpu::NodePool(Gpus(1), options);
  CheckValid(pool);
  for (const k8s::Device& device : pool.slices[1].devices) {
    INFO(device.name);
    CHECK(device.allow_multiple_allocations == true);
    const k8s::CapacityRequestPolicy& memory = *device.capacity.at("memory").request_policy;
    CHECK(memory.valid_range->min.ToString() == "1Gi");
    CHECK(memory.valid_range->step->ToString() == "1Gi");
    CHECK(memory.valid_range->max == device.capacity.at("memory").value);
    CHECK(device.capacity.at("compute").request_policy->valid_range->max == device.capacity.at("compute").value);
  }
}

TEST_CASE("shareable GPUs take memory and compute requests, overhead and taints are published", "[gpu][resources]") {
  gpu::PublishOptions options = Options();
  options.allow_multiple_allocations = true;
  options.host_memory_overhead = *k8s::Quantity::Parse("8Gi");
  options.unhealthy = {0, 1};
  options.fatal = {1};
  const Pool pool = gpu::NodePool(Gpus(2), options);
  CheckValid(pool);
  const k8s::Device& device = pool.slices[0].devices[0];
  CHECK(device.allow_multiple_allocations == true);
  const k8s::CapacityRequestPolicy& memory = *device.capacity.at("memory").request_policy;
  CHECK(memory.default_value->ToString() == "1Gi");
  CHECK(memory.valid_range->min.ToString() == "1Gi");
  CHECK(memory.valid_range->step->ToString() == "1Gi");
  CHECK(memory.valid_range->max->ToString() == "80Gi");
  CHECK(device.capacity.at("compute").request_policy->valid_range->step->ToString() == "1");
  CHECK(device.node_allocatable_resources.at("memory").overhead->per_pod->ToString() == "8Gi");
  REQUIRE(device.taints.size() == 1);
  CHECK(device.taints[0].key == "gpu.example.com/unhealthy");
  CHECK(device.taints[0].effect == "NoSchedule");
  CHECK(pool.slices[0].devices[1].taints[0].effect == "NoExecute");
}

TEST_CASE("fabric GPUs bind to the node the scheduler picks through binding conditions", "[gpu][resources]") {
  const k8s::NodeSelector selector = k8s::NodeSelectorForLabel("accelerator-type", {"high-performance"});
  const Pool pool = gpu::FabricPool(Gpus(3), "gpu.example.com", selector);
  CheckValid(pool, /*node_local=*/false);
  CHECK(pool.nodes == dra::resourceslice::NodeSelection::kNodeSelector);
  CHECK(pool.node_selector == selector);
  const k8s::Device& device = pool.slices[0].devices[2];
  CHECK(device.name == "fabric-gpu-2");
  CHECK(device.binds_to_node == true);
  CHECK(device.binding_conditions == std::vector<std::string>{"gpu.example.com/is-prepared"});
  CHECK(device.binding_failure_conditions == std::vector<std::string>{"gpu.example.com/preparing-failed"});
}

TEST_CASE("with binding conditions every device of the node waits for its plugin's is-prepared condition",
          "[gpu][resources]") {
  gpu::PublishOptions options = Options();
  options.partitions = 2;
  gpu::ReferenceFlags flags;
  flags.binding_conditions = true;
  gpu::GpuFlags gpu_flags;
  gpu_flags.driver_name = "gpu.example.com";
  dra::resourceslice::DriverResources resources;
  resources.pools["node-a"] = gpu::NodePool(Gpus(1), options);
  gpu::ReferenceExtras(flags, gpu_flags, "node-a", dra::Logger(nullptr)).AddResources(resources);
  REQUIRE(resources.pools.size() == 1);
  const Pool& pool = resources.pools["node-a"];
  CheckValid(pool);
  for (const k8s::Device& device : pool.slices[1].devices) {
    INFO(device.name);
    CHECK(device.binding_conditions == std::vector<std::string>{"gpu.example.com/is-prepared"});
    CHECK(device.binding_failure_conditions == std::vector<std::string>{"gpu.example.com/preparing-failed"});
    CHECK_FALSE(device.binds_to_node.has_value());
  }
}

}  // namespace
