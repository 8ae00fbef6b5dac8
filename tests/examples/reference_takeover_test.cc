// Sharing a node with dra-example-driver: reading both of its checkpoint
// formats (refusing anything else, naming why), writing the one it reads, and
// the names of its CDI spec files, which the GPU example's are.
#include <catch2/catch.hpp>

#include "dra/cdi/spec_dir.h"
#include "reference_takeover.h"

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

TEST_CASE("the checkpoint the GPU example keeps for dra-example-driver reads back, and is the reference's own form",
          "[gpu][takeover]") {
  CHECK(gpu::ReferenceCheckpoint({}) ==
        "{\n  \"kind\": \"Checkpoint\",\n  \"apiVersion\": \"checkpoint.internal.example.com/v1\"\n}\n");
  const std::vector<k8s::ClaimRef> claims = {{"ns", "a", "u1"}, {"ns", "b", "u2"}};
  const std::string content = gpu::ReferenceCheckpoint(claims);
  CHECK(content ==
        "{\n  \"kind\": \"Checkpoint\",\n  \"apiVersion\": \"checkpoint.internal.example.com/v1\",\n"
        "  \"preparedClaims\": [\n    {\n      \"uid\": \"u1\"\n    },\n    {\n      \"uid\": \"u2\"\n    }\n  ]\n}\n");
  CHECK(*gpu::ReferenceCheckpointClaims(content) == std::vector<std::string>{"u1", "u2"});
}

TEST_CASE("the GPU example writes each claim's CDI spec where dra-example-driver's unprepare removes it",
          "[gpu][takeover]") {
  kp::Options options;
  options.cdi.dir.path = "/var/run/cdi";
  gpu::ShareNodeWithReference(options, "gpu.example.com", dra::Logger());
  CHECK(gpu::ReferenceClaimSpecPath("/var/run/cdi", "gpu.example.com", "u1") ==
        "/var/run/cdi/k8s.gpu.example.com-gpu_u1.yaml");
  CHECK(gpu::ReferenceCommonSpecPath("/var/run/cdi", "gpu.example.com") ==
        "/var/run/cdi/k8s.gpu.example.com-gpu_common.yaml");
  dra::cdi::SpecDirOptions claim_dir = options.cdi.dir;
  claim_dir.format = options.cdi.claim_format.value_or(claim_dir.format);
  const dra::cdi::SpecDir dir(claim_dir);
  CHECK(dir.PathOf(dra::cdi::TransientSpecFileName({options.cdi.vendor, options.cdi.class_name}, "u1")) ==
        gpu::ReferenceClaimSpecPath("/var/run/cdi", "gpu.example.com", "u1"));
  CHECK(options.cdi.dir.format == dra::cdi::Format::kJson);  // the node-wide spec stays where 0.1.0 wrote it
  CHECK(options.adopt_checkpoint != nullptr);
  CHECK(options.encode_foreign_checkpoint != nullptr);
}

}  // namespace
