// ClaimStatusWriter against the real kube-apiserver with the 1.37 granular
// status authorization (DRAResourceClaimGranularStatusAuthorization, on by
// default): a driver identity with "arbitrary-node:patch" on
// resourceclaims/driver for its own driver name writes its entries with
// server-side apply; an entry it leaves out (and a field it stops applying)
// goes; another driver's entry, written by another manager, stays; an
// identity without the driver permission is refused with the server's
// reason.
#include <catch2/catch.hpp>

#include "dra/k8s/client.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "e2e/e2e_cluster.h"
#include "support/claim_object.h"
#include "support/device_status.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using k8s::AllocatedDeviceStatus;
using nlohmann::json;
using resourceclaim::ClaimStatusWriter;
using testing::kTestDriverName;

k8s::AllocatedDeviceStatus Entry(const std::string& driver, const std::string& pool, const std::string& device) {
  return testing::ReadyEntry(driver, pool, device);
}
constexpr auto Find = testing::FindDeviceStatus;

constexpr char kOtherDriver[] = "nic.example.com";

std::unique_ptr<ClaimStatusWriter> Writer(std::shared_ptr<k8s::Client> client, const std::string& driver) {
  resourceclaim::ClaimStatusWriterOptions options;
  options.driver_name = driver;
  auto writer = ClaimStatusWriter::Create(std::move(client), options);
  REQUIRE(writer.ok());
  return *std::move(writer);
}

// The RBAC a node plugin needs to write its claims' device status.
json DeviceStatusRules(const std::string& driver) {
  json rules = json::array({
      {{"apiGroups", {"resource.k8s.io"}}, {"resources", {"resourceclaims"}}, {"verbs", {"get"}}},
      {{"apiGroups", {"resource.k8s.io"}}, {"resources", {"resourceclaims/status"}}, {"verbs", {"patch"}}},
  });
  if (!driver.empty()) {
    rules.push_back({{"apiGroups", {"resource.k8s.io"}},
                     {"resources", {"resourceclaims/driver"}},
                     {"resourceNames", {driver}},
                     {"verbs", {"arbitrary-node:patch"}}});
  }
  return rules;
}

// Claim "c" in `ns`, allocated gpu-0 and gpu-1 of kTestDriverName and nic-0
// of kOtherDriver.
k8s::ClaimRef AllocatedClaim(k8s::Client& admin, const std::string& ns) {
  absl::StatusOr<json> created = admin.Create(k8s::kResourceClaims, ns, testing::NewClaimObject(ns, "c"));
  INFO(created.status().ToString());
  REQUIRE(created.ok());
  const std::string uid = (*created)["metadata"]["uid"];
  absl::StatusOr<k8s::ResourceClaim> claim = admin.GetResourceClaim(ns, "c");
  REQUIRE(claim.ok());
  claim->status.allocation = testing::AllocatedClaim(ns, "c", uid, {"gpu-0", "gpu-1"}).status.allocation;
  // The server wants every result to name a request of the claim, which has one.
  for (k8s::DeviceRequestAllocationResult& result : claim->status.allocation->devices.results) result.request = "gpu";
  absl::StatusOr<k8s::ResourceClaim> allocated = admin.UpdateResourceClaimStatus(*claim);
  INFO(allocated.status().ToString());
  REQUIRE(allocated.ok());
  return {ns, "c", uid};
}

