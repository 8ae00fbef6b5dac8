#include "dra/k8s/resource_claim_json.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "support/json_locations.h"
#include "support/openapi_validator.h"

namespace dra::k8s {
namespace {

using nlohmann::json;

constexpr char kSchemaName[] = "io.k8s.api.resource.v1.ResourceClaim";

// A claim as the API server returns it after allocation, using every field
// the model knows. Quantities are in canonical form, so it round-trips byte
// for byte.
constexpr char kClaim[] = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceClaim",
  "metadata": {
    "name": "trainer-0-accel-x7k2p",
    "generateName": "trainer-0-accel-",
    "namespace": "ml",
    "uid": "0b7e6c2a-3f4d-4e5a-9b1c-2d3e4f5a6b7c",
    "resourceVersion": "48213",
    "generation": 1,
    "creationTimestamp": "2026-03-01T10:00:00Z",
    "labels": {"app": "trainer"},
    "annotations": {"resource.kubernetes.io/pod-claim-name": "accel"},
    "finalizers": ["resource.kubernetes.io/delete-protection"],
    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer-0",
                         "uid": "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", "controller": true,
                         "blockOwnerDeletion": true}]
  },
  "spec": {
    "devices": {
      "requests": [
        {
          "name": "gpu",
          "firstAvailable": [
            {
              "name": "large",
              "deviceClassName": "gpu.example.com",
              "selectors": [{"cel": {"expression":
                  "device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"80Gi\")) >= 0"}}],
              "allocationMode": "ExactCount",
              "count": 1
            },
            {
              "name": "small",
              "deviceClassName": "gpu.example.com",
              "count": 2,
              "tolerations": [{"key": "gpu.example.com/degraded", "operator": "Exists", "effect": "NoSchedule"}]
            }
          ]
        },
        {
          "name": "nic",
          "exactly": {
            "deviceClassName": "nic.example.com",
            "allocationMode": "ExactCount",
            "count": 2,
            "adminAccess": false,
            "tolerations": [{"key": "nic.example.com/maintenance", "operator": "Equal", "value": "planned",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "capacity": {"requests": {"bandwidth": "10G"}}
          }
        }
      ],
      "constraints": [
        {"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"},
        {"requests": ["nic"], "distinctAttribute": "nic.example.com/physicalPort"}
      ],
      "config": [
        {"requests": ["gpu"],
         "opaque": {"driver": "gpu.example.com",
                    "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig",
                                   "sharing": {"strategy": "TimeSlicing", "interval": "Short"}}}}
      ]
    }
  },
  "status": {
    "allocation": {
      "devices": {
        "results": [
          {"request": "gpu/large", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0",
           "bindingConditions": ["gpu.example.com/FabricAttached"],
           "bindingFailureConditions": ["gpu.example.com/FabricFailed"]},
          {"request": "nic", "driver": "nic.example.com", "pool": "node-a", "device": "nic-0", "adminAccess": false,
           "tolerations": [{"key": "nic.example.com/maintenance", "operator": "Equal", "value": "planned",
                            "effect": "NoExecute", "tolerationSeconds": 300}],
           "shareID": "5f2c9d1e-8a7b-4c6d-9e0f-1a2b3c4d5e6f",
           "consumedCapacity": {"bandwidth": "10G", "queues": "4"}},
          {"request": "nic", "driver": "nic.example.com", "pool": "node-a", "device": "nic-1",
           "shareID": "6a3d0e2f-9b8c-4d7e-8f1a-2b3c4d5e6f7a",
           "consumedCapacity": {"bandwidth": "10G", "queues": "4"}}
        ],
        "config": [
          {"source": "FromClass", "requests": ["gpu"],
           "opaque": {"driver": "gpu.example.com",
                      "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "GpuClassConfig",
                                     "mode": "exclusive"}}},
          {"source": "FromClaim", "requests": ["gpu"],
           "opaque": {"driver": "gpu.example.com",
                      "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig",
                                     "sharing": {"strategy": "TimeSlicing", "interval": "Short"}}}}
        ]
      },
      "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                               "values": ["node-a"]}]}]},
      "allocationTimestamp": "2026-03-01T10:00:02Z"
    },
    "reservedFor": [{"resource": "pods", "name": "trainer-0", "uid": "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"}],
    "devices": [
      {"driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0",
       "conditions": [
         {"type": "Ready", "status": "True", "observedGeneration": 1,
          "lastTransitionTime": "2026-03-01T10:00:05Z", "reason": "Prepared", "message": ""},
         {"type": "gpu.example.com/FabricAttached", "status": "True",
          "lastTransitionTime": "2026-03-01T10:00:04Z", "reason": "Attached", "message": "fabric port 3"}
       ],
       "data": {"uuid": "GPU-6f1e8a7b", "numaNode": 1}},
      {"driver": "nic.example.com", "pool": "node-a", "device": "nic-0",
       "shareID": "5f2c9d1e-8a7b-4c6d-9e0f-1a2b3c4d5e6f",
       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-03-01T10:00:05Z",
                       "reason": "Configured", "message": ""}],
       "networkData": {"interfaceName": "net1", "ips": ["192.0.2.5/24", "2001:db8::5/64"],
                       "hardwareAddress": "00:1a:2b:3c:4d:5e"}}
    ]
  }
})json";

