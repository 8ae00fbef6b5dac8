// What the CPU example publishes, in both modes and with memory devices:
// checked field by field, by the API server's validation rules
// (ValidateResourceSlice) and against the official OpenAPI document of
// resource.k8s.io/v1 kept in the repository.
#include <catch2/catch.hpp>

#include "cpu_resources.h"
#include "dra/k8s/resource_slice_json.h"
#include "fake_sysfs.h"
#include "pool_check.h"

namespace {

namespace k8s = dra::k8s;
using dra::testing::FakeMachine;
using dra::testing::FakeTopology;
using nlohmann::json;

cpu::PublishOptions Options(cpu::Mode mode = cpu::Mode::kGrouped, cpu::GroupBy by = cpu::GroupBy::kSocket) {
  cpu::PublishOptions options;
  options.driver_name = "cpu.example.com";
  options.node_name = "node-a";
  options.mode = mode;
  options.group_by = by;
  return options;
}

// Every slice of the pool, as the API server would take it.
void CheckValid(const dra::resourceslice::Pool& pool) {
  dra::testing::CheckPoolValid(pool, "cpu.example.com", "node-a");
}

json DeviceJson(const dra::resourceslice::Pool& pool, const std::string& name) {
  for (const auto& slice : pool.slices) {
    for (const k8s::Device& device : slice.devices) {
      if (device.name != name) continue;
      k8s::ResourceSlice one;
      one.spec.devices = {device};
      return k8s::ToJson(one)["spec"]["devices"][0];
    }
  }
  FAIL("no device " << name);
  return {};
}

TEST_CASE("grouped: a device per socket that claims take CPUs of, mapped to the node's cpu", "[examples][cpu]") {
  FakeMachine m;
  m.sockets = 2;
  m.threads_per_core = 2;
  cpu::PublishOptions options = Options();
  options.reserved = {0, 8};
  const dra::resourceslice::Pool pool = cpu::NodePool(FakeTopology(m), options);
  CheckValid(pool);
  REQUIRE(pool.slices[0].devices.size() == 2);
  const json socket0 = DeviceJson(pool, "cpu-socket-0");
  INFO(socket0.dump(1));
  CHECK(socket0["allowMultipleAllocations"] == true);
  CHECK(socket0["capacity"]["cpu.example.com/cpu"] ==
        json{{"value", "6"},
             {"requestPolicy", {{"default", "1"}, {"validRange", {{"min", "1"}, {"max", "6"}, {"step", "1"}}}}}});
  CHECK(socket0["nodeAllocatableResources"] ==
        json{{"cpu", {{"mapping", {{"capacityKey", "cpu.example.com/cpu"}, {"capacityMultiplier", "1"}}}}}});
  CHECK(socket0["attributes"]["socketID"] == json{{"int", 0}});
  CHECK(socket0["attributes"]["numaNodeID"] == json{{"int", 0}});
  CHECK(socket0["attributes"]["resource.kubernetes.io/numaNode"] == json{{"int", 0}});
  CHECK(socket0["attributes"]["smtEnabled"] == json{{"bool", true}});
  CHECK(socket0["attributes"]["resource"] == json{{"string", "cpu"}});
  CHECK(DeviceJson(pool, "cpu-socket-1")["capacity"]["cpu.example.com/cpu"]["value"] == "8");
}

TEST_CASE("bare capacity names, for a 1.38 server: the capacities and their node-allocatable keys", "[examples][cpu]") {
  FakeMachine m;
  cpu::PublishOptions options = Options(cpu::Mode::kGrouped, cpu::GroupBy::kNuma);
  options.memory_devices = true;
  options.bare_capacity_names = true;
  const dra::resourceslice::Pool pool = cpu::NodePool(FakeTopology(m), options);
  CheckValid(pool);
  const json numa0 = DeviceJson(pool, "cpu-numa-0");
  CHECK(numa0["capacity"].contains("cpu"));
  CHECK(numa0["nodeAllocatableResources"]["cpu"]["mapping"]["capacityKey"] == "cpu");
  const json memory0 = DeviceJson(pool, "memory-numa-0");
  CHECK(memory0["capacity"].contains("memory"));
  CHECK(memory0["nodeAllocatableResources"]["memory"]["mapping"]["capacityKey"] == "memory");
}

TEST_CASE("MatchesBareCapacityNames: from Kubernetes 1.38", "[examples][cpu]") {
  CHECK(cpu::MatchesBareCapacityNames("v1.38.0"));
  CHECK(cpu::MatchesBareCapacityNames("v1.38.0-beta.0"));
  CHECK(cpu::MatchesBareCapacityNames("v1.40.1+k3s1"));
  CHECK_FALSE(cpu::MatchesBareCapacityNames("v1.37.2"));
  CHECK_FALSE(cpu::MatchesBareCapacityNames("v1.3"));
  CHECK_FALSE(cpu::MatchesBareCapacityNames("v1.37.0-fakeapiserver"));
  CHECK_FALSE(cpu::MatchesBareCapacityNames(""));
  CHECK_FALSE(cpu::MatchesBareCapacityNames("1.38.0"));
}

TEST_CASE("grouped by NUMA node, with memory devices of each node", "[examples][cpu]") {
  FakeMachine m;
  m.sockets = 2;
  m.cores_per_socket = 8;
  m.numa_per_socket = 2;
  m.memory_per_numa_kib = (int64_t{8} << 20) + 100;  // 8 GiB and change: the capacity is whole MiB
  cpu::PublishOptions options = Options(cpu::Mode::kGrouped, cpu::GroupBy::kNuma);
  options.memory_devices = true;
  const dra::resourceslice::Pool pool = cpu::NodePool(FakeTopology(m), options);
  CheckValid(pool);
  const json numa3 = DeviceJson(pool, "cpu-numa-3");
  CHECK(numa3["attributes"]["numaNodeID"] == json{{"int", 3}});
  CHECK(numa3["attributes"]["socketID"] == json{{"int", 1}});
  CHECK(numa3["capacity"]["cpu.example.com/cpu"]["value"] == "4");
  const json memory2 = DeviceJson(pool, "memory-numa-2");
  INFO(memory2.dump(1));
  CHECK(memory2["attributes"]["numaNodeID"] == json{{"int", 2}});
  CHECK(memory2["attributes"]["resource.kubernetes.io/numaNode"] == json{{"int", 2}});
  CHECK(memory2["attributes"]["resource"] == json{{"string", "memory"}});
  CHECK(memory2["capacity"]["cpu.example.com/memory"]["value"] == "8Gi");
  CHECK(memory2["capacity"]["cpu.example.com/memory"]["requestPolicy"]["validRange"]["step"] == "1Mi");
  CHECK(memory2["nodeAllocatableResources"] ==
        json{{"memory", {{"mapping", {{"capacityKey", "cpu.example.com/memory"}, {"capacityMultiplier", "1"}}}}}});
}

TEST_CASE("individual: a device per CPU worth one node CPU, over several slices on a big machine", "[examples][cpu]") {
  FakeMachine m;
  m.sockets = 2;
  m.cores_per_socket = 64;
  m.threads_per_core = 2;
  cpu::PublishOptions options = Options(cpu::Mode::kIndividual);
  options.reserved = {0, 128};
  const dra::resourceslice::Pool pool = cpu::NodePool(FakeTopology(m), options);
  CheckValid(pool);
  size_t devices = 0;
  for (const auto& slice : pool.slices) devices += slice.devices.size();
  CHECK(devices == 254);
  CHECK(pool.slices.size() == 2);
  const json cpu129 = DeviceJson(pool, "cpu-129");
  CHECK(cpu129["attributes"]["cpuID"] == json{{"int", 129}});
  CHECK(cpu129["attributes"]["coreID"] == json{{"int", 1}});
  CHECK(cpu129["attributes"]["socketID"] == json{{"int", 0}});
  CHECK(cpu129["attributes"]["resource"] == json{{"string", "cpu"}});
  CHECK(cpu129["nodeAllocatableResources"] == json{{"cpu", {{"mapping", {{"deviceMultiplier", "1"}}}}}});
  CHECK_FALSE(cpu129.contains("allowMultipleAllocations"));
}

TEST_CASE("a socket with one allocatable CPU has no step to take, as the API server wants", "[examples][cpu]") {
  FakeMachine m;
  m.cores_per_socket = 2;
  cpu::PublishOptions options = Options();
  options.reserved = {0};
  const dra::resourceslice::Pool pool = cpu::NodePool(FakeTopology(m), options);
  CheckValid(pool);
  CHECK(DeviceJson(pool, "cpu-socket-0")["capacity"]["cpu.example.com/cpu"] ==
        json{{"value", "1"}, {"requestPolicy", {{"default", "1"}, {"validRange", {{"min", "1"}, {"max", "1"}}}}}});
}

TEST_CASE("pcieRoot: published where a NUMA node has exactly one PCIe root", "[examples][cpu]") {
  FakeMachine m;
  m.sockets = 2;
  m.pcie_roots_per_numa = 1;
  cpu::PublishOptions options = Options();
  options.memory_devices = true;
  const dra::resourceslice::Pool pool = cpu::NodePool(FakeTopology(m), options);
  CheckValid(pool);
  CHECK(DeviceJson(pool, "cpu-socket-1")["attributes"]["resource.kubernetes.io/pcieRoot"] ==
        json{{"string", "pci0000:01"}});
  CHECK(DeviceJson(pool, "memory-numa-0")["attributes"]["resource.kubernetes.io/pcieRoot"] ==
        json{{"string", "pci0000:00"}});
  const dra::resourceslice::Pool individual = cpu::NodePool(FakeTopology(m), Options(cpu::Mode::kIndividual));
  CHECK(DeviceJson(individual, "cpu-5")["attributes"]["resource.kubernetes.io/pcieRoot"] ==
        json{{"string", "pci0000:01"}});

  m.pcie_roots_per_numa = 2;  // which one would a claim mean?
  const dra::resourceslice::Pool two = cpu::NodePool(FakeTopology(m), Options());
  CHECK_FALSE(DeviceJson(two, "cpu-socket-0")["attributes"].contains("resource.kubernetes.io/pcieRoot"));
  // No PCIe roots with a NUMA node (this test machine's reports -1).
  const dra::resourceslice::Pool none = cpu::NodePool(FakeTopology(FakeMachine{}), Options());
  CHECK_FALSE(DeviceJson(none, "cpu-socket-0")["attributes"].contains("resource.kubernetes.io/pcieRoot"));
}

TEST_CASE("a socket whose CPUs are all reserved is not published", "[examples][cpu]") {
  FakeMachine m;
  m.sockets = 2;
  cpu::PublishOptions options = Options();
  options.reserved = {0, 1, 2, 3};
  const dra::resourceslice::Pool pool = cpu::NodePool(FakeTopology(m), options);
  REQUIRE(pool.slices.size() == 1);
  REQUIRE(pool.slices[0].devices.size() == 1);
  CHECK(pool.slices[0].devices[0].name == "cpu-socket-1");
}

TEST_CASE("grouped by NUMA node on a made-up topology: dra-example-driver's cpu profile, \"numa-<id>\"",
          "[examples][cpu]") {
  cpu::PublishOptions options = Options(cpu::Mode::kGrouped, cpu::GroupBy::kNuma);
  options.numa_device_prefix = "numa-";
  const dra::resourceslice::Pool pool = cpu::NodePool(cpu::MockTopology(8, 4), options);
  CheckValid(pool);
  REQUIRE(pool.slices.size() == 1);
  REQUIRE(pool.slices[0].devices.size() == 8);
  CHECK(cpu::NumaDeviceName(options, 7) == "numa-7");
  const json numa7 = DeviceJson(pool, "numa-7");
  INFO(numa7.dump(1));
  CHECK(numa7["allowMultipleAllocations"] == true);
  CHECK(numa7["attributes"]["numaNodeID"] == json{{"int", 7}});
  CHECK(numa7["capacity"]["cpu.example.com/cpu"]["value"] == "4");
  CHECK(numa7["nodeAllocatableResources"]["cpu"]["mapping"]["capacityKey"] == "cpu.example.com/cpu");
}

}  // namespace
