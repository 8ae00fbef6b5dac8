// CpuDriver behind a real Helper, with its checkpoint and CDI spec dir in a
// temp dir and the test as the kubelet: claims get concrete CPUs in their CDI
// spec (env and annotation), a restart neither hands a CPU out twice nor
// changes a prepared claim's CPUs, a request that cannot be met fails only its
// claim naming the numbers, unprepare frees the CPUs, and the driver's metrics
// show it all.
#include <catch2/catch.hpp>

#include "cpu_driver.h"
#include "cpuset.h"
#include "dra/cdi/codec.h"
#include "dractl/kubelet_client.h"
#include "fake_sysfs.h"
#include "support/helper_dirs.h"
#include "support/temp_dir.h"
#include "topology.h"

namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
using dra::kubeletclient::DraApi;
using dra::kubeletclient::DraClient;
using dra::testing::FakeMachine;
using dra::testing::FakeTopology;

constexpr char kDriver[] = "cpu.example.com";

// Two sockets of 4 cores, 2 threads each.
FakeMachine TwoSocketsSmt() {
  FakeMachine m;
  m.sockets = 2;
  m.threads_per_core = 2;
  return m;
}

// A claim allocated `cpus` CPUs of socket `socket` (and more results).
// With `bare`, the consumed capacity is named as a 1.38 scheduler names it
// for a device that publishes the bare name.
k8s::ResourceClaim Claim(const std::string& uid, std::vector<std::pair<std::string, int64_t>> devices,
                         bool bare = false) {
  k8s::ResourceClaim claim;
  claim.metadata.namespace_ = "ns";
  claim.metadata.name = "claim-" + uid;
  claim.metadata.uid = uid;
  k8s::AllocationResult& allocation = claim.status.allocation.emplace();
  for (const auto& [device, cpus] : devices) {
    k8s::DeviceRequestAllocationResult& result = allocation.devices.results.emplace_back();
    result.request = "cpus";
    result.driver = kDriver;
    result.pool = "node-1";
    result.device = device;
    if (cpus > 0) {
      result.consumed_capacity[cpu::CpuCapacityName(kDriver, bare)] = k8s::Quantity::FromInt(cpus);
      result.share_id = "share-" + uid + "-" + device;
    }
  }
  return claim;
}

struct Fixture : dra::testing::HelperDirs {
  std::shared_ptr<kp::InMemoryClaimSource> claims = std::make_shared<kp::InMemoryClaimSource>();
  cpu::PublishOptions publish = [] {
    cpu::PublishOptions options;
    options.driver_name = kDriver;
    options.node_name = "node-1";
    options.reserved = {0};
    return options;
  }();

  kp::Options Options() const {
    kp::Options options = MakeOptions(claims);
    options.driver_name = kDriver;
    options.plugin_data_dir = dir.Join("plugins/cpu.example.com");
    return options;
  }
  std::unique_ptr<cpu::CpuDriver> NewDriver() const {
    return std::make_unique<cpu::CpuDriver>(publish, FakeTopology(TwoSocketsSmt()), dra::testing::DiscardLogger());
  }

  // Prepares `claim` through the Helper; the outcome's error, or "".
  std::string Prepare(kp::Helper& helper, const k8s::ResourceClaim& claim) {
    claims->Put(claim);
    const k8s::ClaimRef ref = k8s::ClaimRefOf(claim);
    auto prepared = DraClient::Create(helper.dra_socket_path())->NodePrepareResources(DraApi::kV1, {&ref, 1});
    REQUIRE(prepared.ok());
    return prepared->at(claim.metadata.uid).error;
  }
  void Unprepare(kp::Helper& helper, const std::string& uid) {
    const k8s::ClaimRef ref{"ns", "claim-" + uid, uid};
    auto unprepared = DraClient::Create(helper.dra_socket_path())->NodeUnprepareResources(DraApi::kV1, {&ref, 1});
    REQUIRE(unprepared.ok());
    CHECK(unprepared->at(uid).empty());
  }
  // The claim's CDI spec as the container runtime reads it.
  dra::cdi::Spec Spec(const std::string& uid) const {
    absl::StatusOr<dra::cdi::Spec> spec = dra::cdi::DecodeSpec(
        dra::testing::ReadFile(cdi_dir + "/cpu.example.com-claim_" + uid + ".json"), dra::cdi::Format::kJson);
    INFO(spec.status().ToString());
    REQUIRE(spec.ok());
    return *std::move(spec);
  }
};