const dra::testing::OpenApiValidator& Validator() {
  static const dra::testing::OpenApiValidator validator = [] {
    auto loaded = dra::testing::OpenApiValidator::FromFile(std::string(DRA_REFERENCE_DIR) +
                                                           "/openapi/apis__resource.k8s.io__v1_openapi.json");
    if (!loaded.ok()) FAIL(loaded.status().ToString());
    return *std::move(loaded);
  }();
  return validator;
}

std::vector<std::string> SchemaErrors(const json& value) { return Validator().Validate(value, kSchemaName); }

ResourceClaim MustDecode(const json& value) {
  absl::StatusOr<ResourceClaim> claim = ResourceClaimFromJson(value);
  if (!claim.ok()) FAIL(claim.status().ToString());
  return *std::move(claim);
}

Quantity Q(std::string_view text) { return *Quantity::Parse(text); }

// Raw JSON objects (opaque parameters, device data) have no insides to check;
// capacity "requests" is the only object of that name.
const testing::JsonShape kClaimShape{{"consumedCapacity", "requests", "labels", "annotations"}, {"parameters", "data"}};

json WithUnknownFields() {
  json document = json::parse(kClaim);
  document["futureTopLevel"] = {{"enabled", true}};
  document["metadata"]["selfLink"] = "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/trainer-0-accel-x7k2p";
  document["metadata"]["managedFields"] =
      json::array({{{"manager", "kube-scheduler"}, {"operation", "Update"}, {"subresource", "status"}}});
  document["spec"]["devices"]["requests"][1]["exactly"]["derivedAttributes"] =
      json::array({{{"name", "derived/numa"}, {"expression", "device.attributes[\"nic.example.com\"].numa"}}});
  json& results = document["status"]["allocation"]["devices"]["results"];
  results[0]["skipNodeOperations"] = {"NodePrepareResources", "NodeUnprepareResources"};
  results[2]["futureResultField"] = {{"nested", {1, 2, 3}}};
  document["status"]["devices"][1]["futureStatusField"] = "kept";
  document["status"]["devices"][1]["networkData"]["mtu"] = 9000;
  return document;
}

