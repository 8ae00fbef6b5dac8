#include "dra/k8s/resource_slice_json.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "dra/k8s/device_class_json.h"
#include "dra/k8s/node_json.h"
#include "dra/k8s/node_selector_json.h"
#include "dra/k8s/status_json.h"
#include "support/json_locations.h"
#include "support/openapi_validator.h"
#include "support/resource_slice_fixtures.h"

namespace dra::k8s {
namespace {

using nlohmann::json;
using Errors = std::vector<std::string>;
using dra::testing::kCounterSlice;
using dra::testing::kSlice;

constexpr char kSliceSchema[] = "io.k8s.api.resource.v1.ResourceSlice";
constexpr char kDeviceClassSchema[] = "io.k8s.api.resource.v1.DeviceClass";
constexpr char kStatusSchema[] = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

const dra::testing::OpenApiValidator& Validator() {
  static const dra::testing::OpenApiValidator validator = [] {
    auto loaded = dra::testing::OpenApiValidator::FromFile(std::string(DRA_REFERENCE_DIR) +
                                                           "/openapi/apis__resource.k8s.io__v1_openapi.json");
    if (!loaded.ok()) FAIL(loaded.status().ToString());
    return *std::move(loaded);
  }();
  return validator;
}

template <typename T>
T Must(absl::StatusOr<T> value) {
  if (!value.ok()) FAIL(value.status().ToString());
  return *std::move(value);
}

ResourceSlice MustDecode(const json& value) { return Must(ResourceSliceFromJson(value)); }

Quantity Q(std::string_view text) { return *Quantity::Parse(text); }

const testing::JsonShape kSliceShape{
    {"attributes", "capacity", "counters", "nodeAllocatableResources", "labels", "annotations"}, {}};

TEST_CASE("A realistic slice decodes into typed fields") {
  const ResourceSlice slice = Must(ParseResourceSlice(kSlice));

  CHECK(slice.metadata.name == "node-a-gpu.example.com-7xk2p");
  CHECK(slice.metadata.owner_references[0].kind == "Node");
  CHECK(slice.spec.driver == "gpu.example.com");
  CHECK(slice.spec.pool.name == "node-a");
  CHECK(slice.spec.pool.generation == 4);
  CHECK(slice.spec.pool.resource_slice_count == 2);
  CHECK(slice.spec.per_device_node_selection == true);
  CHECK_FALSE(slice.spec.node_name.has_value());
  CHECK_FALSE(slice.spec.all_nodes.has_value());
  CHECK(slice.spec.partition_type_attribute == "gpu.example.com/profile");
  CHECK(slice.spec.skip_node_operations == std::vector<std::string>{"NodePrepareResources", "NodeUnprepareResources"});
  REQUIRE(slice.spec.devices.size() == 3);

  const Device& gpu = slice.spec.devices[0];
  CHECK(gpu.name == "gpu-0");
  CHECK(gpu.attributes.at("gpu.example.com/index").int_value == 0);
  CHECK(gpu.attributes.at("gpu.example.com/mig-capable").bool_value == true);
  CHECK(gpu.attributes.at("gpu.example.com/profile").string_value == "Full");
  CHECK(gpu.attributes.at("gpu.example.com/driverVersion").version_value == "580.65.6");
  CHECK_FALSE(gpu.attributes.at("gpu.example.com/index").string_value.has_value());
  const DeviceCapacity& memory = gpu.capacity.at("gpu.example.com/memory");
  CHECK(memory.value == Q("80Gi"));
  REQUIRE(memory.request_policy.has_value());
  CHECK(memory.request_policy->default_value == Q("1Gi"));
  REQUIRE(memory.request_policy->valid_range.has_value());
  CHECK(memory.request_policy->valid_range->min == Q("1Gi"));
  CHECK(memory.request_policy->valid_range->max == Q("80Gi"));
  CHECK(memory.request_policy->valid_range->step == Q("1Gi"));
  CHECK(gpu.capacity.at("gpu.example.com/multiprocessors").request_policy->valid_values ==
        std::vector<Quantity>{Q("4"), Q("8"), Q("16"), Q("132")});
  CHECK_FALSE(gpu.capacity.at("gpu.example.com/copyEngines").request_policy.has_value());
  REQUIRE(gpu.consumes_counters.size() == 1);
  CHECK(gpu.consumes_counters[0].counter_set == "gpu-0-counters");
  CHECK(gpu.consumes_counters[0].counters.at("multiprocessors").value == Q("132"));
  CHECK(gpu.node_name == "node-a");
  REQUIRE(gpu.taints.size() == 2);
  CHECK(gpu.taints[0].effect == "NoSchedule");
  CHECK(gpu.taints[0].time_added == "2026-03-01T09:30:00Z");
  CHECK(gpu.taints[1].value.empty());
  CHECK_FALSE(gpu.taints[1].time_added.has_value());
  CHECK(gpu.binds_to_node == true);
  CHECK(gpu.binding_conditions == std::vector<std::string>{"gpu.example.com/FabricAttached"});
  CHECK(gpu.binding_failure_conditions == std::vector<std::string>{"gpu.example.com/FabricAttachFailed"});
  CHECK(gpu.allow_multiple_allocations == true);
  const NodeAllocatableResource& overhead = gpu.node_allocatable_resources.at("memory");
  CHECK_FALSE(overhead.mapping.has_value());
  REQUIRE(overhead.overhead.has_value());
  CHECK(overhead.overhead->per_pod == Q("512Mi"));
  CHECK(overhead.overhead->per_container == Q("64Mi"));

  const Device& cpu = slice.spec.devices[1];
  CHECK(cpu.attributes.at("dra.example.com/numaNodes").int_values == std::vector<int64_t>{0, 1});
  CHECK(cpu.attributes.at("dra.example.com/smtEnabled").bool_values == std::vector<bool>{true, false});
  CHECK(cpu.attributes.at("dra.example.com/flags").string_values == std::vector<std::string>{"avx512", "amx"});
  CHECK(cpu.attributes.at("dra.example.com/microcode").version_values == std::vector<std::string>{"1.2.3", "1.3.0"});
  REQUIRE(cpu.node_selector.has_value());
  const NodeSelectorTerm& term = cpu.node_selector->node_selector_terms.at(0);
  CHECK(term.match_expressions.at(0).key == "topology.example.com/rack");
  CHECK(term.match_expressions.at(0).operator_ == "In");
  CHECK(term.match_expressions.at(0).values == std::vector<std::string>{"r1", "r2"});
  CHECK(term.match_fields.at(0).key == "metadata.name");
  const NodeAllocatableMapping& by_capacity = *cpu.node_allocatable_resources.at("cpu").mapping;
  CHECK(by_capacity.capacity_key == "dra.example.com/cores");
  CHECK(by_capacity.capacity_multiplier == Q("2"));
  CHECK_FALSE(by_capacity.device_multiplier.has_value());
  const NodeAllocatableResource& both = cpu.node_allocatable_resources.at("hugepages-2Mi");
  CHECK(both.mapping->device_multiplier == Q("1Gi"));
  CHECK(both.overhead->per_pod == Q("4Mi"));
  CHECK_FALSE(both.overhead->per_container.has_value());

  const Device& ccx = slice.spec.devices[2];
  CHECK(ccx.all_nodes == true);
  CHECK(ccx.attributes.empty());
  CHECK(ccx.node_allocatable_resources.at("cpu").mapping->device_multiplier == Q("8"));

  const ResourceSlice counters = Must(ParseResourceSlice(kCounterSlice));
  REQUIRE(counters.spec.node_selector.has_value());
  CHECK(counters.spec.node_selector->node_selector_terms[0].match_expressions[1].operator_ == "Exists");
  CHECK(counters.spec.node_selector->node_selector_terms[0].match_expressions[1].values.empty());
  REQUIRE(counters.spec.shared_counters.size() == 2);
  CHECK(counters.spec.shared_counters[1].name == "gpu-1-counters");
  CHECK(counters.spec.shared_counters[1].counters.at("memory").value == Q("80Gi"));
  CHECK(counters.spec.devices.empty());
}

TEST_CASE("Slices round-trip and encode valid against the OpenAPI schema") {
  for (const char* text : {kSlice, kCounterSlice}) {
    const json original = json::parse(text);
    const ResourceSlice slice = MustDecode(original);
    const json encoded = ToJson(slice);
    CHECK(encoded == original);
    CHECK(Validator().Validate(encoded, kSliceSchema) == Errors{});
    CHECK(MustDecode(encoded) == slice);
    CHECK(Must(ToJson(slice, EncodeOptions{})) == encoded);
  }
}

// KEP-5963, merged after the commit of the reference OpenAPI document (so no
// schema check here).
TEST_CASE("Compatibility groups of a counter consumption round-trip") {
  json original = json::parse(kCounterSlice);
  original["spec"]["devices"] = json::array({{{"name", "gpu-0-mig-1g"},
                                              {"consumesCounters",
                                               {{{"counterSet", "gpu-0-counters"},
                                                 {"counters", {{"memory", {{"value", "10Gi"}}}}},
                                                 {"compatibilityGroups", {"mig-1g", "mig-2g"}}}}}}});
  const ResourceSlice slice = MustDecode(original);
  REQUIRE(slice.spec.devices.size() == 1);
  const DeviceCounterConsumption& consumption = slice.spec.devices[0].consumes_counters.at(0);
  CHECK(consumption.compatibility_groups == std::vector<std::string>{"mig-1g", "mig-2g"});
  CHECK(consumption.unknown_fields.empty());
  CHECK(ToJson(slice) == original);
}

TEST_CASE("A slice built in code encodes as Go would") {
  ResourceSlice slice;
  slice.metadata.name = "node-b-cpu";
  slice.spec.driver = "cpu.example.com";
  slice.spec.pool.name = "node-b";
  slice.spec.pool.resource_slice_count = 1;
  slice.spec.node_name = "node-b";
  Device& device = slice.spec.devices.emplace_back();
  device.name = "cpu-0";
  device.attributes["dra.example.com/core"].int_value = 0;
  device.capacity["dra.example.com/threads"].value = Quantity::FromInt(2);
  device.node_allocatable_resources["cpu"].mapping.emplace().device_multiplier = Quantity::FromInt(2);

  const json expected = json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-b-cpu"},
    "spec": {"driver": "cpu.example.com", "pool": {"name": "node-b", "generation": 0, "resourceSliceCount": 1},
             "nodeName": "node-b",
             "devices": [{"name": "cpu-0", "attributes": {"dra.example.com/core": {"int": 0}},
                          "capacity": {"dra.example.com/threads": {"value": "2"}},
                          "nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "2"}}}}]}})");
  CHECK(ToJson(slice) == expected);
  CHECK(Validator().Validate(expected, kSliceSchema) == Errors{});

  ResourceSlice all_nodes;
  all_nodes.spec.driver = "net.example.com";
  all_nodes.spec.pool.name = "fabric";
  all_nodes.spec.pool.resource_slice_count = 1;
  all_nodes.spec.all_nodes = true;
  all_nodes.spec.node_selector.emplace();  // an empty selector is still written: nodeSelectorTerms is required
  const json encoded = ToJson(all_nodes);
  CHECK(encoded["spec"]["allNodes"] == true);
  CHECK(encoded["spec"]["nodeSelector"] == json{{"nodeSelectorTerms", json::array()}});
  CHECK_FALSE(encoded["spec"].contains("devices"));
  CHECK(Validator().Validate(encoded, kSliceSchema) == Errors{});
  CHECK(MustDecode(encoded) == all_nodes);
}

json WithUnknownFields() {
  json document = json::parse(kSlice);
  document["futureTopLevel"] = {{"enabled", true}};
  document["metadata"]["managedFields"] = json::array({{{"manager", "dra-cpp"}, {"operation", "Apply"}}});
  document["spec"]["futureSpecField"] = "kept";
  document["spec"]["pool"]["futurePoolField"] = 1;
  json& gpu = document["spec"]["devices"][0];
  gpu["futureDeviceField"] = {{"nested", {1, 2, 3}}};
  gpu["attributes"]["gpu.example.com/index"]["futureAttributeForm"] = "x";
  gpu["capacity"]["gpu.example.com/memory"]["requestPolicy"]["validRange"]["futureRangeField"] = false;
  gpu["consumesCounters"][0]["futureConsumptionField"] = {"a", "b"};
  gpu["consumesCounters"][0]["counters"]["memory"]["futureCounterField"] = 2;
  gpu["taints"][0]["futureTaintField"] = "t";
  gpu["nodeAllocatableResources"]["memory"]["overhead"]["perNamespace"] = "1Mi";
  json& cpu = document["spec"]["devices"][1];
  cpu["nodeSelector"]["nodeSelectorTerms"][0]["futureTermField"] = 1;
  cpu["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["futureRequirementField"] = 2;
  cpu["nodeAllocatableResources"]["cpu"]["mapping"]["roundingPolicy"] = "Up";
  cpu["nodeAllocatableResources"]["cpu"]["futureResourceField"] = {{"a", 1}};
  return document;
}

TEST_CASE("Unknown fields are kept at every level and written back") {
  const json original = WithUnknownFields();
  ResourceSlice slice = MustDecode(original);
  CHECK(slice.unknown_fields == json{{"futureTopLevel", {{"enabled", true}}}});
  CHECK(slice.metadata.unknown_fields.contains("managedFields"));
  CHECK(slice.spec.unknown_fields == json{{"futureSpecField", "kept"}});
  CHECK(slice.spec.pool.unknown_fields == json{{"futurePoolField", 1}});
  const Device& gpu = slice.spec.devices[0];
  CHECK(gpu.unknown_fields == json{{"futureDeviceField", {{"nested", {1, 2, 3}}}}});
  CHECK(gpu.attributes.at("gpu.example.com/index").unknown_fields == json{{"futureAttributeForm", "x"}});
  CHECK(gpu.consumes_counters[0].unknown_fields == json{{"futureConsumptionField", {"a", "b"}}});
  CHECK(gpu.node_allocatable_resources.at("memory").overhead->unknown_fields == json{{"perNamespace", "1Mi"}});
  const Device& cpu = slice.spec.devices[1];
  CHECK(cpu.node_selector->node_selector_terms[0].unknown_fields == json{{"futureTermField", 1}});
  CHECK(cpu.node_allocatable_resources.at("cpu").mapping->unknown_fields == json{{"roundingPolicy", "Up"}});
  CHECK(ToJson(slice) == original);

  // A read-modify-write changes only what was modified.
  slice.spec.pool.generation = 5;
  slice.spec.devices[0].taints.pop_back();
  json expected = original;
  expected["spec"]["pool"]["generation"] = 5;
  expected["spec"]["devices"][0]["taints"].erase(1);
  CHECK(ToJson(slice) == expected);

  // The schema rejects what a newer server would have added: this is why the
  // codec keeps them instead of relying on validation.
  const Errors errors = Validator().Validate(original, kSliceSchema);
  CHECK(std::find(errors.begin(), errors.end(), "spec.futureSpecField: unknown field") != errors.end());
}

TEST_CASE("A wrong type anywhere in a slice is an error that names its path") {
  for (const char* text : {kSlice, kCounterSlice}) {
    const json original = json::parse(text);
    const std::vector<testing::JsonLocation> locations = AllLocations(original, kSliceShape);
    REQUIRE(locations.size() > 30);  // 147 in kSlice, 37 in kCounterSlice
    for (const testing::JsonLocation& location : locations) {
      json mutated = original;
      mutated[location.pointer] = testing::WrongTypeFor(location.value);
      const absl::StatusOr<ResourceSlice> slice = ResourceSliceFromJson(mutated);
      INFO(location.path << " = " << mutated[location.pointer].dump());
      REQUIRE_FALSE(slice.ok());
      CHECK(slice.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK_THAT(std::string(slice.status().message()),
                 Catch::StartsWith(absl::StrCat(location.path, ": Invalid type: expected ")));
    }
  }
}

TEST_CASE("Null anywhere in a slice means unset") {
  const json original = json::parse(kSlice);
  for (const testing::JsonLocation& location : AllLocations(original, kSliceShape)) {
    json mutated = original;
    mutated[location.pointer] = nullptr;
    INFO(location.path);
    const absl::StatusOr<ResourceSlice> slice = ResourceSliceFromJson(mutated);
    REQUIRE(slice.ok());
  }
}

TEST_CASE("Slice decode errors name the path and the rule") {
  struct Case {
    std::string pointer;
    json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/spec/pool/generation", 1.5, "spec.pool.generation: Invalid value: 1.5: must be a 64-bit signed integer"},
      {"/spec/devices/0/attributes/gpu.example.com~1index/int", "0",
       "spec.devices[0].attributes[gpu.example.com/index].int: Invalid type: expected integer, got string"},
      {"/spec/devices/1/attributes/dra.example.com~1smtEnabled/bools/1", 0,
       "spec.devices[1].attributes[dra.example.com/smtEnabled].bools[1]: Invalid type: expected boolean, got number"},
      {"/spec/devices/0/capacity/gpu.example.com~1memory/requestPolicy/validValues", "4",
       "spec.devices[0].capacity[gpu.example.com/memory].requestPolicy.validValues: Invalid type: expected array, "
       "got string"},
      {"/spec/devices/1/nodeAllocatableResources/cpu/mapping/capacityMultiplier", true,
       "spec.devices[1].nodeAllocatableResources[cpu].mapping.capacityMultiplier: Invalid type: expected string or "
       "number, got boolean"},
      {"/spec/devices/1/nodeSelector/nodeSelectorTerms/0/matchFields/0/operator", 1,
       "spec.devices[1].nodeSelector.nodeSelectorTerms[0].matchFields[0].operator: Invalid type: expected string, "
       "got number"},
      {"/kind", "ResourceClaim", "kind: Unsupported value: \"ResourceClaim\": supported values: \"ResourceSlice\""},
  };
  for (const Case& c : cases) {
    json document = json::parse(kSlice);
    document[json::json_pointer(c.pointer)] = c.value;
    const absl::StatusOr<ResourceSlice> slice = ResourceSliceFromJson(document);
    INFO(c.pointer);
    REQUIRE_FALSE(slice.ok());
    CHECK(slice.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(slice.status().message() == c.message);
  }

  json document = json::parse(kSlice);
  document["spec"]["devices"][0]["capacity"]["gpu.example.com/memory"]["value"] = "80 gigs";
  const absl::StatusOr<ResourceSlice> bad_quantity = ResourceSliceFromJson(document);
  REQUIRE_FALSE(bad_quantity.ok());
  CHECK_THAT(std::string(bad_quantity.status().message()),
             Catch::StartsWith("spec.devices[0].capacity[gpu.example.com/memory].value: Invalid value: \"80 gigs\": "));

  const absl::StatusOr<ResourceSlice> bad_text = ParseResourceSlice("{\"spec\": ");
  REQUIRE_FALSE(bad_text.ok());
  CHECK_THAT(std::string(bad_text.status().message()), Catch::StartsWith("Invalid JSON: "));
}

// Device "cpu-socket-0" of kSlice without the hugepages overhead, in the
// Kubernetes 1.36 / 1.37.0-beta.0 shape.
constexpr char kLegacySlice[] = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "ResourceSlice",
  "metadata": {"name": "node-a-cpu.example.com"},
  "spec": {
    "driver": "cpu.example.com",
    "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
    "nodeName": "node-a",
    "devices": [
      {
        "name": "cpu-socket-0",
        "capacity": {"dra.example.com/cores": {"value": "64"}},
        "nodeAllocatableResourceMappings": {
          "cpu": {"capacityKey": "dra.example.com/cores", "allocationMultiplier": "2"},
          "hugepages-2Mi": {"allocationMultiplier": "1Gi"}
        }
      },
      {
        "name": "ccx-0",
        "nodeAllocatableResourceMappings": {
          "cpu": {"allocationMultiplier": "8"},
          "memory": {"capacityKey": "dra.example.com/memory"}
        }
      },
      {"name": "nic-0"}
    ]
  }
})json";

TEST_CASE("The legacy nodeAllocatableResourceMappings shape decodes into the current model") {
  const ResourceSlice slice = MustDecode(json::parse(kLegacySlice));
  const Device& socket = slice.spec.devices[0];
  CHECK(socket.unknown_fields.is_null());
  REQUIRE(socket.node_allocatable_resources.size() == 2);
  const NodeAllocatableMapping& cpu = *socket.node_allocatable_resources.at("cpu").mapping;
  CHECK(cpu.capacity_key == "dra.example.com/cores");
  CHECK(cpu.capacity_multiplier == Q("2"));
  CHECK_FALSE(cpu.device_multiplier.has_value());
  const NodeAllocatableMapping& hugepages = *socket.node_allocatable_resources.at("hugepages-2Mi").mapping;
  CHECK_FALSE(hugepages.capacity_key.has_value());
  CHECK(hugepages.device_multiplier == Q("1Gi"));
  CHECK_FALSE(socket.node_allocatable_resources.at("cpu").overhead.has_value());

  const Device& ccx = slice.spec.devices[1];
  CHECK(ccx.node_allocatable_resources.at("cpu").mapping->device_multiplier == Q("8"));
  // allocationMultiplier defaults to 1.
  CHECK(ccx.node_allocatable_resources.at("memory").mapping->capacity_multiplier == Q("1"));
  CHECK(slice.spec.devices[2].node_allocatable_resources.empty());

  // Written in the current shape, it is what the current schema accepts.
  const json current = ToJson(slice);
  CHECK(current["spec"]["devices"][0]["nodeAllocatableResources"] ==
        json::parse(R"({"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"}},
                        "hugepages-2Mi": {"mapping": {"deviceMultiplier": "1Gi"}}})"));
  CHECK_FALSE(current["spec"]["devices"][0].contains("nodeAllocatableResourceMappings"));
  CHECK(Validator().Validate(current, kSliceSchema) == Errors{});

  SECTION("errors in the legacy map name its path") {
    json document = json::parse(kLegacySlice);
    document["spec"]["devices"][1]["nodeAllocatableResourceMappings"]["cpu"]["allocationMultiplier"] = "eight";
    const absl::StatusOr<ResourceSlice> bad = ResourceSliceFromJson(document);
    REQUIRE_FALSE(bad.ok());
    CHECK_THAT(std::string(bad.status().message()),
               Catch::StartsWith("spec.devices[1].nodeAllocatableResourceMappings[cpu].allocationMultiplier: Invalid "
                                 "value: \"eight\": "));
    document["spec"]["devices"][1]["nodeAllocatableResourceMappings"] = json::array();
    const absl::StatusOr<ResourceSlice> not_a_map = ResourceSliceFromJson(document);
    REQUIRE_FALSE(not_a_map.ok());
    CHECK(not_a_map.status().message() ==
          "spec.devices[1].nodeAllocatableResourceMappings: Invalid type: expected object, got array");
  }

  SECTION("with both keys the current one wins and the legacy one is kept as unknown") {
    json document = json::parse(kSlice);
    json& gpu = document["spec"]["devices"][0];
    gpu["nodeAllocatableResourceMappings"] = {{"memory", {{"allocationMultiplier", "2Gi"}}}};
    const ResourceSlice both = MustDecode(document);
    CHECK(both.spec.devices[0].node_allocatable_resources ==
          MustDecode(json::parse(kSlice)).spec.devices[0].node_allocatable_resources);
    CHECK(both.spec.devices[0].unknown_fields ==
          json{{"nodeAllocatableResourceMappings", {{"memory", {{"allocationMultiplier", "2Gi"}}}}}});
    CHECK(ToJson(both) == document);
  }
}

TEST_CASE("kLegacyMappings writes the shape older servers know") {
  const ResourceSlice slice = MustDecode(json::parse(kLegacySlice));
  EncodeOptions options;
  options.node_allocatable_shape = NodeAllocatableShape::kLegacyMappings;
  const json legacy = Must(ToJson(slice, options));

  json expected = json::parse(kLegacySlice);
  // Decoding made the default multiplier explicit.
  expected["spec"]["devices"][1]["nodeAllocatableResourceMappings"]["memory"]["allocationMultiplier"] = "1";
  CHECK(legacy == expected);
  CHECK(MustDecode(legacy) == slice);

  // The 1.37 schema no longer has the field: this documents the version skew.
  CHECK(Validator().Validate(legacy, kSliceSchema) ==
        Errors{"spec.devices[0].nodeAllocatableResourceMappings: unknown field",
               "spec.devices[1].nodeAllocatableResourceMappings: unknown field"});

  SECTION("a slice without node allocatable resources is the same in both shapes") {
    const ResourceSlice counters = MustDecode(json::parse(kCounterSlice));
    CHECK(Must(ToJson(counters, options)) == ToJson(counters));
  }
}

TEST_CASE("kLegacyMappings refuses what the legacy shape cannot express") {
  EncodeOptions options;
  options.node_allocatable_shape = NodeAllocatableShape::kLegacyMappings;
  const auto message_for = [&](const ResourceSlice& slice) {
    const absl::StatusOr<json> encoded = ToJson(slice, options);
    REQUIRE_FALSE(encoded.ok());
    CHECK(encoded.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(encoded.status().message());
  };
  constexpr char kSuffix[] =
      ": cannot be expressed as nodeAllocatableResourceMappings (Kubernetes 1.36, 1.37.0-beta.0)";

  const ResourceSlice full = MustDecode(json::parse(kSlice));
  CHECK(message_for(full) ==
        absl::StrCat("spec.devices[0] (device \"gpu-0\"): nodeAllocatableResources[memory].overhead", kSuffix));

  ResourceSlice slice = MustDecode(json::parse(kLegacySlice));
  NodeAllocatableResource& memory = slice.spec.devices[1].node_allocatable_resources.at("memory");

  SECTION("overhead next to a mapping") {
    memory.overhead.emplace().per_container = Q("1Mi");
    CHECK(message_for(slice) ==
          absl::StrCat("spec.devices[1] (device \"ccx-0\"): nodeAllocatableResources[memory].overhead", kSuffix));
  }
  SECTION("deviceMultiplier together with capacityKey") {
    memory.mapping->device_multiplier = Q("2");
    CHECK(message_for(slice) ==
          absl::StrCat("spec.devices[1] (device \"ccx-0\"): nodeAllocatableResources[memory].mapping.deviceMultiplier "
                       "together with capacityKey",
                       kSuffix));
  }
  SECTION("capacityMultiplier without capacityKey") {
    memory.mapping->capacity_key.reset();
    CHECK(message_for(slice) ==
          absl::StrCat("spec.devices[1] (device \"ccx-0\"): nodeAllocatableResources[memory].mapping."
                       "capacityMultiplier without capacityKey",
                       kSuffix));
  }
  SECTION("an empty mapping") {
    memory.mapping = NodeAllocatableMapping{};
    CHECK_THAT(message_for(slice), Catch::StartsWith("spec.devices[1] (device \"ccx-0\"): "
                                                     "nodeAllocatableResources[memory].mapping without capacityKey"));
  }
  SECTION("no mapping") {
    memory.mapping.reset();
    CHECK(
        message_for(slice) ==
        absl::StrCat("spec.devices[1] (device \"ccx-0\"): nodeAllocatableResources[memory] without mapping", kSuffix));
  }
  SECTION("fields of a newer server") {
    memory.unknown_fields = {{"scaling", "Linear"}};
    CHECK(message_for(slice) ==
          absl::StrCat("spec.devices[1] (device \"ccx-0\"): nodeAllocatableResources[memory].scaling", kSuffix));
  }
}

constexpr char kDeviceClass[] = R"json({
  "apiVersion": "resource.k8s.io/v1",
  "kind": "DeviceClass",
  "metadata": {"name": "gpu.example.com", "uid": "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f", "generation": 1,
               "creationTimestamp": "2026-03-01T08:00:00Z"},
  "spec": {
    "selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}},
                  {"cel": {"expression": "device.attributes[\"gpu.example.com\"].profile == \"Full\""}}],
    "config": [{"opaque": {"driver": "gpu.example.com",
                           "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig",
                                          "sharing": {"strategy": "TimeSlicing"}}}}],
    "extendedResourceName": "example.com/gpu"
  }
})json";

TEST_CASE("DeviceClass decodes, round-trips and validates") {
  const json original = json::parse(kDeviceClass);
  const DeviceClass device_class = Must(ParseDeviceClass(kDeviceClass));
  CHECK(device_class.metadata.name == "gpu.example.com");
  REQUIRE(device_class.spec.selectors.size() == 2);
  CHECK(device_class.spec.selectors[0].cel->expression == "device.driver == \"gpu.example.com\"");
  REQUIRE(device_class.spec.config.size() == 1);
  CHECK(device_class.spec.config[0].opaque->driver == "gpu.example.com");
  CHECK(device_class.spec.config[0].opaque->parameters["sharing"]["strategy"] == "TimeSlicing");
  CHECK(device_class.spec.extended_resource_name == "example.com/gpu");
  CHECK(ToJson(device_class) == original);
  CHECK(Validator().Validate(original, kDeviceClassSchema) == Errors{});

  json with_unknown = original;
  with_unknown["spec"]["futureClassField"] = {{"x", 1}};
  with_unknown["spec"]["config"][0]["futureConfigForm"] = true;
  const DeviceClass kept = Must(DeviceClassFromJson(with_unknown));
  CHECK(kept.spec.unknown_fields == json{{"futureClassField", {{"x", 1}}}});
  CHECK(ToJson(kept) == with_unknown);

  DeviceClass minimal;
  minimal.metadata.name = "any";
  const json encoded = ToJson(minimal);
  CHECK(encoded == json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                   "metadata": {"name": "any"}, "spec": {}})"));
  CHECK(Validator().Validate(encoded, kDeviceClassSchema) == Errors{});

