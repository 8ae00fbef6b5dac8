// Taking over from dra-example-driver: reading both of its checkpoint formats
// (refusing anything else, naming why), the names of its CDI spec files, and
// the GPU driver removing an adopted claim's spec when it unprepares it.
#include <filesystem>

#include <catch2/catch.hpp>

#include "dra/call_context.h"
#include "gpu_driver.h"
#include "reference_takeover.h"
#include "support/temp_dir.h"

namespace {

namespace k8s = dra::k8s;
namespace kp = dra::kubeletplugin;

TEST_CASE("dra-example-driver's checkpoints of v0.3 and later and of v0.2 give their claims' UIDs", "[gpu][takeover]") {
  CHECK(*gpu::ReferenceCheckpointClaims(R"({
  "kind": "Checkpoint",
  "apiVersion": "checkpoint.internal.example.com/v1",
  "preparedClaims": [{"uid": "6f1c0d6e-5f43-4c56-9a55-8f6a3c1e2d10"}, {"uid": "a2"}]
})") == std::vector<std::string>{"6f1c0d6e-5f43-4c56-9a55-8f6a3c1e2d10", "a2"});
  CHECK(gpu::ReferenceCheckpointClaims(R"({"kind": "Checkpoint", "apiVersion": "checkpoint.internal.example.com/v1"})")
            ->empty());
  CHECK(*gpu::ReferenceCheckpointClaims(R"({"checksum": 1234, "v1": {"preparedClaims": {"u1": {}, "u2": {}}}})") ==
        std::vector<std::string>{"u1", "u2"});
}

TEST_CASE("anything else is not adopted, and says why", "[gpu][takeover]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"garbage", "not a JSON object"},
      {R"({"kind": "Checkpoint", "apiVersion": "v2"})", "not a dra-example-driver checkpoint"},
      {R"({"kind": "Checkpoint", "apiVersion": "checkpoint.internal.example.com/v1", "preparedClaims": {}})",
       "preparedClaims: must be an array"},
      {R"({"kind": "Checkpoint", "apiVersion": "checkpoint.internal.example.com/v1", "preparedClaims": [{}]})",
       "preparedClaims[0].uid: must be a string"},
      {R"({"kind": "Checkpoint", "apiVersion": "checkpoint.internal.example.com/v1",
           "preparedClaims": [{"uid": "../../etc/passwd"}]})",
       "claim UID \"../../etc/passwd\": not a UID"},
  };
  for (const auto& [content, error] : cases) {
    INFO(content);
    absl::StatusOr<std::vector<std::string>> claims = gpu::ReferenceCheckpointClaims(content);
    REQUIRE_FALSE(claims.ok());
    CHECK(absl::IsInvalidArgument(claims.status()));
    CHECK_THAT(std::string(claims.status().message()), Catch::StartsWith(error));
  }
}

TEST_CASE("the GPU driver removes an adopted claim's dra-example-driver CDI spec when it unprepares it",
          "[gpu][takeover]") {
  dra::testing::TempDir cdi;
  const std::string spec = gpu::ReferenceClaimSpecPath(cdi.path(), "gpu.example.com", "u1");
  CHECK(spec == cdi.path() + "/k8s.gpu.example.com-gpu_u1.yaml");
  CHECK(gpu::ReferenceCommonSpecPath(cdi.path(), "gpu.example.com") ==
        cdi.path() + "/k8s.gpu.example.com-gpu_common.yaml");
  dra::testing::WriteFile(spec, "---\n");
  kp::TerminationSignals signals;
  gpu::GpuDriver::Options options;
  options.driver_name = "gpu.example.com";
  options.reference_cdi_root = cdi.path();
  gpu::GpuDriver driver(std::move(options), signals);
  const std::vector<k8s::ClaimRef> claims = {{"ns", "a", "u1"}, {"ns", "b", "u2"}, {"ns", "c", "../x"}};
  absl::StatusOr<kp::UnprepareResults> results = driver.UnprepareResourceClaims(dra::CallContext::Background(), claims);
  REQUIRE(results.ok());
  for (const k8s::ClaimRef& claim : claims) CHECK(results->at(claim.uid).ok());
  CHECK_FALSE(std::filesystem::exists(spec));
}

}  // namespace