TEST_CASE("A realistic claim decodes into typed fields") {
  absl::StatusOr<ResourceClaim> parsed = ParseResourceClaim(kClaim);
  REQUIRE(parsed.ok());
  const ResourceClaim& claim = *parsed;

  CHECK(claim.metadata.name == "trainer-0-accel-x7k2p");
  CHECK(claim.metadata.namespace_ == "ml");
  CHECK(claim.metadata.generation == 1);
  CHECK(claim.metadata.labels.at("app") == "trainer");
  CHECK(claim.metadata.finalizers == std::vector<std::string>{"resource.kubernetes.io/delete-protection"});
  REQUIRE(claim.metadata.owner_references.size() == 1);
  CHECK(claim.metadata.owner_references[0].controller == true);
  CHECK_FALSE(claim.metadata.deletion_timestamp.has_value());

  const DeviceClaim& devices = claim.spec.devices;
  REQUIRE(devices.requests.size() == 2);
  const DeviceRequest& gpu = devices.requests[0];
  CHECK_FALSE(gpu.exactly.has_value());
  REQUIRE(gpu.first_available.size() == 2);
  CHECK(gpu.first_available[0].name == "large");
  REQUIRE(gpu.first_available[0].selectors.size() == 1);
  REQUIRE(gpu.first_available[0].selectors[0].cel.has_value());
  CHECK(absl::StrContains(gpu.first_available[0].selectors[0].cel->expression, "quantity(\"80Gi\")"));
  CHECK(gpu.first_available[1].count == 2);
  CHECK(gpu.first_available[1].allocation_mode.empty());
  CHECK(gpu.first_available[1].tolerations[0].operator_ == "Exists");
  REQUIRE(devices.requests[1].exactly.has_value());
  const ExactDeviceRequest& nic = *devices.requests[1].exactly;
  CHECK(nic.admin_access == false);
  CHECK(nic.tolerations[0].toleration_seconds == 300);
  REQUIRE(nic.capacity.has_value());
  CHECK(nic.capacity->requests.at("bandwidth") == Q("10G"));
  CHECK(devices.constraints[0].match_attribute == "resource.kubernetes.io/pcieRoot");
  CHECK(devices.constraints[1].distinct_attribute == "nic.example.com/physicalPort");
  CHECK_FALSE(devices.constraints[1].match_attribute.has_value());
  REQUIRE(devices.config[0].opaque.has_value());
  CHECK(devices.config[0].opaque->parameters["sharing"]["strategy"] == "TimeSlicing");

  REQUIRE(claim.status.allocation.has_value());
  const AllocationResult& allocation = *claim.status.allocation;
  REQUIRE(allocation.devices.results.size() == 3);
  CHECK(allocation.devices.results[0].binding_conditions == std::vector<std::string>{"gpu.example.com/FabricAttached"});
  CHECK_FALSE(allocation.devices.results[0].share_id.has_value());
  const DeviceRequestAllocationResult& shared = allocation.devices.results[1];
  CHECK(shared.share_id == "5f2c9d1e-8a7b-4c6d-9e0f-1a2b3c4d5e6f");
  CHECK(shared.consumed_capacity.at("queues") == Quantity::FromInt(4));
  CHECK(shared.tolerations[0].effect == "NoExecute");
  CHECK(allocation.devices.config[0].source == "FromClass");
  CHECK(allocation.devices.config[1].source == "FromClaim");
  REQUIRE(allocation.node_selector.has_value());
  CHECK(allocation.node_selector->node_selector_terms[0].match_fields[0].values[0] == "node-a");
  CHECK(allocation.allocation_timestamp == "2026-03-01T10:00:02Z");

  REQUIRE(claim.status.reserved_for.size() == 1);
  CHECK(claim.status.reserved_for[0].resource == "pods");
  CHECK(claim.status.reserved_for[0].api_group.empty());

  REQUIRE(claim.status.devices.size() == 2);
  const AllocatedDeviceStatus& gpu_status = claim.status.devices[0];
  REQUIRE(gpu_status.conditions.size() == 2);
  CHECK(gpu_status.conditions[0].observed_generation == 1);
  CHECK_FALSE(gpu_status.conditions[1].observed_generation.has_value());
  CHECK(gpu_status.conditions[1].message == "fabric port 3");
  REQUIRE(gpu_status.data.has_value());
  CHECK((*gpu_status.data)["numaNode"] == 1);
  const AllocatedDeviceStatus& nic_status = claim.status.devices[1];
  REQUIRE(nic_status.network_data.has_value());
  CHECK(nic_status.network_data->ips == std::vector<std::string>{"192.0.2.5/24", "2001:db8::5/64"});
  CHECK(nic_status.network_data->hardware_address == "00:1a:2b:3c:4d:5e");

  CHECK(claim.unknown_fields.is_null());
  CHECK(claim.metadata.unknown_fields.is_null());
}

