// GpuDriver's prepare: the CDI edits of each GPU kind with its config, and a
// bad config or an unknown device failing only its own claim.
#include <catch2/catch.hpp>

#include "dra/call_context.h"
#include "dra/k8s/device_attributes.h"
#include "gpu_config.h"
#include "gpu_driver.h"
#include "mock_gpus.h"

namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
using nlohmann::json;

struct Fixture {
  std::vector<gpu::GpuInfo> gpus = *gpu::MockGpus("node-a", 2, "").Discover();
  gpu::GpuDriver driver{MakeOptions()};

  gpu::GpuDriver::Options MakeOptions() {
    gpu::GpuDriver::Options options;
    options.driver_name = "gpu.example.com";
    options.common_cdi_id = "gpu.example.com/gpu=common";
    options.devices["gpu-0"] = gpus[0];
    options.devices["gpu-1"] = gpus[1];
    options.devices["gpu-1-partition-3"] = gpus[1];
    return options;
  }
};

k8s::ResourceClaim Claim(const std::string& uid, const std::vector<std::string>& devices) {
  k8s::ResourceClaim claim;
  claim.metadata.namespace_ = "ns";
  claim.metadata.name = "claim-" + uid;
  claim.metadata.uid = uid;
  k8s::AllocationResult& allocation = claim.status.allocation.emplace();
  for (const std::string& device : devices) {
    k8s::DeviceRequestAllocationResult& result = allocation.devices.results.emplace_back();
    result.request = "gpu";
    result.driver = "gpu.example.com";
    result.pool = "node-a";
    result.device = device;
  }
  return claim;
}

void AddConfig(k8s::ResourceClaim& claim, json sharing) {
  k8s::DeviceAllocationConfiguration& config = claim.status.allocation->devices.config.emplace_back();
  config.source = "FromClaim";
  config.opaque.emplace().driver = "gpu.example.com";
  config.opaque->parameters = {
      {"apiVersion", gpu::kGpuConfigApiVersion}, {"kind", gpu::kGpuConfigKind}, {"sharing", std::move(sharing)}};
}

