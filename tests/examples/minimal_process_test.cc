// examples/minimal as a process against the fake API server, the test as its
// kubelet: it publishes its devices, prepares a claim with CDI edits and
// unprepares it, and its exit code is what Helper::Wait returns. SIGTERM ends
// it with 0; a refused registration, which the Helper logs as a fatal
// background error, with 1 (so that the DaemonSet restarts it), although the
// driver handles no error itself.
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "dractl/kubelet_client.h"
#include "example_driver_process.h"
#include "support/fake_api_claims.h"
#include "support/kubelet_calls.h"
#include "support/poll.h"
#include "support/subprocess.h"

namespace {

using dra::testing::PollUntil;

constexpr char kDriver[] = "minimal.example.com";

struct Fixture : dra::testing::ExampleDriverProcess {
  Fixture() : ExampleDriverProcess(DRA_MINIMAL_DRIVER, kDriver, {}, /*name_flag=*/false) {}
};

// A claim in the fake API server allocated to `devices` of the minimal
// driver on the node (and one device of another driver).
dra::k8s::ClaimRef CreateMinimalClaim(dra::k8s::Client& client, const std::string& name,
                                      const std::vector<std::string>& devices) {
  dra::k8s::ResourceClaim claim = dra::testing::CreateClaim(client, name);
  claim.status.allocation =
      dra::testing::AllocatedClaim(dra::testing::kClaimNamespace, name, claim.metadata.uid, devices).status.allocation;
  for (dra::k8s::DeviceRequestAllocationResult& result : claim.status.allocation->devices.results) {
    if (result.driver != dra::testing::kTestDriverName) continue;
    result.driver = kDriver;
    result.pool = dra::testing::kExampleNode;
  }
  absl::StatusOr<dra::k8s::ResourceClaim> allocated = client.UpdateResourceClaimStatus(claim);
  INFO(allocated.status().ToString());
  REQUIRE(allocated.ok());
  return {dra::testing::kClaimNamespace, name, claim.metadata.uid};
}

TEST_CASE("the minimal driver publishes its devices, prepares a claim with CDI edits, and SIGTERM stops it with 0",
          "[examples][minimal][process]") {
  Fixture f;
  REQUIRE(f.NotifyRegistration(true, "").ok());
  INFO(f.Log());
  std::vector<nlohmann::json> slices;
  REQUIRE(PollUntil([&] { return (slices = f.Slices()).size() == 1; }, absl::Seconds(20)));
  CHECK(slices[0]["spec"]["pool"]["name"] == dra::testing::kExampleNode);
  CHECK(slices[0]["spec"]["devices"].size() == 2);
  CHECK(slices[0]["spec"]["devices"][1]["name"] == "dev1");

  const dra::k8s::ClaimRef claim = CreateMinimalClaim(*f.client, "two", {"dev0", "dev1"});
  auto dra = dra::kubeletclient::DraClient::Create(f.DraSocket());
  CHECK(dra::testing::Prepare(*dra, claim) == "");
  const std::string spec = f.dir.Join("cdi/minimal.example.com-claim_" + claim.uid + ".json");
  const std::string text = dra::testing::ReadFile(spec);
  CHECK_THAT(text, Catch::Contains("\"MINIMAL_DEV0=dev0\"") && Catch::Contains("\"MINIMAL_DEV1=dev1\""));
  CHECK(dra::testing::Unprepare(*dra, claim) == "");
  CHECK_FALSE(std::filesystem::exists(spec));

  CHECK(f.driver.Stop() == "exited with status 0");
  CHECK_FALSE(std::filesystem::exists(f.RegistrarSocket()));
}

TEST_CASE("the minimal driver: a refused registration is logged by the Helper and ends it with exit code 1",
          "[examples][minimal][process]") {
  Fixture f;
  (void)f.NotifyRegistration(false, "no supported DRA version");
  std::string how;
  INFO(f.Log());
  REQUIRE(PollUntil([&] { return f.driver.Exited(&how); }, absl::Seconds(20)));
  CHECK(how == "exited with status 1");
  CHECK_THAT(f.Log(), Catch::Contains("Background error") && Catch::Contains("severity=\"fatal\"") &&
                          Catch::Contains("kubelet refused plugin registration: no supported DRA version"));
}

TEST_CASE("the minimal driver refuses a bad flag with exit code 2 and a missing node name with 1",
          "[examples][minimal][process]") {
  absl::StatusOr<dra::testing::ProcessResult> bad = dra::testing::RunProcess({DRA_MINIMAL_DRIVER, "--devices=x"});
  REQUIRE(bad.ok());
  CHECK(bad->exit_code == 2);
  CHECK_THAT(bad->err, Catch::Contains("minimal-driver: flag --devices: invalid value \"x\": must be an integer"));
  absl::StatusOr<dra::testing::ProcessResult> no_node =
      dra::testing::RunProcess({"/usr/bin/env", "-u", "NODE_NAME", DRA_MINIMAL_DRIVER});
  REQUIRE(no_node.ok());
  CHECK(no_node->exit_code == 1);
  CHECK_THAT(no_node->err, Catch::Contains("minimal-driver: flag --node-name (or NODE_NAME) is required"));
}

}  // namespace