TEST_CASE("device status under granular authorization: own entries applied and removed, others kept",
          "[e2e][claim_status]") {
  auto admin = e2e::MakeClient(e2e::AdminConfig());
  const std::string ns = e2e::CreateNamespace(*admin, "claim-status");
  const k8s::ClaimRef ref = AllocatedClaim(*admin, ns);

  // The other driver's entry, by its own field manager.
  REQUIRE(Writer(admin, kOtherDriver)
              ->Apply(CallContext::Background(), ref, {Entry(kOtherDriver, "pool-n", "nic-0")})
              .ok());

  auto gpu_driver = e2e::MakeClient(e2e::DriverConfig("gpu-driver"));
  auto writer = Writer(gpu_driver, kTestDriverName);
  e2e::Grant(*admin, e2e::DriverUser("gpu-driver"), ns, DeviceStatusRules(kTestDriverName), [&] {
    return writer->Apply(CallContext::Background(), ref, {Entry(kTestDriverName, "pool-a", "gpu-0")}).ok();
  });

  AllocatedDeviceStatus gpu1 = Entry(kTestDriverName, "pool-a", "gpu-1");
  k8s::NetworkDeviceData& network = gpu1.network_data.emplace();
  network.interface_name = "eth1";
  network.ips = {"192.0.2.5/24"};
  absl::Status both = writer->Apply(CallContext::Background(), ref, {Entry(kTestDriverName, "pool-a", "gpu-0"), gpu1});
  INFO(both.ToString());
  REQUIRE(both.ok());
  absl::StatusOr<k8s::ResourceClaim> seen = admin->GetResourceClaim(ns, "c");
  REQUIRE(seen.ok());
  CHECK(seen->status.devices.size() == 3);
  REQUIRE(Find(*seen, kTestDriverName, "gpu-1") != nullptr);
  CHECK(Find(*seen, kTestDriverName, "gpu-1")->network_data->interface_name == "eth1");

  // The network data stops being applied, then the whole gpu-1 entry.
  gpu1.network_data.reset();
  REQUIRE(writer->Apply(CallContext::Background(), ref, {Entry(kTestDriverName, "pool-a", "gpu-0"), gpu1}).ok());
  seen = admin->GetResourceClaim(ns, "c");
  REQUIRE(seen.ok());
  CHECK(Find(*seen, kTestDriverName, "gpu-1")->network_data == std::nullopt);
  REQUIRE(writer->Apply(CallContext::Background(), ref, {Entry(kTestDriverName, "pool-a", "gpu-0")}).ok());
  seen = admin->GetResourceClaim(ns, "c");
  REQUIRE(seen.ok());
  CHECK(Find(*seen, kTestDriverName, "gpu-1") == nullptr);
  CHECK(Find(*seen, kTestDriverName, "gpu-0") != nullptr);
  CHECK(Find(*seen, kOtherDriver, "nic-0") != nullptr);
  absl::StatusOr<json> object = admin->Get(k8s::kResourceClaims, ns, "c");
  REQUIRE(object.ok());
  bool managed = false;
  for (const json& entry : (*object)["metadata"]["managedFields"]) {
    if (entry.value("manager", "") == kTestDriverName) managed = entry.value("subresource", "") == "status";
  }
  CHECK(managed);

  // May patch the status, but has no resourceclaims/driver permission for
  // the other driver.
  auto cpu_driver = e2e::MakeClient(e2e::DriverConfig("cpu-driver"));
  auto other_writer = Writer(cpu_driver, kOtherDriver);
  e2e::Grant(*admin, e2e::DriverUser("cpu-driver"), ns, DeviceStatusRules(""),
             [&] { return cpu_driver->GetResourceClaim(ns, "c").ok(); });
  AllocatedDeviceStatus changed = Entry(kOtherDriver, "pool-n", "nic-0");
  changed.conditions[0].status = "False";
  absl::Status refused = other_writer->Apply(CallContext::Background(), ref, {changed});
  CHECK_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.message()), Catch::Contains("requires resource=\"resourceclaims/driver\""));
}

TEST_CASE(
    "device status under RBAC that grants update but not patch (dra-example-driver's chart): written by GET "
    "and PUT, others kept",
    "[e2e][claim_status]") {
  auto admin = e2e::MakeClient(e2e::AdminConfig());
  const std::string ns = e2e::CreateNamespace(*admin, "claim-status-update");
  const k8s::ClaimRef ref = AllocatedClaim(*admin, ns);
  REQUIRE(Writer(admin, kOtherDriver)
              ->Apply(CallContext::Background(), ref, {Entry(kOtherDriver, "pool-n", "nic-0")})
              .ok());
  // The reference chart's rules, with arbitrary-node for this user without a node.
  const json rules = json::array({
      {{"apiGroups", {"resource.k8s.io"}}, {"resources", {"resourceclaims"}}, {"verbs", {"get", "list", "watch"}}},
      {{"apiGroups", {"resource.k8s.io"}}, {"resources", {"resourceclaims/status"}}, {"verbs", {"update"}}},
      {{"apiGroups", {"resource.k8s.io"}},
       {"resources", {"resourceclaims/driver"}},
       {"resourceNames", {kTestDriverName}},
       {"verbs", {"arbitrary-node:update", "arbitrary-node:patch"}}},
  });
  auto gpu_driver = e2e::MakeClient(e2e::DriverConfig("gpu-driver"));
  auto writer = Writer(gpu_driver, kTestDriverName);
  e2e::Grant(*admin, e2e::DriverUser("gpu-driver"), ns, rules, [&] {
    return writer
        ->Apply(CallContext::Background(), ref,
                {Entry(kTestDriverName, "pool-a", "gpu-0"), Entry(kTestDriverName, "pool-a", "gpu-1")})
        .ok();
  });
  absl::StatusOr<k8s::ResourceClaim> seen = admin->GetResourceClaim(ns, "c");
  REQUIRE(seen.ok());
  CHECK(seen->status.devices.size() == 3);
  REQUIRE(writer->Apply(CallContext::Background(), ref, {Entry(kTestDriverName, "pool-a", "gpu-1")}).ok());
  seen = admin->GetResourceClaim(ns, "c");
  REQUIRE(seen.ok());
  CHECK(Find(*seen, kTestDriverName, "gpu-0") == nullptr);
  CHECK(Find(*seen, kTestDriverName, "gpu-1") != nullptr);
  CHECK(Find(*seen, kOtherDriver, "nic-0") != nullptr);
  const std::vector<k8s::RequestCount> counts = gpu_driver->RequestCounts();
  for (const k8s::RequestCount& count : counts) {
    INFO(count.verb << " " << count.code);
    if (count.verb == "PATCH") CHECK(count.code == "403");  // apply tried only before the switch
  }
}

}  // namespace
}  // namespace dra