TEST_CASE("CpuDriver: claims get whole cores of their socket in the CDI spec, never twice, also after a restart",
          "[examples][cpu]") {
  Fixture f;
  {
    auto driver = f.NewDriver();
    auto helper = Fixture::Start(*driver, f.Options());
    // Socket 0 is CPUs 0-3 and 8-11; 0 is reserved, so core 0 has only 8.
    REQUIRE(f.Prepare(*helper, Claim("a-1", {{"cpu-socket-0", 4}})) == "");
    CHECK(driver->Held().at("a-1") == std::vector<int>{1, 2, 9, 10});
    const dra::cdi::Spec spec = f.Spec("a-1");
    REQUIRE(spec.devices.size() == 1);
    CHECK(spec.devices[0].container_edits.env == std::vector<std::string>{"DRA_CPUSET_a_1=1-2,9-10"});
    CHECK(spec.devices[0].annotations.at("cpu.example.com/cpuset") == "1-2,9-10");
    REQUIRE(f.Prepare(*helper, Claim("b", {{"cpu-socket-0", 2}})) == "");
    CHECK(driver->Held().at("b") == std::vector<int>{3, 11});
    CHECK_THAT(driver->Metrics(),
               Catch::Contains("dra_cpu_allocatable_cpus 15\n") && Catch::Contains("dra_cpu_allocated_cpus 6\n") &&
                   Catch::Contains("dra_cpu_reserved_cpus 1\n") && Catch::Contains("dra_cpu_active_claims 2\n"));
  }
  // A new process: the checkpoint tells the new driver what is taken, and
  // its NRI pinner (started before the Helper) hears of the restored claims.
  auto driver = f.NewDriver();
  size_t pinned_after_restore = 0;
  driver->OnPinningChanged([&] { pinned_after_restore = driver->Pinning().claims.size(); });
  auto helper = Fixture::Start(*driver, f.Options());
  CHECK(pinned_after_restore == 2);
  CHECK(driver->Held().at("a-1") == std::vector<int>{1, 2, 9, 10});
  CHECK(driver->Held().at("b") == std::vector<int>{3, 11});
  CHECK_THAT(driver->Metrics(), Catch::Contains("dra_cpu_active_claims 2\n"));
  REQUIRE(f.Prepare(*helper, Claim("a-1", {{"cpu-socket-0", 4}})) == "");  // from the checkpoint
  CHECK(f.Spec("a-1").devices[0].container_edits.env == std::vector<std::string>{"DRA_CPUSET_a_1=1-2,9-10"});
  // One CPU (8) is left in socket 0.
  CHECK(f.Prepare(*helper, Claim("c", {{"cpu-socket-0", 2}})) ==
        "needs 2 CPUs of socket 0, 1 are free (8 online, 1 reserved, 6 held by other claims)");
  CHECK_FALSE(driver->Held().contains("c"));
  f.Unprepare(*helper, "b");
  CHECK_FALSE(std::filesystem::exists(f.cdi_dir + "/cpu.example.com-claim_b.json"));
  REQUIRE(f.Prepare(*helper, Claim("c", {{"cpu-socket-0", 2}})) == "");
  CHECK(driver->Held().at("c") == std::vector<int>{3, 11});
}