TEST_CASE("prepare gives each GPU dra-example-driver's environment: name, claim, sharing, consumed capacity",
          "[gpu][driver]") {
  Fixture f;
  k8s::ResourceClaim whole = Claim("u1", {"gpu-0"});
  k8s::ResourceClaim part = Claim("u2", {"gpu-1-partition-3"});
  AddConfig(part, {{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 2}}}});
  k8s::ResourceClaim shared = Claim("u3", {"gpu-1"});
  shared.status.allocation->devices.results[0].share_id = "abc";
  shared.status.allocation->devices.results[0].consumed_capacity["memory"] = *k8s::Quantity::Parse("4Gi");
  shared.status.allocation->devices.results[0].consumed_capacity["compute"] = *k8s::Quantity::Parse("20");
  // Admin access anywhere in the claim, even another driver's device, is the claim's.
  k8s::DeviceRequestAllocationResult& other = shared.status.allocation->devices.results.emplace_back();
  other.request = "nic";
  other.driver = "nic.example.com";
  other.pool = "node-a";
  other.device = "nic-0";
  other.admin_access = true;
  const std::vector<k8s::ResourceClaim> claims = {whole, part, shared};
  absl::StatusOr<kp::PrepareResults> results = f.driver.PrepareResourceClaims(dra::CallContext::Background(), claims);
  REQUIRE(results.ok());

  const kp::PrepareResult& first = results->at("u1");
  REQUIRE(first.status.ok());
  REQUIRE(first.devices.size() == 1);
  const kp::Device& device = first.devices[0];
  CHECK(device.device_name == "gpu-0");
  CHECK(device.pool_name == "node-a");
  CHECK(device.requests == std::vector<std::string>{"gpu"});
  CHECK(device.cdi_device_ids == std::vector<std::string>{"gpu.example.com/gpu=common"});
  REQUIRE(device.cdi_edits.has_value());
  CHECK(device.cdi_edits->env ==
        std::vector<std::string>{"GPU_DEVICE_GPU_0_RESOURCE_CLAIM=u1", "DRA_ADMIN_ACCESS=false", "GPU_DEVICE_0=gpu-0",
                                 "GPU_DEVICE_0_UUID=" + f.gpus[0].uuid, "GPU_DEVICE_0_SHARING_STRATEGY=TimeSlicing",
                                 "GPU_DEVICE_0_TIMESLICE_INTERVAL=Default"});
  CHECK(device.cdi_edits->device_nodes == f.gpus[0].device_nodes);

  const kp::Device& partition = results->at("u2").devices.at(0);
  CHECK(partition.cdi_edits->env ==
        std::vector<std::string>{"GPU_DEVICE_GPU_1_PARTITION_3_RESOURCE_CLAIM=u2", "DRA_ADMIN_ACCESS=false",
                                 "GPU_DEVICE_1_PARTITION_3=gpu-1-partition-3",
                                 "GPU_DEVICE_1_PARTITION_3_UUID=" + f.gpus[1].uuid,
                                 "GPU_DEVICE_1_PARTITION_3_SHARING_STRATEGY=SpacePartitioning",
                                 "GPU_DEVICE_1_PARTITION_3_PARTITION_COUNT=2"});

  const kp::PrepareResult& third = results->at("u3");
  REQUIRE(third.devices.size() == 1);
  const kp::Device& share = third.devices[0];
  CHECK(share.share_id == "abc");
  CHECK(share.cdi_edits->env == std::vector<std::string>{"GPU_DEVICE_GPU_1_RESOURCE_CLAIM=u3", "DRA_ADMIN_ACCESS=true",
                                                         "GPU_DEVICE_1=gpu-1", "GPU_DEVICE_1_UUID=" + f.gpus[1].uuid,
                                                         "GPU_DEVICE_1_SHARING_STRATEGY=TimeSlicing",
                                                         "GPU_DEVICE_1_TIMESLICE_INTERVAL=Default",
                                                         "GPU_DEVICE_1_MEMORY=4Gi", "GPU_DEVICE_1_COMPUTE=20"});
}

TEST_CASE("the common spec gives every GPU container the node and the driver name", "[gpu][driver]") {
  const gpu::CommonCdiSpec common = gpu::MakeCommonCdiSpec("gpu.example.com", "gpu", "node-a");
  CHECK(common.id == "gpu.example.com/gpu=common");
  REQUIRE(common.spec.devices.size() == 1);
  CHECK(common.spec.devices[0].container_edits.env ==
        std::vector<std::string>{"KUBERNETES_NODE_NAME=node-a", "DRA_RESOURCE_DRIVER_NAME=gpu.example.com"});
}

TEST_CASE("with device metadata on, each prepared GPU tells its uuid, model and PCI bus ID", "[gpu][driver]") {
  Fixture f;
  gpu::GpuDriver::Options options = f.MakeOptions();
  options.device_metadata = true;
  gpu::GpuDriver driver(std::move(options));
  const std::vector<k8s::ResourceClaim> claims = {Claim("u1", {"gpu-0", "gpu-1-partition-3"})};
  absl::StatusOr<kp::PrepareResults> results = driver.PrepareResourceClaims(dra::CallContext::Background(), claims);
  REQUIRE(results.ok());
  const std::vector<kp::Device>& devices = results->at("u1").devices;
  REQUIRE(devices.size() == 2);
  for (size_t i = 0; i < devices.size(); ++i) {
    REQUIRE(devices[i].metadata.has_value());
    CHECK(devices[i].metadata->attributes ==
          std::map<std::string, k8s::DeviceAttribute>{
              {"uuid", k8s::StringAttribute(f.gpus[i].uuid)},
              {"model", k8s::StringAttribute(f.gpus[i].model)},
              {k8s::kPciBusIdAttribute, k8s::StringAttribute(f.gpus[i].pci_bus_id)}});
  }
  CHECK_FALSE(f.driver.PrepareResourceClaims(dra::CallContext::Background(), claims)->at("u1").devices[0].metadata);
}