TEST_CASE("A claim round-trips through JSON unchanged") {
  const json original = json::parse(kClaim);
  const ResourceClaim claim = MustDecode(original);
  const json encoded = ToJson(claim);

  CHECK(encoded == original);
  CHECK(MustDecode(encoded) == claim);
  CHECK(SchemaErrors(encoded).empty());
}

TEST_CASE("Encoding omits what Go omits and writes required fields") {
  SECTION("an empty claim") {
    const json encoded = ToJson(ResourceClaim{});
    CHECK(encoded == json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                     "metadata": {}, "spec": {"devices": {}}, "status": {}})"));
    CHECK(SchemaErrors(encoded).empty());
  }

  SECTION("a claim built in code") {
    ResourceClaim claim;
    claim.metadata.name = "c";
    claim.metadata.namespace_ = "default";
    DeviceRequest& request = claim.spec.devices.requests.emplace_back();
    request.name = "gpu";
    request.exactly.emplace().device_class_name = "gpu.example.com";
    AllocationResult& allocation = claim.status.allocation.emplace();
    DeviceRequestAllocationResult& result = allocation.devices.results.emplace_back();
    result.request = "gpu";
    result.driver = "gpu.example.com";
    result.pool = "p";
    result.device = "d";
    result.admin_access = false;
    result.consumed_capacity["memory"] = Q("1024Mi");
    DeviceAllocationConfiguration& config = allocation.devices.config.emplace_back();
    config.source = "FromClaim";
    config.opaque.emplace().driver = "gpu.example.com";
    config.opaque->parameters = {{"kind", "Config"}};
    AllocatedDeviceStatus& device = claim.status.devices.emplace_back();
    device.driver = "gpu.example.com";
    device.pool = "p";
    device.device = "d";
    Condition& ready = device.conditions.emplace_back();
    ready.type = "Ready";
    ready.status = "True";
    ready.last_transition_time = "2026-03-01T10:00:00Z";

    const json encoded = ToJson(claim);
    CHECK(encoded["spec"]["devices"]["requests"][0] ==
          json::parse(R"({"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}})"));
    const json& encoded_result = encoded["status"]["allocation"]["devices"]["results"][0];
    CHECK(encoded_result["adminAccess"] == false);                 // set to false is not unset
    CHECK(encoded_result["consumedCapacity"]["memory"] == "1Gi");  // canonical form
    CHECK_FALSE(encoded_result.contains("shareID"));
    CHECK_FALSE(encoded_result.contains("tolerations"));
    const json& condition = encoded["status"]["devices"][0]["conditions"][0];
    CHECK(condition["reason"] == "");  // required: Go writes it even when empty
    CHECK(condition["message"] == "");
    CHECK_FALSE(condition.contains("observedGeneration"));
    CHECK_FALSE(encoded["status"]["devices"][0].contains("data"));
    CHECK_FALSE(encoded["status"].contains("reservedFor"));
    CHECK(SchemaErrors(encoded).empty());
    CHECK(MustDecode(encoded) == claim);
  }
}

TEST_CASE("Encoding is deterministic") {
  const ResourceClaim claim = MustDecode(json::parse(kClaim));
  CHECK(ToJson(claim).dump() == ToJson(claim).dump());

  // The same claim with its keys in another order encodes to the same text.
  const auto first = ParseResourceClaim(R"({
      "kind": "ResourceClaim",
      "metadata": {"name": "a", "labels": {"x": "1", "y": "2"}},
      "status": {"reservedFor": [{"uid": "u", "name": "p", "resource": "pods"}]}})");
  const auto second = ParseResourceClaim(R"({
      "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]},
      "metadata": {"labels": {"y": "2", "x": "1"}, "name": "a"},
      "kind": "ResourceClaim"})");
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(ToJson(*first).dump() == ToJson(*second).dump());
}