TEST_CASE("CpuDriver: the consumed CPUs under either spelling of the capacity name", "[examples][cpu]") {
  Fixture f;
  f.publish.bare_capacity_names = true;
  auto driver = f.NewDriver();
  kp::Options options = f.Options();
  options.device_exclusivity.enabled = false;  // the failed claim "none" would hold socket 1
  auto helper = Fixture::Start(*driver, options);
  CHECK(f.Prepare(*helper, Claim("none", {{"cpu-socket-1", 0}})) ==
        "device cpu-socket-1: the allocation has no consumedCapacity cpu (the cluster needs the "
        "DRAConsumableCapacity feature)");
  REQUIRE(f.Prepare(*helper, Claim("bare", {{"cpu-socket-0", 2}}, true)) == "");
  CHECK(driver->Held().at("bare").size() == 2);
  // Allocated before the server's upgrade to 1.38, when the name was qualified.
  REQUIRE(f.Prepare(*helper, Claim("qualified", {{"cpu-socket-1", 3}})) == "");
  CHECK(driver->Held().at("qualified").size() == 3);
}

TEST_CASE("CpuDriver: single CPUs, memory of a NUMA node, bad results fail only their claim", "[examples][cpu]") {
  Fixture f;
  auto driver = f.NewDriver();
  // The driver's own checks: the Helper's device exclusivity would refuse
  // "two" and "six" (CPUs "one" holds) before the driver saw them.
  kp::Options options = f.Options();
  options.device_exclusivity.enabled = false;
  auto helper = Fixture::Start(*driver, options);
  REQUIRE(f.Prepare(*helper, Claim("one", {{"cpu-5", 0}, {"cpu-13", 0}, {"memory-numa-1", 0}})) == "");
  CHECK(driver->Held().at("one") == std::vector<int>{5, 13});
  const dra::cdi::Spec spec = f.Spec("one");
  REQUIRE(spec.devices.size() == 3);
  CHECK(spec.devices[2].container_edits.env == std::vector<std::string>{"DRA_CPUSET_one=5,13", "DRA_MEMS_one=1"});
  CHECK(f.Prepare(*helper, Claim("two", {{"cpu-5", 0}})) == "device cpu-5: CPU 5 is held by claim one");
  CHECK(f.Prepare(*helper, Claim("three", {{"cpu-0", 0}})) == "device cpu-0: CPU 0 is reserved");
  CHECK(f.Prepare(*helper, Claim("four", {{"gpu-0", 0}})) == "device gpu-0 is not one this driver publishes");
  k8s::ResourceClaim no_capacity = Claim("five", {{"cpu-socket-1", 0}});
  CHECK(f.Prepare(*helper, no_capacity) ==
        "device cpu-socket-1: the allocation has no consumedCapacity cpu.example.com/cpu (the cluster needs the "
        "DRAConsumableCapacity feature)");
  // A claim that fails half way keeps nothing.
  CHECK(f.Prepare(*helper, Claim("six", {{"cpu-socket-1", 2}, {"cpu-13", 0}})) ==
        "device cpu-13: CPU 13 is held by claim one");
  CHECK(driver->Held().size() == 1);
}

TEST_CASE("CpuDriver as dra-example-driver's cpu profile: two shares of one NUMA device in one claim",
          "[examples][cpu]") {
  Fixture f;
  f.publish.reserved.clear();
  f.publish.group_by = cpu::GroupBy::kNuma;
  f.publish.numa_device_prefix = "numa-";
  cpu::CpuDriver driver(f.publish, cpu::MockTopology(1, 2), dra::testing::DiscardLogger());
  auto helper = Fixture::Start(driver, f.Options());
  // The reference's demo: two requests of one CPU, both on numa-0, told apart
  // by their ShareIDs.
  k8s::ResourceClaim claim = Claim("two", {{"numa-0", 1}, {"numa-0", 1}});
  k8s::DeviceRequestAllocationResult& second = claim.status.allocation->devices.results[1];
  second.request = "cpu1";
  second.share_id = "share-two-1";
  REQUIRE(f.Prepare(*helper, claim) == "");
  CHECK(driver.Held().at("two") == std::vector<int>{0, 1});
  CHECK(f.Spec("two").devices.size() == 2);
  CHECK(f.Prepare(*helper, Claim("third", {{"numa-0", 1}})) ==
        "needs 1 CPUs of NUMA node 0, 0 are free (2 online, 0 reserved, 2 held by other claims)");
  f.Unprepare(*helper, "two");
  CHECK(f.Prepare(*helper, Claim("third", {{"numa-0", 1}})) == "");
}

}  // namespace