  json bad = original;
  bad["spec"]["selectors"][1]["cel"]["expression"] = 3;
  const absl::StatusOr<DeviceClass> error = DeviceClassFromJson(bad);
  REQUIRE_FALSE(error.ok());
  CHECK(error.status().message() == "spec.selectors[1].cel.expression: Invalid type: expected string, got number");
}

constexpr char kNode[] = R"json({
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "name": "node-a",
    "uid": "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d",
    "resourceVersion": "7731",
    "creationTimestamp": "2026-02-28T12:00:00Z",
    "labels": {"kubernetes.io/hostname": "node-a", "topology.example.com/rack": "r1"},
    "annotations": {"node.alpha.kubernetes.io/ttl": "0"}
  },
  "spec": {"podCIDR": "10.244.1.0/24", "providerID": "kind://docker/kind/node-a"},
  "status": {"allocatable": {"cpu": "8", "memory": "32Gi"},
             "conditions": [{"type": "Ready", "status": "True"}]}
})json";

TEST_CASE("Node keeps its metadata typed and the rest as it was") {
  const json original = json::parse(kNode);
  const Node node = Must(ParseNode(kNode));
  CHECK(node.metadata.name == "node-a");
  CHECK(node.metadata.uid == "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d");
  CHECK(node.metadata.labels.at("topology.example.com/rack") == "r1");
  CHECK(node.unknown_fields["status"]["allocatable"]["memory"] == "32Gi");
  CHECK(node.unknown_fields.size() == 2);  // spec and status
  CHECK(ToJson(node) == original);

  Node built;
  built.metadata.name = "node-b";
  CHECK(ToJson(built) == json::parse(R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-b"}})"));

  json bad = original;
  bad["metadata"]["labels"]["kubernetes.io/hostname"] = false;
  const absl::StatusOr<Node> error = NodeFromJson(bad);
  REQUIRE_FALSE(error.ok());
  CHECK(error.status().message() ==
        "metadata.labels[kubernetes.io/hostname]: Invalid type: expected string, got boolean");
  const absl::StatusOr<Node> wrong_kind = NodeFromJson(json{{"kind", "Pod"}});
  REQUIRE_FALSE(wrong_kind.ok());
  CHECK(wrong_kind.status().message() == "kind: Unsupported value: \"Pod\": supported values: \"Node\"");
}