TEST_CASE("Unknown fields survive a read-modify-write at every level") {
  const json original = WithUnknownFields();
  ResourceClaim claim = MustDecode(original);

  CHECK(claim.unknown_fields == json{{"futureTopLevel", {{"enabled", true}}}});
  CHECK(claim.metadata.unknown_fields.contains("managedFields"));
  CHECK(claim.metadata.unknown_fields.contains("selfLink"));
  CHECK(claim.spec.devices.requests[1].exactly->unknown_fields.contains("derivedAttributes"));
  const auto& results = claim.status.allocation->devices.results;
  CHECK(results[0].unknown_fields["skipNodeOperations"] == json{"NodePrepareResources", "NodeUnprepareResources"});
  CHECK(results[2].unknown_fields["futureResultField"]["nested"] == json{1, 2, 3});
  CHECK(claim.status.devices[1].unknown_fields == json{{"futureStatusField", "kept"}});
  CHECK(claim.status.devices[1].network_data->unknown_fields == json{{"mtu", 9000}});

  CHECK(ToJson(claim) == original);

  claim.status.devices[1].conditions[0].status = "False";
  claim.status.devices[1].conditions[0].reason = "LinkDown";
  json expected = original;
  expected["status"]["devices"][1]["conditions"][0]["status"] = "False";
  expected["status"]["devices"][1]["conditions"][0]["reason"] = "LinkDown";
  CHECK(ToJson(claim) == expected);

  // Why this needs its own check: the schema rejects the fields kept here.
  const std::vector<std::string> errors = SchemaErrors(original);
  CHECK(std::find(errors.begin(), errors.end(), "futureTopLevel: unknown field") != errors.end());
}

TEST_CASE("A wrong type anywhere is an error that names its path") {
  const json original = json::parse(kClaim);
  const std::vector<testing::JsonLocation> locations = AllLocations(original, kClaimShape);
  REQUIRE(locations.size() > 150);
  for (const testing::JsonLocation& location : locations) {
    json mutated = original;
    mutated[location.pointer] = testing::WrongTypeFor(location.value);
    const absl::StatusOr<ResourceClaim> claim = ResourceClaimFromJson(mutated);
    INFO(location.path << " = " << mutated[location.pointer].dump());
    REQUIRE_FALSE(claim.ok());
    CHECK(claim.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(claim.status().message()),
               Catch::StartsWith(absl::StrCat(location.path, ": Invalid type: expected ")));
  }
}

TEST_CASE("Null anywhere means unset, as in Go") {
  const json original = json::parse(kClaim);
  for (const testing::JsonLocation& location : AllLocations(original, kClaimShape)) {
    json mutated = original;
    mutated[location.pointer] = nullptr;
    const absl::StatusOr<ResourceClaim> claim = ResourceClaimFromJson(mutated);
    INFO(location.path);
    REQUIRE(claim.ok());
    CHECK(ToJson(*claim).is_object());
  }

  json document = original;
  document["status"] = nullptr;
  document["metadata"]["labels"]["app"] = nullptr;
  document["spec"]["devices"]["requests"][1]["exactly"]["adminAccess"] = nullptr;
  const ResourceClaim claim = MustDecode(document);
  CHECK(claim.status == ResourceClaimStatus{});
  CHECK(claim.metadata.labels.at("app").empty());
  CHECK_FALSE(claim.spec.devices.requests[1].exactly->admin_access.has_value());
}

