// GpuConfig decoding (strict, errors naming the field) and which config
// applies to which allocated GPU.
#include <catch2/catch.hpp>

#include "gpu_config.h"

namespace {

using gpu::GpuConfig;
using nlohmann::json;

json Config(json sharing) {
  json config = {{"apiVersion", gpu::kGpuConfigApiVersion}, {"kind", gpu::kGpuConfigKind}};
  if (!sharing.is_null()) config["sharing"] = std::move(sharing);
  return config;
}

std::string Error(const json& parameters) {
  absl::StatusOr<GpuConfig> decoded = gpu::DecodeGpuConfig(parameters);
  REQUIRE_FALSE(decoded.ok());
  CHECK(absl::IsInvalidArgument(decoded.status()));
  return std::string(decoded.status().message());
}

TEST_CASE("GpuConfig decodes both strategies and defaults", "[gpu][config]") {
  absl::StatusOr<GpuConfig> none = gpu::DecodeGpuConfig(Config(nullptr));
  REQUIRE(none.ok());
  CHECK(*none == GpuConfig{});
  absl::StatusOr<GpuConfig> slicing =
      gpu::DecodeGpuConfig(Config({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}));
  REQUIRE(slicing.ok());
  CHECK(slicing->strategy == GpuConfig::Strategy::kTimeSlicing);
  CHECK(slicing->interval == "Long");
  absl::StatusOr<GpuConfig> partitions = gpu::DecodeGpuConfig(
      Config({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 4}}}}));
  REQUIRE(partitions.ok());
  CHECK(partitions->strategy == GpuConfig::Strategy::kSpacePartitioning);
  CHECK(partitions->partition_count == 4);
}

TEST_CASE("GpuConfig decoding is strict and names the field", "[gpu][config]") {
  CHECK(Error(Config({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Fast"}}}})) ==
        "sharing.timeSlicingConfig.interval: Unsupported value: \"Fast\": unknown time-slice interval: Fast; "
        "supported values: \"Default\", \"Long\", \"Medium\", \"Short\"");
  CHECK(Error(Config({{"strategy", "TimeSlicing"}, {"timeslicingConfig", json::object()}})) ==
        "sharing.timeslicingConfig: Forbidden: unknown field");
  CHECK(Error(Config({{"strategy", "Magic"}})) ==
        "sharing.strategy: Unsupported value: \"Magic\": unknown GPU sharing strategy: Magic; supported values: "
        "\"SpacePartitioning\", \"TimeSlicing\"");
  CHECK(Error(Config({{"timeSlicingConfig", json::object()}})) ==
        "sharing.strategy: Required value: must be TimeSlicing or SpacePartitioning");
  CHECK(Error(Config({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 0}}}})) ==
        "sharing.spacePartitioningConfig.partitionCount: Invalid value: 0: must be an integer between 1 and 16");
  CHECK(Error(Config({{"strategy", "SpacePartitioning"}, {"timeSlicingConfig", json::object()}})) ==
        "sharing.timeSlicingConfig: Forbidden: may only be set with TimeSlicing");
  json wrong = Config(nullptr);
  wrong["apiVersion"] = "gpu.resource.example.com/v1";
  CHECK(Error(wrong) ==
        "apiVersion: Unsupported value: \"gpu.resource.example.com/v1\": supported values: "
        "\"gpu.resource.example.com/v1alpha1\"");
  json extra = Config(nullptr);
  extra["spec"] = json::object();
  CHECK(Error(extra) == "spec: Forbidden: unknown field");
}

// Found by fuzz_gpu_config: an apiVersion or kind that was no string threw
// nlohmann's type_error out of DecodeGpuConfig.
TEST_CASE("GpuConfig with an apiVersion or kind of another type fails, naming the value", "[gpu][config]") {
  json object_version = Config(nullptr);
  object_version["apiVersion"] = json::object();
  CHECK(Error(object_version) ==
        "apiVersion: Unsupported value: {}: supported values: \"gpu.resource.example.com/v1alpha1\"");
  json number_kind = Config(nullptr);
  number_kind["kind"] = 1;
  CHECK(Error(number_kind) == "kind: Unsupported value: 1: supported values: \"GpuConfig\"");
  json no_kind = Config(nullptr);
  no_kind.erase("kind");
  CHECK(Error(no_kind) == "kind: Unsupported value: \"\": supported values: \"GpuConfig\"");
}

dra::k8s::DeviceAllocationConfiguration Opaque(std::string source, std::vector<std::string> requests, json parameters,
                                               std::string driver = "gpu.example.com") {
  dra::k8s::DeviceAllocationConfiguration config;
  config.source = std::move(source);
  config.requests = std::move(requests);
  config.opaque.emplace().driver = std::move(driver);
  config.opaque->parameters = std::move(parameters);
  return config;
}

TEST_CASE("class configs come before claim configs, later beats earlier, other drivers are ignored", "[gpu][config]") {
  dra::k8s::ResourceClaim claim;
  dra::k8s::AllocationResult& allocation = claim.status.allocation.emplace();
  for (const std::string request : {"a", "b/small", "c"}) {
    dra::k8s::DeviceRequestAllocationResult& result = allocation.devices.results.emplace_back();
    result.request = request;
    result.driver = "gpu.example.com";
    result.pool = "node";
    result.device = "gpu-" + std::to_string(allocation.devices.results.size());
  }
  allocation.devices.results.back().driver = "other.example.com";
  const json long_slices = Config({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}});
  const json short_slices = Config({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Short"}}}});
  const json four = Config({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 4}}}});
  // The claim's config listed first still beats the class's.
  allocation.devices.config = {Opaque("FromClaim", {"b"}, four), Opaque("FromClass", {}, long_slices),
                               Opaque("FromClaim", {"a"}, short_slices),
                               Opaque("FromClaim", {}, "not a config", "other.example.com")};
  absl::StatusOr<std::map<size_t, GpuConfig>> configs = gpu::ConfigsForResults(claim, "gpu.example.com");
  REQUIRE(configs.ok());
  REQUIRE(configs->size() == 2);
  CHECK(configs->at(0).interval == "Short");
  CHECK(configs->at(1).strategy == GpuConfig::Strategy::kSpacePartitioning);

  allocation.devices.config.push_back(
      Opaque("FromClaim", {"a"}, Config({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", 5}}}})));
  absl::StatusOr<std::map<size_t, GpuConfig>> bad = gpu::ConfigsForResults(claim, "gpu.example.com");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "status.allocation.devices.config[4].opaque.parameters.sharing.timeSlicingConfig.interval: Unsupported value: "
        "5: unknown time-slice interval: 5; supported values: \"Default\", \"Long\", \"Medium\", \"Short\"");
}

}  // namespace
