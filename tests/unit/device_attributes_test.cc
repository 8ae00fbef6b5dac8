// The typed-value factories encode as the API server's JSON and pass (or,
// for a bad version, fail) validation like hand-built values.
#include <catch2/catch.hpp>

#include "dra/k8s/device_attributes.h"
#include "dra/k8s/resource_slice_json.h"
#include "dra/k8s/validation.h"

namespace dra::k8s {
namespace {

ResourceSlice SliceWith(Device device) {
  ResourceSlice slice;
  slice.metadata.name = "node-1-gpu";
  slice.spec.driver = "gpu.example.com";
  slice.spec.pool.name = "node-1";
  slice.spec.pool.resource_slice_count = 1;
  slice.spec.node_name = "node-1";
  slice.spec.devices.push_back(std::move(device));
  return slice;
}

TEST_CASE("attribute and capacity factories set exactly one typed value", "[device_attributes]") {
  Device device;
  device.name = "gpu-0";
  device.attributes["index"] = IntAttribute(3);
  device.attributes["mig"] = BoolAttribute(false);
  device.attributes["model"] = StringAttribute("a100");
  device.attributes["driverVersion"] = VersionAttribute("550.54.15");
  device.attributes["profiles"] = StringsAttribute({"1g.10gb", "2g.20gb"});
  device.attributes[kPciBusIdAttribute] = StringAttribute("0000:3b:00.0");
  absl::StatusOr<DeviceCapacity> memory = ParseCapacity("80Gi");
  REQUIRE(memory.ok());
  device.capacity["memory"] = *memory;
  device.capacity["compute"] = Capacity(Quantity::FromInt(100));

  const ResourceSlice slice = SliceWith(device);
  CHECK(ValidateResourceSlice(slice).empty());
  const nlohmann::json json = ToJson(slice)["spec"]["devices"][0];
  CHECK(json["attributes"]["index"] == nlohmann::json{{"int", 3}});
  CHECK(json["attributes"]["mig"] == nlohmann::json{{"bool", false}});
  CHECK(json["attributes"]["model"] == nlohmann::json{{"string", "a100"}});
  CHECK(json["attributes"]["driverVersion"] == nlohmann::json{{"version", "550.54.15"}});
  CHECK(json["attributes"]["profiles"] == nlohmann::json{{"strings", {"1g.10gb", "2g.20gb"}}});
  CHECK(json["attributes"]["resource.kubernetes.io/pciBusID"] == nlohmann::json{{"string", "0000:3b:00.0"}});
  CHECK(json["capacity"]["memory"] == nlohmann::json{{"value", "80Gi"}});
  CHECK(json["capacity"]["compute"] == nlohmann::json{{"value", "100"}});
}

TEST_CASE("ParseCapacity and a bad version fail naming the rule", "[device_attributes]") {
  absl::StatusOr<DeviceCapacity> bad = ParseCapacity("80 GiB");
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  Device device;
  device.name = "gpu-0";
  device.attributes["driverVersion"] = VersionAttribute("550");
  const FieldErrors errors = ValidateResourceSlice(SliceWith(device));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == "spec.devices[0].attributes[driverVersion].version");
}

}  // namespace
}  // namespace dra::k8s
