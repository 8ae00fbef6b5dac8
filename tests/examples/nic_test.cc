// --device-profile=net: NetConfig decoding, the NIC pool against the API's
// validation rules, and the environment a prepared NIC gives a container.
#include <catch2/catch.hpp>

#include "dra/call_context.h"
#include "net_config.h"
#include "nic_driver.h"
#include "nic_resources.h"
#include "pool_check.h"

namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;
using nlohmann::json;

json NetConfigParameters(json burst) {
  return {{"apiVersion", gpu::kNetConfigApiVersion}, {"kind", gpu::kNetConfigKind}, {"bwBurst", std::move(burst)}};
}

TEST_CASE("NetConfig decodes its bursts strictly and names the field of an error", "[nic]") {
  CHECK(*gpu::DecodeNetConfig(NetConfigParameters({{"ingressBurst", 1048576}})) == gpu::NetConfig{1048576, 0});
  CHECK(*gpu::DecodeNetConfig(NetConfigParameters(json::object())) == gpu::NetConfig{});
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"apiVersion", gpu::kNetConfigApiVersion}, {"kind", gpu::kNetConfigKind}},
       "bwBurst: Required value: no burst set"},
      {NetConfigParameters({{"ingressBurst", -1}}), "bwBurst.ingressBurst: Invalid value: -1: must be a non-negative"},
      {NetConfigParameters({{"egressBurst", 34359738360ULL}}),
       "bwBurst.egressBurst: Invalid value: 34359738360: must be below 34359738360 (4 GiB/s)"},
      {NetConfigParameters({{"rate", 1}}), "bwBurst.rate: Forbidden: unknown field"},
      {{{"apiVersion", "gpu.resource.example.com/v1alpha1"}, {"kind", "NetConfig"}, {"bwBurst", json::object()}},
       "apiVersion: Unsupported value: \"gpu.resource.example.com/v1alpha1\""},
  };
  for (const auto& [parameters, error] : bad) {
    INFO(parameters.dump());
    absl::StatusOr<gpu::NetConfig> decoded = gpu::DecodeNetConfig(parameters);
    REQUIRE_FALSE(decoded.ok());
    CHECK_THAT(std::string(decoded.status().message()), Catch::StartsWith(error));
  }
}

TEST_CASE("the NIC pool: NICs shared by ingress and egress bandwidth and one virtual function each", "[nic]") {
  const dra::resourceslice::Pool pool = gpu::NicPool("node-a", 4);
  dra::testing::CheckPoolValid(pool, "net.example.com", "node-a");
  REQUIRE(pool.slices.size() == 1);
  REQUIRE(pool.slices[0].devices.size() == 4);
  const k8s::Device& nic = pool.slices[0].devices[3];
  CHECK(nic.name == "nic-3");
  CHECK(nic.allow_multiple_allocations == true);
  CHECK(nic.attributes.at("index").int_value == 3);
  CHECK(nic.attributes.at("uuid").string_value->rfind("net-", 0) == 0);
  CHECK(nic.attributes.at("model").string_value == "LATEST-NET-MODEL");
  const k8s::DeviceCapacity& ingress = nic.capacity.at("ingressBandwidth");
  CHECK(ingress.value.ToString() == "100G");
  CHECK(ingress.request_policy->default_value->ToString() == "1G");
  CHECK(ingress.request_policy->valid_range->min.ToString() == "100M");
  CHECK(ingress.request_policy->valid_range->step->ToString() == "1M");
  CHECK(nic.capacity.at("vfs").request_policy->valid_values.size() == 1);
}

TEST_CASE("a prepared NIC gives its container the claim and the bandwidth it consumes", "[nic]") {
  gpu::NicDriver::Options options;
  options.driver_name = "net.example.com";
  options.common_cdi_id = "net.example.com/net=common";
  options.devices = {"nic-0", "nic-1"};
  gpu::NicDriver driver(std::move(options));
  k8s::ResourceClaim claim;
  claim.metadata.namespace_ = "ns";
  claim.metadata.name = "nic";
  claim.metadata.uid = "u1";
  k8s::DeviceRequestAllocationResult& result = claim.status.allocation.emplace().devices.results.emplace_back();
  result.request = "nic";
  result.driver = "net.example.com";
  result.pool = "node-a";
  result.device = "nic-1";
  result.share_id = "s1";
  result.consumed_capacity["ingressBandwidth"] = *k8s::Quantity::Parse("10G");
  result.consumed_capacity["egressBandwidth"] = *k8s::Quantity::Parse("5G");
  k8s::DeviceAllocationConfiguration& config = claim.status.allocation->devices.config.emplace_back();
  config.source = "FromClaim";
  config.opaque.emplace().driver = "net.example.com";
  config.opaque->parameters = NetConfigParameters({{"egressBurst", 4096}});
  k8s::ResourceClaim unknown = claim;
  unknown.metadata.uid = "u2";
  unknown.status.allocation->devices.results[0].device = "nic-9";
  const std::vector<k8s::ResourceClaim> claims = {claim, unknown};
  absl::StatusOr<kp::PrepareResults> results = driver.PrepareResourceClaims(dra::CallContext::Background(), claims);
  REQUIRE(results.ok());
  REQUIRE(results->at("u1").devices.size() == 1);
  const kp::Device& nic = results->at("u1").devices[0];
  CHECK(nic.share_id == "s1");
  CHECK(nic.cdi_device_ids == std::vector<std::string>{"net.example.com/net=common"});
  CHECK(nic.cdi_edits->env == std::vector<std::string>{"NET_DEVICE_NIC_1_RESOURCE_CLAIM=u1", "DRA_ADMIN_ACCESS=false",
                                                       "NET_DEVICE_1_EGRESS_BURST=4096",
                                                       "NET_DEVICE_1_INGRESS_RATE=10000000000",
                                                       "NET_DEVICE_1_EGRESS_RATE=5000000000"});
  CHECK(results->at("u2").status.message() ==
        "status.allocation.devices.results[0].device: \"nic-9\" is not a device of this node");
}

}  // namespace