TEST_CASE("Decode errors name the path and the rule") {
  struct Case {
    std::string pointer;
    json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/status/allocation/devices/results/2/pool", 7,
       "status.allocation.devices.results[2].pool: Invalid type: expected string, got number"},
      {"/spec/devices/requests/1/exactly/count", 1.5,
       "spec.devices.requests[1].exactly.count: Invalid value: 1.5: must be a 64-bit signed integer"},
      {"/metadata/generation", 18446744073709551615ULL,
       "metadata.generation: Invalid value: 18446744073709551615: must fit in a 64-bit signed integer"},
      {"/metadata/labels/app", 3, "metadata.labels[app]: Invalid type: expected string, got number"},
      {"/spec/devices/config/0/opaque/parameters", "x",
       "spec.devices.config[0].opaque.parameters: Invalid type: expected object, got string"},
      {"/status/allocation/nodeSelector", json::array(),
       "status.allocation.nodeSelector: Invalid type: expected object, got array"},
      {"/status/allocation/devices/results/1/consumedCapacity/queues", false,
       "status.allocation.devices.results[1].consumedCapacity[queues]: Invalid type: expected string or number, got "
       "boolean"},
      {"/kind", "Pod", "kind: Unsupported value: \"Pod\": supported values: \"ResourceClaim\""},
      {"/apiVersion", "resource.k8s.io/v1beta1",
       "apiVersion: Unsupported value: \"resource.k8s.io/v1beta1\": supported values: \"resource.k8s.io/v1\""},
  };
  for (const Case& c : cases) {
    json document = json::parse(kClaim);
    document[json::json_pointer(c.pointer)] = c.value;
    const absl::StatusOr<ResourceClaim> claim = ResourceClaimFromJson(document);
    INFO(c.pointer);
    REQUIRE_FALSE(claim.ok());
    CHECK(claim.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(claim.status().message() == c.message);
  }

  SECTION("an unparsable quantity") {
    json document = json::parse(kClaim);
    document["status"]["allocation"]["devices"]["results"][1]["consumedCapacity"]["queues"] = "lots";
    const absl::StatusOr<ResourceClaim> claim = ResourceClaimFromJson(document);
    REQUIRE_FALSE(claim.ok());
    CHECK_THAT(std::string(claim.status().message()),
               Catch::StartsWith("status.allocation.devices.results[1].consumedCapacity[queues]: Invalid value: "
                                 "\"lots\": "));
  }

  SECTION("a document that is not an object") {
    for (const json& document : {json(), json::array(), json("claim")}) {
      const absl::StatusOr<ResourceClaim> claim = ResourceClaimFromJson(document);
      REQUIRE_FALSE(claim.ok());
      CHECK(claim.status().message() == absl::StrCat("Invalid type: expected object, got ", document.type_name()));
    }
  }
}

TEST_CASE("Malformed text and hostile nesting fail without crashing") {
  for (std::string_view text : {"", "{", "{\"metadata\": }", "[1, 2", "nul"}) {
    const absl::StatusOr<ResourceClaim> claim = ParseResourceClaim(text);
    INFO(text);
    REQUIRE_FALSE(claim.ok());
    CHECK(claim.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(claim.status().message()), Catch::StartsWith("Invalid JSON: parse error at line 1"));
  }

  // The parameters value sits 7 levels deep: depth n gives a document 7 + n deep.
  const auto claim_with_parameters = [](size_t depth) {
    return absl::StrCat(R"({"spec": {"devices": {"config": [{"opaque": {"driver": "d", "parameters": {"p": )",
                        std::string(depth, '['), std::string(depth, ']'), "}}}]}}}");
  };
  const absl::StatusOr<ResourceClaim> deepest = ParseResourceClaim(claim_with_parameters(993));
  REQUIRE(deepest.ok());
  CHECK(MustDecode(ToJson(*deepest)) == *deepest);

  for (size_t depth : {994, 100000}) {
    const absl::StatusOr<ResourceClaim> too_deep = ParseResourceClaim(claim_with_parameters(depth));
    INFO(depth);
    REQUIRE_FALSE(too_deep.ok());
    CHECK(too_deep.status().message() == "Invalid value: arrays and objects nest deeper than 1000 levels");
  }
}