// As the API server answers an update with a stale resourceVersion.
constexpr char kConflict[] = R"json({
  "kind": "Status",
  "apiVersion": "v1",
  "metadata": {},
  "status": "Failure",
  "message": "Operation cannot be fulfilled on resourceslices.resource.k8s.io \"node-a-gpu\": the object has been modified; please apply your changes to the latest version and try again",
  "reason": "Conflict",
  "details": {"name": "node-a-gpu", "group": "resource.k8s.io", "kind": "resourceslices"},
  "code": 409
})json";

constexpr char kInvalid[] = R"json({
  "kind": "Status",
  "apiVersion": "v1",
  "metadata": {},
  "status": "Failure",
  "message": "ResourceSlice.resource.k8s.io \"node-a-gpu\" is invalid: spec.devices[0].name: Invalid value: \"GPU_0\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
  "reason": "Invalid",
  "details": {
    "name": "node-a-gpu",
    "group": "resource.k8s.io",
    "kind": "ResourceSlice",
    "uid": "3e1f0c2a-9b8d-4c7e-a6f5-1d2c3b4a5968",
    "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value: \"GPU_0\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'", "field": "spec.devices[0].name"}],
    "retryAfterSeconds": 1
  },
  "code": 422
})json";

TEST_CASE("Status decodes, round-trips and validates") {
  const Status conflict = Must(ParseStatus(kConflict));
  CHECK(conflict.status == "Failure");
  CHECK(conflict.reason == "Conflict");
  CHECK(conflict.code == 409);
  REQUIRE(conflict.details.has_value());
  CHECK(conflict.details->kind == "resourceslices");
  CHECK(conflict.details->causes.empty());
  CHECK(conflict.unknown_fields == json{{"metadata", json::object()}});
  CHECK(ToJson(conflict) == json::parse(kConflict));

  const Status invalid = Must(ParseStatus(kInvalid));
  CHECK(invalid.code == 422);
  CHECK(invalid.details->uid == "3e1f0c2a-9b8d-4c7e-a6f5-1d2c3b4a5968");
  CHECK(invalid.details->retry_after_seconds == 1);
  REQUIRE(invalid.details->causes.size() == 1);
  CHECK(invalid.details->causes[0].reason == "FieldValueInvalid");
  CHECK(invalid.details->causes[0].field == "spec.devices[0].name");
  CHECK(ToJson(invalid) == json::parse(kInvalid));

  for (const char* text : {kConflict, kInvalid}) {
    CHECK(Validator().Validate(ToJson(Must(ParseStatus(text))), kStatusSchema) == Errors{});
  }

  Status built;
  built.status = "Success";
  built.code = 200;
  CHECK(ToJson(built) == json::parse(R"({"apiVersion": "v1", "kind": "Status", "status": "Success", "code": 200})"));

  json bad = json::parse(kInvalid);
  bad["code"] = 4294967296;
  const absl::StatusOr<Status> too_big = StatusFromJson(bad);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().message() == "code: Invalid value: 4294967296: must fit in a 32-bit signed integer");
  bad = json::parse(kInvalid);
  bad["details"]["causes"][0]["field"] = json::array();
  const absl::StatusOr<Status> wrong = StatusFromJson(bad);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message() == "details.causes[0].field: Invalid type: expected string, got array");
}

TEST_CASE("NodeSelector has its own codec") {
  // E.g. for ResourceClaim.status.allocation.nodeSelector, kept there as JSON.
  const json selector_json = json::parse(R"({"nodeSelectorTerms": [
      {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]},
      {"matchExpressions": [{"key": "gpu.example.com/present", "operator": "Exists"}], "futureTermField": 1}]})");
  const NodeSelector selector = Must(NodeSelectorFromJson(selector_json));
  REQUIRE(selector.node_selector_terms.size() == 2);
  CHECK(selector.node_selector_terms[0].match_fields[0].values == std::vector<std::string>{"node-a"});
  CHECK(selector.node_selector_terms[1].match_expressions[0].operator_ == "Exists");
  CHECK(ToJson(selector) == selector_json);

  const absl::StatusOr<NodeSelector> bad = NodeSelectorFromJson(json{{"nodeSelectorTerms", {{{"matchFields", 1}}}}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "nodeSelectorTerms[0].matchFields: Invalid type: expected array, got number");
}

}  // namespace
}  // namespace dra::k8s