TEST_CASE("a bad config or an unknown device fails its claim only, naming the field", "[gpu][driver]") {
  Fixture f;
  k8s::ResourceClaim bad = Claim("bad", {"gpu-0"});
  AddConfig(bad, {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Fast"}}}});
  k8s::ResourceClaim unknown = Claim("unknown", {"gpu-7"});
  k8s::ResourceClaim good = Claim("good", {"gpu-1"});
  // Another driver's device in the claim is not ours to prepare.
  k8s::DeviceRequestAllocationResult& nic = good.status.allocation->devices.results.emplace_back();
  nic.request = "nic";
  nic.driver = "nic.example.com";
  nic.pool = "node-a";
  nic.device = "nic-0";
  const std::vector<k8s::ResourceClaim> claims = {bad, unknown, good};
  absl::StatusOr<kp::PrepareResults> results = f.driver.PrepareResourceClaims(dra::CallContext::Background(), claims);
  REQUIRE(results.ok());
  CHECK(absl::IsInvalidArgument(results->at("bad").status));
  CHECK(results->at("bad").status.message() ==
        "status.allocation.devices.config[0].opaque.parameters.sharing.timeSlicingConfig.interval: Unsupported "
        "value: \"Fast\": unknown time-slice interval: Fast; supported values: \"Default\", \"Long\", \"Medium\", "
        "\"Short\"");
  CHECK(results->at("unknown").status.message() ==
        "status.allocation.devices.results[0].device: \"gpu-7\" is not a device of this node");
  REQUIRE(results->at("good").status.ok());
  CHECK(results->at("good").devices.size() == 1);
  // Counted per claim under dra-example-driver's metric names.
  const std::string metrics = f.driver.metrics().Text();
  CHECK_THAT(metrics, Catch::Contains("dra_example_driver_prepare_claims_total{result=\"error\"} 2\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_example_driver_prepare_claims_total{result=\"success\"} 1\n"));
  CHECK_THAT(metrics, Catch::Contains("dra_example_driver_prepare_claim_duration_seconds_count{result=\"error\"} 2\n"));
}

TEST_CASE("GPU health goes to the kubelet unless turned off (HEALTH_SERVICE=false)", "[gpu][driver]") {
  Fixture f;
  CHECK(f.driver.ReportsDeviceHealth());
  gpu::GpuDriver::Options options = f.MakeOptions();
  options.report_health = false;
  CHECK_FALSE(gpu::GpuDriver(options).ReportsDeviceHealth());
}

TEST_CASE("device variables are named after the device", "[gpu][driver]") {
  CHECK(gpu::DeviceVariable("gpu-3") == "GPU_DEVICE_3");
  CHECK(gpu::DeviceVariable("gpu-3-partition-1") == "GPU_DEVICE_3_PARTITION_1");
  CHECK(gpu::DeviceVariable("gpu-3-full") == "GPU_DEVICE_3_FULL");
  CHECK(gpu::DeviceVariable("fabric-gpu-2") == "GPU_DEVICE_FABRIC_GPU_2");
  CHECK(gpu::ClaimVariable("gpu", "gpu-3-partition-1", "u") == "GPU_DEVICE_GPU_3_PARTITION_1_RESOURCE_CLAIM=u");
  CHECK(gpu::ClaimVariable("gpu", "fabric-gpu-2", "u") == "GPU_DEVICE_FABRIC_GPU_2_RESOURCE_CLAIM=u");
  CHECK(gpu::ClaimVariable("net", "nic-0", "u") == "NET_DEVICE_NIC_0_RESOURCE_CLAIM=u");
}

}  // namespace