TEST_CASE("ObjectMeta and Condition have their own codecs") {
  const json condition_json = json::parse(R"({"type": "Ready", "status": "False", "observedGeneration": 0,
      "lastTransitionTime": "2026-03-01T10:00:00Z", "reason": "", "message": "", "futureField": 1})");
  absl::StatusOr<Condition> condition = ConditionFromJson(condition_json);
  REQUIRE(condition.ok());
  CHECK(condition->observed_generation == 0);  // present, so kept although zero
  CHECK(condition->unknown_fields == json{{"futureField", 1}});
  CHECK(ToJson(*condition) == condition_json);

  absl::StatusOr<Condition> bad = ConditionFromJson(json{{"type", "Ready"}, {"reason", 5}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "reason: Invalid type: expected string, got number");

  const json metadata_json = json::parse(R"({"name": "c", "deletionTimestamp": "2026-03-01T11:00:00Z",
      "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": false}],
      "managedFields": [{"manager": "kubelet"}]})");
  absl::StatusOr<ObjectMeta> metadata = ObjectMetaFromJson(metadata_json);
  REQUIRE(metadata.ok());
  CHECK(metadata->deletion_timestamp == "2026-03-01T11:00:00Z");
  CHECK(metadata->owner_references[0].controller == false);
  CHECK_FALSE(metadata->owner_references[0].block_owner_deletion.has_value());
  CHECK(ToJson(*metadata) == metadata_json);

  absl::StatusOr<ObjectMeta> bad_metadata = ObjectMetaFromJson(json{{"ownerReferences", {{{"controller", "yes"}}}}});
  REQUIRE_FALSE(bad_metadata.ok());
  CHECK(bad_metadata.status().message() == "ownerReferences[0].controller: Invalid type: expected boolean, got string");
}

TEST_CASE("The schema validator finds what is wrong") {
  const json valid = json::parse(kClaim);
  REQUIRE(SchemaErrors(valid).empty());
  const auto errors_after = [&](auto&& change) {
    json document = valid;
    change(document);
    return SchemaErrors(document);
  };
  using Errors = std::vector<std::string>;

  CHECK(errors_after([](json& d) { d["spec"]["devices"]["requests"][0]["bogus"] = 1; }) ==
        Errors{"spec.devices.requests[0].bogus: unknown field"});
  CHECK(errors_after([](json& d) { d["status"]["allocation"]["devices"]["results"][0]["pool"] = 7; }) ==
        Errors{"status.allocation.devices.results[0].pool: expected \"string\", got number"});
  CHECK(errors_after([](json& d) { d["metadata"]["generation"] = 1.5; }) ==
        Errors{"metadata.generation: expected \"integer\", got number"});
  CHECK(errors_after([](json& d) { d["status"]["allocation"]["devices"]["results"][0].erase("driver"); }) ==
        Errors{"status.allocation.devices.results[0]: missing required field \"driver\""});
  CHECK(errors_after([](json& d) { d["metadata"]["labels"]["app"] = 1; }) ==
        Errors{"metadata.labels[app]: expected \"string\", got number"});
  CHECK(errors_after([](json& d) { d["spec"]["devices"]["config"][0]["opaque"]["parameters"] = "x"; }) ==
        Errors{"spec.devices.config[0].opaque.parameters: expected \"object\", got string"});

  // Quantity is oneOf string or number; RawExtension is any object.
  const auto set_queues = [](json value) {
    return
        [value](json& d) { d["status"]["allocation"]["devices"]["results"][1]["consumedCapacity"]["queues"] = value; };
  };
  CHECK(errors_after(set_queues(4)).empty());
  CHECK(errors_after(set_queues(true)) ==
        Errors{"status.allocation.devices.results[1].consumedCapacity[queues]: boolean matches 0 of the oneOf schemas, "
               "expected exactly 1"});
  CHECK(errors_after([](json& d) { d["status"]["devices"][0]["data"] = {{"any", {{"nested", {1, "two"}}}}}; }).empty());

  CHECK(Validator().Validate(valid, "io.k8s.api.resource.v1.NoSuchKind") ==
        Errors{"no schema named io.k8s.api.resource.v1.NoSuchKind"});
  const dra::testing::OpenApiValidator small(json::parse(R"({"components": {"schemas": {
      "Closed": {"type": "object", "additionalProperties": false},
      "Pattern": {"type": "string", "pattern": "^a$"}}}})"));
  CHECK(small.Validate(json{{"a", 1}}, "Closed") == Errors{"a: unknown field"});
  CHECK(small.Validate("a", "Pattern") == Errors{"<root>: unsupported schema keyword \"pattern\""});
}

}  // namespace
}  // namespace dra::k8s
