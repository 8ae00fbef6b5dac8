// ClaimStatusWriter against the fake API server over real HTTPS: this
// driver's status.devices entries are applied, changed and removed while
// another driver's stay; conditions keep their transition time; bad entries
// are refused before anything is sent; outages and conflicts are retried
// until the context gives up.
#include <catch2/catch.hpp>

#include "absl/time/clock.h"
#include "dra/k8s/client.h"
#include "dra/k8s/resource_claim_json.h"
#include "dra/resourceclaim/claim_status_writer.h"
#include "support/device_status.h"
#include "support/fake_api_claims.h"
#include "support/test_driver.h"

namespace dra {
namespace {

using k8s::AllocatedDeviceStatus;
using nlohmann::json;
using resourceclaim::ClaimStatusWriter;
using testing::CreateAllocatedClaim;
using testing::FakeApiServer;
using testing::kClaimNamespace;
using testing::kTestDriverName;

std::unique_ptr<ClaimStatusWriter> MakeWriter(std::shared_ptr<k8s::Client> client,
                                              const std::string& driver = kTestDriverName) {
  resourceclaim::ClaimStatusWriterOptions options;
  options.driver_name = driver;
  options.backoff_initial = absl::Milliseconds(10);
  options.backoff_max = absl::Milliseconds(50);
  auto writer = ClaimStatusWriter::Create(std::move(client), options);
  INFO(writer.status().ToString());
  REQUIRE(writer.ok());
  return *std::move(writer);
}

AllocatedDeviceStatus Entry(const std::string& device, const std::string& ready = "True",
                            const std::string& driver = kTestDriverName, const std::string& pool = "pool-a") {
  return testing::ReadyEntry(driver, pool, device, ready);
}

k8s::ResourceClaim Get(k8s::Client& client, const k8s::ClaimRef& ref) {
  absl::StatusOr<k8s::ResourceClaim> claim = client.GetResourceClaim(ref.namespace_, ref.name);
  INFO(claim.status().ToString());
  REQUIRE(claim.ok());
  return *claim;
}

constexpr auto Find = testing::FindDeviceStatus;

// Requests the fake API server received, by "VERB resource".
int Requests(const FakeApiServer& server, const std::string& key) {
  absl::StatusOr<std::string> body = server.Admin("GET", "/fake/requests");
  REQUIRE(body.ok());
  return json::parse(*body)["counts"].value(key, 0);
}
int Patches(const FakeApiServer& server) { return Requests(server, "PATCH resourceclaims/status"); }

TEST_CASE("entries are applied, changed and removed, another driver's entry stays", "[claim_status]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "c", {"gpu-0", "gpu-1"});
  // The other driver in the claim writes its own entry with its own manager.
  REQUIRE(MakeWriter(client, "nic.example.com")
              ->Apply(CallContext::Background(), ref, {Entry("nic-0", "True", "nic.example.com", "pool-n")})
              .ok());

  auto writer = MakeWriter(client);
  AllocatedDeviceStatus gpu0 = Entry("gpu-0");
  gpu0.data = json{{"uuid", "GPU-0"}};
  AllocatedDeviceStatus gpu1 = Entry("gpu-1", "False");
  k8s::NetworkDeviceData& network = gpu1.network_data.emplace();
  network.interface_name = "eth1";
  network.ips = {"192.0.2.5/24"};
  network.hardware_address = "02:00:00:00:00:01";
  absl::Status applied = writer->Apply(CallContext::Background(), ref, {gpu0, gpu1});
  INFO(applied.ToString());
  REQUIRE(applied.ok());

  k8s::ResourceClaim claim = Get(*client, ref);
  REQUIRE(claim.status.devices.size() == 3);
  REQUIRE(Find(claim, kTestDriverName, "gpu-0") != nullptr);
  CHECK(Find(claim, kTestDriverName, "gpu-0")->data == json{{"uuid", "GPU-0"}});
  CHECK(Find(claim, kTestDriverName, "gpu-1")->network_data->ips == std::vector<std::string>{"192.0.2.5/24"});
  const std::string ready_since = Find(claim, kTestDriverName, "gpu-0")->conditions.at(0).last_transition_time;
  const std::string gpu1_since = Find(claim, kTestDriverName, "gpu-1")->conditions.at(0).last_transition_time;
  CHECK_FALSE(ready_since.empty());
  REQUIRE(Find(claim, "nic.example.com", "nic-0") != nullptr);

  // gpu-0 unchanged (its Ready keeps its time), gpu-1 flips, then is left out.
  REQUIRE(writer->Apply(CallContext::Background(), ref, {gpu0, Entry("gpu-1", "True")}).ok());
  claim = Get(*client, ref);
  CHECK(Find(claim, kTestDriverName, "gpu-0")->conditions.at(0).last_transition_time == ready_since);
  CHECK(Find(claim, kTestDriverName, "gpu-1")->conditions.at(0).status == "True");
  CHECK(Find(claim, kTestDriverName, "gpu-1")->conditions.at(0).last_transition_time >= gpu1_since);
  REQUIRE(writer->Apply(CallContext::Background(), ref, {gpu0}).ok());
  claim = Get(*client, ref);
  CHECK(Find(claim, kTestDriverName, "gpu-1") == nullptr);
  CHECK(Find(claim, "nic.example.com", "nic-0") != nullptr);

  REQUIRE(writer->Apply(CallContext::Background(), ref, {}).ok());
  claim = Get(*client, ref);
  REQUIRE(claim.status.devices.size() == 1);
  CHECK(claim.status.devices[0].driver == "nic.example.com");
}

TEST_CASE("bad entries are refused before anything is sent, naming the field", "[claim_status]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "c", {"gpu-0"});
  auto writer = MakeWriter(client);
  const int patches_before = Patches(*server);

  absl::Status other = writer->Apply(CallContext::Background(), ref, {Entry("nic-0", "True", "nic.example.com")});
  CHECK(other.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(other.message()),
             Catch::Contains("status.devices[0].driver: Invalid value: \"nic.example.com\": must be this writer's "
                             "driver \"gpu.example.com\""));

  absl::Status unallocated = writer->Apply(CallContext::Background(), ref, {Entry("gpu-7")});
  CHECK_THAT(std::string(unallocated.message()),
             Catch::Contains("status.devices[0]: Invalid value: \"gpu.example.com/pool-a/gpu-7\": must be a device "
                             "allocated to this driver in the claim"));

  absl::Status twice = writer->Apply(CallContext::Background(), ref, {Entry("gpu-0"), Entry("gpu-0")});
  CHECK_THAT(std::string(twice.message()), Catch::Contains("status.devices[1]: Duplicate value"));

  AllocatedDeviceStatus bad = Entry("gpu-0");
  bad.conditions[0].type = "";
  bad.conditions[0].status = "Maybe";
  absl::Status invalid = writer->Apply(CallContext::Background(), ref, {bad});
  CHECK(invalid.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(
      std::string(invalid.message()),
      Catch::Contains("status.devices[0].conditions[0].type: Invalid value: \"\": name part must be non-empty") &&
          Catch::Contains("status.devices[0].conditions[0].status"));
  CHECK(Patches(*server) == patches_before);
  CHECK(Get(*client, ref).status.devices.empty());
}

TEST_CASE("a replaced or deleted claim is not written", "[claim_status]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "c", {"gpu-0"});
  auto writer = MakeWriter(client);

  k8s::ClaimRef stale = ref;
  stale.uid = "uid-of-an-older-claim";
  absl::Status replaced = writer->Apply(CallContext::Background(), stale, {Entry("gpu-0")});
  CHECK(replaced.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(replaced.message()), Catch::Contains("the claim got replaced"));

  REQUIRE(client->Delete(k8s::kResourceClaims, kClaimNamespace, "c").ok());
  absl::Status gone = writer->Apply(CallContext::Background(), ref, {Entry("gpu-0")});
  CHECK(gone.code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(gone.message()), Catch::StartsWith("write device status of claim ns/c"));
}

TEST_CASE("outages and conflicts are retried, an outage longer than the context is not", "[claim_status]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server, /*default_rate_limit=*/false, /*max_retries=*/0);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "c", {"gpu-0"});
  auto writer = MakeWriter(client);

  REQUIRE(
      server
          ->Admin("POST", "/fake/fail", R"({"verb":"PATCH","resource":"resourceclaims/status","status":503,"count":2})")
          .ok());
  REQUIRE(
      server->Admin("POST", "/fake/fail", R"({"verb":"GET","resource":"resourceclaims","status":500,"count":1})").ok());
  REQUIRE(
      server
          ->Admin("POST", "/fake/fail", R"({"verb":"PATCH","resource":"resourceclaims/status","status":409,"count":1})")
          .ok());
  const int patches_before = Patches(*server);
  absl::Status applied = writer->Apply(CallContext::Background(), ref, {Entry("gpu-0")});
  INFO(applied.ToString());
  REQUIRE(applied.ok());
  CHECK(Patches(*server) - patches_before == 4);  // 503, 503, 409, then the write
  CHECK(Find(Get(*client, ref), kTestDriverName, "gpu-0") != nullptr);

  REQUIRE(
      server->Admin("POST", "/fake/fail", R"({"verb":"GET","resource":"resourceclaims","status":503,"count":100000})")
          .ok());
  // The deadline must pass in the retries, not before the first request (a
  // loaded machine): until the server saw one, again with twice the time.
  absl::Status outage;
  for (absl::Duration timeout = absl::Milliseconds(300);; timeout *= 2) {
    const int gets_before = Requests(*server, "GET resourceclaims");
    outage = writer->Apply(CallContext::Background(absl::Now() + timeout), ref, {Entry("gpu-0", "False")});
    if (Requests(*server, "GET resourceclaims") > gets_before) break;
  }
  CHECK(outage.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_THAT(std::string(outage.message()),
             Catch::StartsWith("write device status of claim ns/c") && Catch::Contains("last error: "));
  REQUIRE(server->Admin("DELETE", "/fake/fail").ok());
  // A permission error (of apply and of the update tried then) is not retried.
  REQUIRE(
      server
          ->Admin("POST", "/fake/fail", R"({"verb":"PATCH","resource":"resourceclaims/status","status":403,"count":1})")
          .ok());
  REQUIRE(server
              ->Admin("POST", "/fake/fail",
                      R"({"verb":"UPDATE","resource":"resourceclaims/status","status":403,"count":1})")
              .ok());
  const int patches_403 = Patches(*server);
  const int puts_403 = Requests(*server, "UPDATE resourceclaims/status");
  absl::Status forbidden = writer->Apply(CallContext::Background(), ref, {Entry("gpu-0")});
  CHECK(forbidden.code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(forbidden.message()), Catch::Contains("neither patch (server-side apply) nor update"));
  CHECK(Patches(*server) - patches_403 == 1);
  CHECK(Requests(*server, "UPDATE resourceclaims/status") - puts_403 == 1);
  // Allowed again: apply, as before.
  REQUIRE(writer->Apply(CallContext::Background(), ref, {Entry("gpu-0")}).ok());
  CHECK(Patches(*server) - patches_403 == 2);
}

// RBAC that grants update but not patch of the status, as dra-example-driver's chart does.
TEST_CASE("status update allowed but patch forbidden: written by GET and PUT from then on and others' entries kept",
          "[claim_status]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server, /*default_rate_limit=*/false, /*max_retries=*/0);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "c", {"gpu-0", "gpu-1"});
  REQUIRE(MakeWriter(client, "nic.example.com")
              ->Apply(CallContext::Background(), ref, {Entry("nic-0", "True", "nic.example.com", "pool-n")})
              .ok());
  auto writer = MakeWriter(client);

  REQUIRE(server
              ->Admin("POST", "/fake/fail",
                      R"({"verb":"PATCH","resource":"resourceclaims/status","status":403,"count":100000})")
              .ok());
  const int puts = Requests(*server, "UPDATE resourceclaims/status");
  const int patches = Patches(*server);
  absl::Status written = writer->Apply(CallContext::Background(), ref, {Entry("gpu-0"), Entry("gpu-1", "False")});
  INFO(written.ToString());
  REQUIRE(written.ok());
  k8s::ResourceClaim seen = Get(*client, ref);
  CHECK(seen.status.devices.size() == 3);
  REQUIRE(Find(seen, kTestDriverName, "gpu-1") != nullptr);
  CHECK(Find(seen, kTestDriverName, "gpu-1")->conditions[0].status == "False");
  CHECK(Find(seen, "nic.example.com", "nic-0") != nullptr);
  CHECK(Patches(*server) - patches == 1);

  // From now on no apply is tried; left-out entries go, a conflict is retried.
  REQUIRE(server
              ->Admin("POST", "/fake/fail",
                      R"({"verb":"UPDATE","resource":"resourceclaims/status","status":409,"count":1})")
              .ok());
  REQUIRE(writer->Apply(CallContext::Background(), ref, {Entry("gpu-0")}).ok());
  seen = Get(*client, ref);
  CHECK(Find(seen, kTestDriverName, "gpu-1") == nullptr);
  CHECK(Find(seen, kTestDriverName, "gpu-0") != nullptr);
  CHECK(Find(seen, "nic.example.com", "nic-0") != nullptr);
  CHECK(Patches(*server) - patches == 1);
  CHECK(Requests(*server, "UPDATE resourceclaims/status") - puts == 3);  // one, then 409 and the write
  // One read per write: the claim as JSON serves the checks and the update.
  const int gets = Requests(*server, "GET resourceclaims");
  REQUIRE(writer->Apply(CallContext::Background(), ref, {Entry("gpu-0", "False")}).ok());
  CHECK(Requests(*server, "GET resourceclaims") - gets == 1);
  CHECK(Find(Get(*client, ref), kTestDriverName, "gpu-0")->conditions[0].status == "False");
}

// The node plugin's device status and the binding reconciler's conditions
// (two field managers of one driver) under dra-example-driver's chart's RBAC.
TEST_CASE(
    "two writers of one driver with their own field managers, both by GET and PUT: each keeps the other's "
    "conditions and data, and removes only what it wrote",
    "[claim_status]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server, /*default_rate_limit=*/false, /*max_retries=*/0);
  const k8s::ClaimRef ref = CreateAllocatedClaim(*client, "c", {"gpu-0", "gpu-1"});
  auto status = MakeWriter(client);
  resourceclaim::ClaimStatusWriterOptions options = status->options();
  options.field_manager = std::string(kTestDriverName) + "/binding";
  auto binding_writer = ClaimStatusWriter::Create(client, options);
  REQUIRE(binding_writer.ok());
  ClaimStatusWriter& binding = **binding_writer;
  REQUIRE(server
              ->Admin("POST", "/fake/fail",
                      R"({"verb":"PATCH","resource":"resourceclaims/status","status":403,"count":100000})")
              .ok());

  AllocatedDeviceStatus bound;
  bound.driver = kTestDriverName;
  bound.pool = "pool-a";
  bound.device = "gpu-0";
  k8s::Condition& condition = bound.conditions.emplace_back();
  condition.type = std::string(kTestDriverName) + "/is-prepared";
  condition.status = "True";
  condition.reason = "Ready";
  REQUIRE(binding.Apply(CallContext::Background(), ref, {bound}).ok());
  AllocatedDeviceStatus prepared = Entry("gpu-0");
  prepared.data = json{{"uuid", {{"string", "GPU-0"}}}};
  REQUIRE(status->Apply(CallContext::Background(), ref, {prepared, Entry("gpu-1")}).ok());

  k8s::ResourceClaim seen = Get(*client, ref);
  const AllocatedDeviceStatus* gpu0 = Find(seen, kTestDriverName, "gpu-0");
  REQUIRE(gpu0 != nullptr);
  INFO(k8s::ToJson(seen)["status"].dump(1));
  REQUIRE(gpu0->conditions.size() == 2);
  CHECK(gpu0->conditions[0].type == condition.type);
  CHECK(gpu0->conditions[1].type == "Ready");
  CHECK(gpu0->data == prepared.data);

  // The binding writer again, with nothing for gpu-0: its condition goes, the
  // status writer's Ready and data stay.
  REQUIRE(binding.Apply(CallContext::Background(), ref, {}).ok());
  seen = Get(*client, ref);
  gpu0 = Find(seen, kTestDriverName, "gpu-0");
  REQUIRE(gpu0 != nullptr);
  REQUIRE(gpu0->conditions.size() == 1);
  CHECK(gpu0->conditions[0].type == "Ready");
  CHECK(gpu0->data == prepared.data);
  CHECK(Find(seen, kTestDriverName, "gpu-1") != nullptr);

  // The status writer leaves gpu-1 out and gpu-0's data: they go.
  REQUIRE(status->Apply(CallContext::Background(), ref, {Entry("gpu-0")}).ok());
  seen = Get(*client, ref);
  CHECK(Find(seen, kTestDriverName, "gpu-1") == nullptr);
  gpu0 = Find(seen, kTestDriverName, "gpu-0");
  REQUIRE(gpu0 != nullptr);
  CHECK(gpu0->conditions.size() == 1);
  CHECK_FALSE(gpu0->data.has_value());
}

TEST_CASE("bad writer options stop Create with the option named", "[claim_status]") {
  auto server = testing::StartServer();
  auto client = testing::MakeClient(*server);
  resourceclaim::ClaimStatusWriterOptions options;
  CHECK(ClaimStatusWriter::Create(client, options).status().message() ==
        "ClaimStatusWriterOptions: driver_name: Required value");
  options.driver_name = "GPU.example.com";
  CHECK_THAT(std::string(ClaimStatusWriter::Create(client, options).status().message()),
             Catch::StartsWith("ClaimStatusWriterOptions: driver_name: Invalid value: \"GPU.example.com\""));
  options.driver_name = kTestDriverName;
  CHECK(ClaimStatusWriter::Create(nullptr, options).status().message() == "ClaimStatusWriter: client: Required value");
  REQUIRE(ClaimStatusWriter::Create(client, options).ok());
  CHECK((*ClaimStatusWriter::Create(client, options))->options().field_manager == kTestDriverName);
}

}  // namespace
}  // namespace dra
