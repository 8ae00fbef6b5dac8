// The GPU example's GpuConfig admission policy
// (examples/gpu/deploy/gpu-config-policy.yaml) on a real kube-apiserver that
// serves resource.k8s.io v1, v1beta1 and v1beta2: a ResourceClaim or
// ResourceClaimTemplate whose config for the driver breaks a rule is refused
// at creation in every version, the message naming the field and the rule
// as the driver names them at prepare time; good configs and other drivers'
// configs pass.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "e2e/e2e_cluster.h"
#include "e2e/manifests.h"
#include "e2e/private_cluster.h"
#include "support/subprocess.h"

namespace dra::e2e {
namespace {

using nlohmann::json;

constexpr char kGpuConfigApiVersion[] = "gpu.resource.example.com/v1alpha1";

json GpuConfig(json sharing) {
  json config = {{"apiVersion", kGpuConfigApiVersion}, {"kind", "GpuConfig"}};
  if (!sharing.is_null()) config["sharing"] = std::move(sharing);
  return config;
}

json TimeSlicing(const std::string& interval) {
  return {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", interval}}}};
}

// A claim spec of `version` with one request, another driver's config (never
// looked at) and `parameters` for the GPU driver.
json ClaimSpec(const std::string& version, const json& parameters) {
  json request = {{"name", "gpu"}};
  if (version == "v1beta1") {
    request["deviceClassName"] = "gpu.example.com";
  } else {
    request["exactly"] = {{"deviceClassName", "gpu.example.com"}};
  }
  return {{"devices",
           {{"requests", json::array({request})},
            {"config", json::array({{{"opaque", {{"driver", "nic.example.com"}, {"parameters", {{"speed", 1}}}}}},
                                    {{"opaque", {{"driver", "gpu.example.com"}, {"parameters", parameters}}}}})}}}};
}

struct Kind {
  std::string resource;  // resourceclaims, resourceclaimtemplates
  std::string kind;
  std::string spec_path;
};
const Kind kClaim{"resourceclaims", "ResourceClaim", "spec"};
const Kind kTemplate{"resourceclaimtemplates", "ResourceClaimTemplate", "spec.spec"};

// Creates a claim or template of `version` with `parameters`; the error, or
// OK.
absl::Status Create(k8s::Client& admin, const std::string& version, const Kind& kind, const json& parameters) {
  static int serial = 0;
  json object = {{"apiVersion", "resource.k8s.io/" + version},
                 {"kind", kind.kind},
                 {"metadata", {{"name", absl::StrCat("c", ++serial)}, {"namespace", "default"}}}};
  const json spec = ClaimSpec(version, parameters);
  if (kind.resource == kClaim.resource) {
    object["spec"] = spec;
  } else {
    object["spec"]["spec"] = spec;
  }
  return admin.Create(k8s::ResourceRef{"resource.k8s.io", version, kind.resource, true}, "default", object).status();
}

TEST_CASE(
    "the GPU example's GpuConfig policy refuses a bad config at creation in every served version of claims "
    "and templates - naming the field and the rule",
    "[e2e][gpu][admission]") {
  PrivateCluster cluster("", "resource.k8s.io/v1=true,resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true");
  std::shared_ptr<k8s::Client> admin = cluster.Admin();
  const std::string path = absl::StrCat(DRA_SOURCE_DIR, "/examples/gpu/deploy/gpu-config-policy.yaml");
  for (json& object : ManifestObjects(testing::ReadFile(path), path)) ApplyObject(*admin, std::move(object));
  // The API server takes a new policy in through an informer: once a bad
  // claim is refused it is in force.
  REQUIRE(
      Eventually([&] { return !Create(*admin, "v1", kClaim, GpuConfig(TimeSlicing("Fast"))).ok(); }, absl::Minutes(2)));

  const std::string interval =
      ".devices.config[1].opaque.parameters.sharing.timeSlicingConfig.interval: Unsupported value: "
      "\"InvalidInterval\": supported values: \"Default\", \"Long\", \"Medium\", \"Short\"";
  for (const std::string version : {"v1", "v1beta1", "v1beta2"}) {
    for (const Kind& kind : {kClaim, kTemplate}) {
      INFO(version << " " << kind.kind);
      const absl::Status bad = Create(*admin, version, kind, GpuConfig(TimeSlicing("InvalidInterval")));
      CHECK(absl::IsInvalidArgument(bad));
      CHECK_THAT(std::string(bad.message()), Catch::Contains(kind.spec_path + interval));
      CHECK(Create(*admin, version, kind, GpuConfig(TimeSlicing("Long"))).ok());
    }
  }

  const std::string at = "spec.devices.config[1].opaque.parameters";
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"apiVersion", kGpuConfigApiVersion}, {"kind", "NicConfig"}},
       at + ": Invalid value: must be a GpuConfig (apiVersion gpu.resource.example.com/v1alpha1, kind GpuConfig)"},
      {{{"apiVersion", kGpuConfigApiVersion}, {"kind", "GpuConfig"}, {"shraing", json::object()}},
       at + ".shraing: Forbidden: unknown field"},
      {GpuConfig(5), at + ".sharing: Invalid value: must be an object"},
      {GpuConfig({{"strategy", "TimeSlicing"}, {"mode", 1}}), at + ".sharing.mode: Forbidden: unknown field"},
      {GpuConfig({{"strategy", "Fast"}}),
       at + ".sharing.strategy: Unsupported value: \"Fast\": supported values: \"SpacePartitioning\", \"TimeSlicing\""},
      {GpuConfig(json::object()), at + ".sharing.strategy: Required value: must be TimeSlicing or SpacePartitioning"},
      {GpuConfig({{"strategy", "TimeSlicing"}, {"spacePartitioningConfig", json::object()}}),
       at + ".sharing.spacePartitioningConfig: Forbidden: may only be set with SpacePartitioning"},
      {GpuConfig({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", 3}}}}),
       at + ".sharing.timeSlicingConfig.interval: Unsupported value: not a string"},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 17}}}}),
       at + ".sharing.spacePartitioningConfig.partitionCount: Invalid value: 17: must be an integer between 1 and 16"},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 0}}}}),
       at + ".sharing.spacePartitioningConfig.partitionCount: Invalid value: 0: must be an integer between 1 and 16"},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"count", 2}}}}),
       at + ".sharing.spacePartitioningConfig.count: Forbidden: unknown field"},
      {GpuConfig({{"strategy", "SpacePartitioning"}, {"timeSlicingConfig", json::object()}}),
       at + ".sharing.timeSlicingConfig: Forbidden: may only be set with TimeSlicing"},
  };
  for (const auto& [parameters, message] : cases) {
    INFO(parameters.dump());
    const absl::Status refused = Create(*admin, "v1", kClaim, parameters);
    CHECK(absl::IsInvalidArgument(refused));
    CHECK_THAT(std::string(refused.message()), Catch::Contains(message));
  }
  for (const json& good :
       {GpuConfig(nullptr), GpuConfig({{"strategy", "TimeSlicing"}}),
        GpuConfig({{"strategy", "SpacePartitioning"}, {"spacePartitioningConfig", {{"partitionCount", 16}}}})}) {
    INFO(good.dump());
    CHECK(Create(*admin, "v1", kClaim, good).ok());
  }
}

}  // namespace
}  // namespace dra::e2e
