// Client-side validation of ResourceSlice and AllocatedDeviceStatus: a valid
// object passes, and every rule fails with the API server's exact text. The
// expected strings are taken from k8s.io/kubernetes
// pkg/apis/resource/validation (validation.go and its tests) and
// k8s.io/apimachinery's field.Error.
#include "dra/k8s/validation.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "dra/k8s/field_error.h"
#include "dra/k8s/names.h"

namespace dra::k8s {
namespace {

using Strings = std::vector<std::string>;

constexpr char kSubdomainMsg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr char kLabelMsg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kLabelValueMsg[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
constexpr char kNamePartMsg[] =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr char kCIdentifierMsg[] =
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')";
constexpr char kReasonMsg[] =
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
    "'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
    "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";
constexpr char kNodeSelection[] =
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
constexpr char kDeviceNodeSelection[] =
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to "
    "true in the ResourceSlice spec";

Quantity Q(std::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  REQUIRE(q.ok());
  return *q;
}

std::string S(std::string_view s) { return std::string(s); }

Strings ToStrings(const FieldErrors& errors) {
  Strings out;
  for (const FieldError& e : errors) out.push_back(e.ToString());
  return out;
}

DeviceAttribute StringAttr(std::string v) {
  DeviceAttribute a;
  a.string_value = std::move(v);
  return a;
}
DeviceAttribute IntAttr(int64_t v) {
  DeviceAttribute a;
  a.int_value = v;
  return a;
}

DeviceTaint Taint(std::string key, std::string effect) {
  DeviceTaint t;
  t.key = std::move(key);
  t.effect = std::move(effect);
  return t;
}

// A device that uses no "advanced" feature.
Device PlainDevice(std::string name) {
  Device d;
  d.name = std::move(name);
  d.attributes["model"] = StringAttr("A100");
  DeviceCapacity memory;
  memory.value = Q("40Gi");
  d.capacity["memory"] = memory;
  return d;
}

// A slice that uses every field this library models, all valid.
ResourceSlice ValidSlice() {
  ResourceSlice s;
  s.metadata.name = "node-1-gpu.example.com-7xk2p";
  s.metadata.labels["app.kubernetes.io/managed-by"] = "dra-cpp";
  s.metadata.annotations["example.com/note"] = "anything goes here";
  s.spec.driver = "gpu.example.com";
  s.spec.pool.name = "node-1";
  s.spec.pool.generation = 1;
  s.spec.pool.resource_slice_count = 1;
  s.spec.node_name = "node-1";
  s.spec.partition_type_attribute = "gpu.example.com/profile";
  s.spec.skip_node_operations = {"NodePrepareResources", "NodeUnprepareResources"};

  Device gpu0 = PlainDevice("gpu-0");
  DeviceAttribute version;
  version.version_value = "580.65.6-rc.1+build.7";
  gpu0.attributes["dra.example.com/driverVersion"] = version;
  gpu0.attributes["index"] = IntAttr(0);
  gpu0.attributes["gpu.example.com/profile"] = StringAttr("Full");
  DeviceAttribute healthy;
  healthy.bool_value = true;
  gpu0.attributes["healthy"] = healthy;
  DeviceAttribute roots;
  roots.string_values = {"pci0000:00", "pci0000:40"};
  gpu0.attributes["resource.kubernetes.io/pcieRoots"] = roots;
  gpu0.taints = {Taint("dra.example.com/unhealthy", "NoSchedule")};
  gpu0.taints[0].value = "ecc-errors";
  gpu0.binding_conditions = {"dra.example.com/attached"};
  gpu0.binding_failure_conditions = {"dra.example.com/attach-failed"};
  gpu0.binds_to_node = true;
  DeviceCounterConsumption consumption;
  consumption.counter_set = "gpu-0-counters";
  Counter memory_counter;
  memory_counter.value = Q("40Gi");
  consumption.counters["memory"] = memory_counter;
  gpu0.consumes_counters = {consumption};
  NodeAllocatableResource overhead;
  overhead.overhead.emplace();
  overhead.overhead->per_pod = Q("1Gi");
  gpu0.node_allocatable_resources["memory"] = overhead;

  Device cpu = PlainDevice("cpu-0");
  cpu.allow_multiple_allocations = true;
  DeviceCapacity cores;
  cores.value = Q("100");
  cores.request_policy.emplace();
  cores.request_policy->default_value = Q("10");
  cores.request_policy->valid_range.emplace();
  cores.request_policy->valid_range->min = Q("10");
  cores.request_policy->valid_range->max = Q("100");
  cores.request_policy->valid_range->step = Q("10");
  cpu.capacity["cores"] = cores;
  DeviceCapacity cache;
  cache.value = Q("64Mi");
  cache.request_policy.emplace();
  cache.request_policy->default_value = Q("8Mi");
  cache.request_policy->valid_values = {Q("4Mi"), Q("8Mi"), Q("64Mi")};
  cpu.capacity["cache"] = cache;
  NodeAllocatableResource cpu_mapping;
  cpu_mapping.mapping.emplace();
  cpu_mapping.mapping->capacity_key = "cores";
  cpu_mapping.mapping->capacity_multiplier = Q("1");
  cpu.node_allocatable_resources["cpu"] = cpu_mapping;
  NodeAllocatableResource hugepages;
  hugepages.mapping.emplace();
  hugepages.mapping->device_multiplier = Q("2Mi");
  cpu.node_allocatable_resources["hugepages-2Mi"] = hugepages;

  s.spec.devices = {gpu0, cpu};
  return s;
}

// A slice that only declares counter sets.
ResourceSlice CounterSlice() {
  ResourceSlice s;
  s.metadata.generate_name = "node-1-gpu.example.com-";
  s.spec.driver = "gpu.example.com";
  s.spec.pool.name = "node-1";
  s.spec.pool.resource_slice_count = 2;
  s.spec.node_name = "node-1";
  CounterSet set;
  set.name = "gpu-0-counters";
  Counter c;
  c.value = Q("40Gi");
  set.counters["memory"] = c;
  set.counters["multiprocessors"] = c;
  s.spec.shared_counters = {set};
  return s;
}

ResourceSlice PlainSlice(size_t devices) {
  ResourceSlice s = ValidSlice();
  s.spec.partition_type_attribute.reset();
  s.spec.devices.clear();
  for (size_t i = 0; i < devices; ++i) s.spec.devices.push_back(PlainDevice("dev-" + std::to_string(i)));
  return s;
}

AllocatedDeviceStatus ValidStatus() {
  AllocatedDeviceStatus st;
  st.driver = "gpu.example.com";
  st.pool = "node-1";
  st.device = "gpu-0";
  st.share_id = "3e1f0c2a-9b8d-4c7e-a6f5-1d2c3b4a5968";
  Condition ready;
  ready.type = "Ready";
  ready.status = "True";
  ready.observed_generation = 1;
  ready.last_transition_time = "2026-03-01T09:00:00Z";
  ready.reason = "DeviceConfigured";
  ready.message = "configured";
  Condition attached = ready;
  attached.type = "dra.example.com/attached";
  attached.reason = "Attached,Checked:OK";
  st.conditions = {ready, attached};
  st.data = nlohmann::json{{"vendor", {{"slot", 3}}}};
  st.network_data.emplace();
  st.network_data->interface_name = "net1";
  st.network_data->hardware_address = "ea:9f:9d:4e:24:5c";
  st.network_data->ips = {"10.9.8.7/24", "2001:db8::5/64", "192.0.2.5/32"};
  return st;
}

struct SliceCase {
  std::string name;
  std::function<void(ResourceSlice&)> mutate;
  Strings want;
  std::function<ResourceSlice()> base = ValidSlice;
};

void RunCases(const std::vector<SliceCase>& cases) {
  for (const SliceCase& c : cases) {
    ResourceSlice slice = c.base();
    c.mutate(slice);
    INFO(c.name);
    CHECK(ToStrings(ValidateResourceSlice(slice)) == c.want);
  }
}

Device& Dev0(ResourceSlice& s) { return s.spec.devices[0]; }
Device& Dev1(ResourceSlice& s) { return s.spec.devices[1]; }
CapacityRequestPolicy& Cores(ResourceSlice& s) { return *Dev1(s).capacity["cores"].request_policy; }
CapacityRequestPolicy& Cache(ResourceSlice& s) { return *Dev1(s).capacity["cache"].request_policy; }

TEST_CASE("Valid slices pass") {
  CHECK(ToStrings(ValidateResourceSlice(ValidSlice())).empty());
  CHECK(ToStrings(ValidateResourceSlice(CounterSlice())).empty());
  CHECK(ToStrings(ValidateResourceSlice(PlainSlice(kResourceSliceMaxDevices))).empty());
  ResourceSlice tainted = PlainSlice(kResourceSliceMaxDevicesWithAdvancedFeatures);
  for (Device& d : tainted.spec.devices) d.taints = {Taint("example.com/taint", "NoExecute")};
  CHECK(ToStrings(ValidateResourceSlice(tainted)).empty());
  ResourceSlice all_nodes = ValidSlice();
  all_nodes.spec.node_name.reset();
  all_nodes.spec.all_nodes = true;
  CHECK(ToStrings(ValidateResourceSlice(all_nodes)).empty());
  ResourceSlice selector = ValidSlice();
  selector.spec.node_name.reset();
  selector.spec.node_selector.emplace();
  NodeSelectorTerm term;
  NodeSelectorRequirement zone;
  zone.key = "topology.kubernetes.io/zone";
  zone.operator_ = "In";
  zone.values = {"zone-a"};
  term.match_expressions = {zone};
  NodeSelectorRequirement name;
  name.key = "metadata.name";
  name.operator_ = "In";
  name.values = {"node-1"};
  term.match_fields = {name};
  selector.spec.node_selector->node_selector_terms = {term};
  CHECK(ToStrings(ValidateResourceSlice(selector)).empty());
  ResourceSlice per_device = ValidSlice();
  per_device.spec.node_name.reset();
  per_device.spec.per_device_node_selection = true;
  Dev0(per_device).node_name = "node-1";
  Dev1(per_device).all_nodes = true;
  CHECK(ToStrings(ValidateResourceSlice(per_device)).empty());
}

TEST_CASE("Metadata rules") {
  RunCases({
      {"missing name",
       [](ResourceSlice& s) { s.metadata.name.clear(); },
       {"metadata.name: Required value: name or generateName is required"}},
      {"generateName instead of name",
       [](ResourceSlice& s) {
         s.metadata.name.clear();
         s.metadata.generate_name = "node-1-gpu.example.com-";
       },
       {}},
      {"bad name",
       [](ResourceSlice& s) { s.metadata.name = "Node_1"; },
       {S("metadata.name: Invalid value: \"Node_1\": ") + kSubdomainMsg}},
      {"name too long",
       [](ResourceSlice& s) { s.metadata.name = std::string(254, 'a'); },
       {"metadata.name: Invalid value: \"" + std::string(254, 'a') + "\": must be no more than 253 characters"}},
      {"bad generateName",
       [](ResourceSlice& s) {
         s.metadata.name.clear();
         s.metadata.generate_name = "Node-";
       },
       {S("metadata.generateName: Invalid value: \"Node-\": ") + kSubdomainMsg}},
      {"namespace",
       [](ResourceSlice& s) { s.metadata.namespace_ = "default"; },
       {"metadata.namespace: Forbidden: not allowed on this type"}},
      {"bad label value",
       [](ResourceSlice& s) { s.metadata.labels["app"] = "spaces not allowed"; },
       {S("metadata.labels: Invalid value: \"spaces not allowed\": ") + kLabelValueMsg}},
      {"bad label key",
       [](ResourceSlice& s) { s.metadata.labels["!@#$%^"] = "x"; },
       {S("metadata.labels: Invalid value: \"!@#$%^\": ") + kNamePartMsg}},
      {"bad annotation key",
       [](ResourceSlice& s) { s.metadata.annotations["!@#$%^"] = "hello world"; },
       {S("metadata.annotations: Invalid value: \"!@#$%^\": ") + kNamePartMsg}},
      {"annotations too large",
       [](ResourceSlice& s) { s.metadata.annotations["big"] = std::string(256 * 1024, 'x'); },
       {"metadata.annotations: Too long: may not be more than 262144 bytes"}},
  });
}

TEST_CASE("Driver, pool and node selection rules") {
  RunCases({
      {"missing driver", [](ResourceSlice& s) { s.spec.driver.clear(); }, {"spec.driver: Required value"}},
      {"bad driver",
       [](ResourceSlice& s) { s.spec.driver = "gpu_example.com"; },
       {S("spec.driver: Invalid value: \"gpu_example.com\": ") + kSubdomainMsg}},
      {"upper-case driver is accepted", [](ResourceSlice& s) { s.spec.driver = "GPU.example.com"; }, {}},
      {"driver too long",
       [](ResourceSlice& s) { s.spec.driver = std::string(60, 'a') + ".com"; },
       {"spec.driver: Too long: may not be more than 63 bytes"}},
      {"missing pool name", [](ResourceSlice& s) { s.spec.pool.name.clear(); }, {"spec.pool.name: Required value"}},
      {"pool name too long",
       [](ResourceSlice& s) {
         s.spec.pool.name.clear();
         for (int i = 0; i < 126; ++i) s.spec.pool.name += "x/";
         s.spec.pool.name += "xy";
       },
       {"spec.pool.name: Too long: may not be more than 253 bytes"}},
      {"bad pool name part",
       [](ResourceSlice& s) { s.spec.pool.name = "rack-1/Node-1"; },
       {S("spec.pool.name: Invalid value: \"Node-1\": ") + kSubdomainMsg}},
      {"pool counts",
       [](ResourceSlice& s) {
         s.spec.pool.resource_slice_count = 0;
         s.spec.pool.generation = -1;
       },
       {"spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"}},
      {"bad node name",
       [](ResourceSlice& s) { s.spec.node_name = "Node 1"; },
       {S("spec.nodeName: Invalid value: \"Node 1\": ") + kSubdomainMsg}},
      {"empty node name",
       [](ResourceSlice& s) {
         s.spec.node_name = "";
         s.spec.all_nodes = true;
       },
       {"spec.nodeName: Invalid value: \"\": must be either unset or set to a non-empty string"}},
      {"no node selection",
       [](ResourceSlice& s) { s.spec.node_name.reset(); },
       {S("spec: Required value: ") + kNodeSelection}},
      {"nodeName and allNodes",
       [](ResourceSlice& s) { s.spec.all_nodes = true; },
       {S("spec: Invalid value: \"{`nodeName`, `allNodes`}\": ") + kNodeSelection + ", but multiple fields are set"}},
      {"allNodes false",
       [](ResourceSlice& s) { s.spec.all_nodes = false; },
       {"spec.allNodes: Invalid value: false: must be either unset or set to true"}},
      {"perDeviceNodeSelection false",
       [](ResourceSlice& s) { s.spec.per_device_node_selection = false; },
       {"spec.perDeviceNodeSelection: Invalid value: false: must be either unset or set to true"}},
      {"empty node selector",
       [](ResourceSlice& s) {
         s.spec.node_name.reset();
         s.spec.node_selector.emplace();
       },
       {"spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term",
        "spec.nodeSelector.nodeSelectorTerms: Invalid value: []core.NodeSelectorTerm(nil): must have exactly one node "
        "selector term"}},
      {"two node selector terms",
       [](ResourceSlice& s) {
         s.spec.node_name.reset();
         s.spec.node_selector.emplace();
         NodeSelectorRequirement r;
         r.key = "zone";
         r.operator_ = "Exists";
         NodeSelectorTerm t;
         t.match_expressions = {r};
         s.spec.node_selector->node_selector_terms = {t, NodeSelectorTerm{}};
       },
       {"spec.nodeSelector.nodeSelectorTerms: Invalid value: []core.NodeSelectorTerm{core.NodeSelectorTerm{"
        "MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"zone\", "
        "Operator:\"Exists\", Values:[]string(nil)}}, MatchFields:[]core.NodeSelectorRequirement(nil)}, "
        "core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement(nil), "
        "MatchFields:[]core.NodeSelectorRequirement(nil)}}: must have exactly one node selector term"}},
      {"bad node selector requirements",
       [](ResourceSlice& s) {
         s.spec.node_name.reset();
         s.spec.node_selector.emplace();
         NodeSelectorRequirement bad_value;
         bad_value.key = "foo";
         bad_value.operator_ = "In";
         bad_value.values = {"-1"};
         NodeSelectorRequirement bad_op;
         bad_op.key = "foo";
         bad_op.operator_ = "Near";
         NodeSelectorRequirement no_values;
         no_values.key = "foo";
         no_values.operator_ = "NotIn";
         NodeSelectorRequirement exists_values;
         exists_values.key = "foo";
         exists_values.operator_ = "Exists";
         exists_values.values = {"x"};
         NodeSelectorRequirement gt;
         gt.key = "foo";
         gt.operator_ = "Gt";
         NodeSelectorRequirement field;
         field.key = "metadata.uid";
         field.operator_ = "Exists";
         NodeSelectorTerm t;
         t.match_expressions = {bad_value, bad_op, no_values, exists_values, gt};
         t.match_fields = {field};
         s.spec.node_selector->node_selector_terms = {t};
       },
       {S("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"-1\": ") +
            kLabelValueMsg,
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[1].operator: Invalid value: \"Near\": not a valid "
        "selector operator",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[2].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[3].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'",
        "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[4].values: Required value: must be specified single "
        "value when `operator` is 'Lt' or 'Gt'",
        "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].operator: Invalid value: \"Exists\": not a valid "
        "selector operator",
        "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"metadata.uid\": not a valid "
        "field selector key"}},
      {"sharedCounters and devices",
       [](ResourceSlice& s) { s.spec.shared_counters = CounterSlice().spec.shared_counters; },
       {"spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"}},
  });
}

TEST_CASE("Device count limits") {
  auto plain = [] { return PlainSlice(kResourceSliceMaxDevices + 1); };
  auto advanced = [] { return PlainSlice(kResourceSliceMaxDevicesWithAdvancedFeatures + 1); };
  RunCases({
      {"129 devices", [](ResourceSlice&) {}, {"spec.devices: Too many: 129: must have at most 128 items"}, plain},
      {"65 devices, one with a taint",
       [](ResourceSlice& s) { Dev0(s).taints = {Taint("example.com/t", "None")}; },
       {"spec.devices: Too many: 65: must have at most 64 items"},
       advanced},
      {"65 devices, one consuming counters",
       [](ResourceSlice& s) { Dev0(s).consumes_counters = ValidSlice().spec.devices[0].consumes_counters; },
       {"spec.devices: Too many: 65: must have at most 64 items"},
       advanced},
      {"65 devices, one with a list attribute",
       [](ResourceSlice& s) {
         DeviceAttribute ints;
         ints.int_values = {1, 2, 3};
         Dev0(s).attributes["ints"] = ints;
       },
       {"spec.devices: Too many: 65: must have at most 64 items"},
       advanced},
      {"65 plain devices are fine", [](ResourceSlice&) {}, {}, advanced},
      {"duplicate device names",
       [](ResourceSlice& s) { Dev1(s).name = "gpu-0"; },
       {"spec.devices[1]: Duplicate value: \"gpu-0\""}},
  });
}

TEST_CASE("Device name, attribute and capacity rules") {
  RunCases({
      {"bad device name",
       [](ResourceSlice& s) { Dev0(s).name = "GPU_0"; },
       {S("spec.devices[0].name: Invalid value: \"GPU_0\": ") + kLabelMsg}},
      {"device name with dots",
       [](ResourceSlice& s) { Dev0(s).name = "gpu.0"; },
       {"spec.devices[0].name: Invalid value: \"gpu.0\": must not contain dots"}},
      {"33 attributes and capacities",
       [](ResourceSlice& s) {
         for (int i = 0; i < 26; ++i) Dev0(s).attributes["attr_" + std::to_string(i)] = IntAttr(i);
       },
       {"spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"}},
      {"49 attribute values",
       [](ResourceSlice& s) {
         DeviceAttribute many;
         many.int_values.assign(42, 7);
         Dev0(s).attributes["numaNodes"] = many;
       },
       {"spec.devices[0]: Invalid value: 49: the total number of attribute values must not exceed 48"}},
      {"string too long",
       [](ResourceSlice& s) { Dev0(s).attributes["model"] = StringAttr(std::string(65, 'x')); },
       {"spec.devices[0].attributes[model].string: Too long: may not be more than 64 bytes"}},
      {"string of 64 bytes",
       [](ResourceSlice& s) { Dev0(s).attributes["model"] = StringAttr(std::string(64, 'x')); },
       {}},
      {"version not semver",
       [](ResourceSlice& s) { Dev0(s).attributes["dra.example.com/driverVersion"].version_value = "1.2"; },
       {"spec.devices[0].attributes[dra.example.com/driverVersion].version: Invalid value: \"1.2\": must be a string "
        "compatible with semver.org spec 2.0.0, with at most 18 digits in numbers"}},
      {"version with leading zero",
       [](ResourceSlice& s) { Dev0(s).attributes["dra.example.com/driverVersion"].version_value = "1.02.3"; },
       {"spec.devices[0].attributes[dra.example.com/driverVersion].version: Invalid value: \"1.02.3\": must be a "
        "string compatible with semver.org spec 2.0.0, with at most 18 digits in numbers"}},
      {"version number of 19 digits",
       [](ResourceSlice& s) {
         Dev0(s).attributes["dra.example.com/driverVersion"].version_value = "1.1234567890123456789.0";
       },
       {"spec.devices[0].attributes[dra.example.com/driverVersion].version: Invalid value: "
        "\"1.1234567890123456789.0\": must be a string compatible with semver.org spec 2.0.0, with at most 18 digits "
        "in numbers"}},
      {"version pre-release number of 19 digits",
       [](ResourceSlice& s) {
         Dev0(s).attributes["dra.example.com/driverVersion"].version_value = "1.0.0-rc.1234567890123456789";
       },
       {"spec.devices[0].attributes[dra.example.com/driverVersion].version: Invalid value: "
        "\"1.0.0-rc.1234567890123456789\": must be a string compatible with semver.org spec 2.0.0, with at most 18 "
        "digits in numbers"}},
      {"version numbers of 18 digits and a long alphanumeric pre-release",
       [](ResourceSlice& s) {
         Dev0(s).attributes["dra.example.com/driverVersion"].version_value =
             "123456789012345678.0.1-a1234567890123456789";
       },
       {}},
      {"version too long",
       [](ResourceSlice& s) {
         Dev0(s).attributes["dra.example.com/driverVersion"].version_value = "1.2.3-" + std::string(59, 'a');
       },
       {"spec.devices[0].attributes[dra.example.com/driverVersion].version: Too long: may not be more than 64 "
        "bytes"}},
      {"list string too long",
       [](ResourceSlice& s) {
         Dev0(s).attributes["resource.kubernetes.io/pcieRoots"].string_values[1] = std::string(65, 'x');
       },
       {"spec.devices[0].attributes[resource.kubernetes.io/pcieRoots].strings[1]: Too long: may not be more than 64 "
        "bytes"}},
      {"list version not semver",
       [](ResourceSlice& s) {
         DeviceAttribute versions;
         versions.version_values = {"1.0.0", "v2"};
         Dev0(s).attributes["fw"] = versions;
       },
       {"spec.devices[0].attributes[fw].versions[1]: Invalid value: \"v2\": must be a string compatible with "
        "semver.org spec 2.0.0, with at most 18 digits in numbers"}},
      {"attribute without value",
       [](ResourceSlice& s) { Dev0(s).attributes["empty"] = DeviceAttribute{}; },
       {"spec.devices[0].attributes[empty]: Invalid value: \"\": exactly one value must be specified"}},
      {"attribute with two values",
       [](ResourceSlice& s) {
         DeviceAttribute two = IntAttr(1);
         two.string_value = "x";
         Dev0(s).attributes["two"] = two;
       },
       {"spec.devices[0].attributes[two]: Invalid value: {\"int\":1,\"string\":\"x\"}: exactly one value must be "
        "specified"}},
      {"attribute name not a C identifier",
       [](ResourceSlice& s) { Dev0(s).attributes["1st"] = IntAttr(1); },
       {S("spec.devices[0].attributes: Invalid value: \"1st\": ") + kCIdentifierMsg}},
      {"attribute name too long",
       [](ResourceSlice& s) { Dev0(s).attributes["example.com/" + std::string(33, 'x')] = IntAttr(1); },
       {"spec.devices[0].attributes: Too long: may not be more than 32 bytes"}},
      {"attribute domain too long",
       [](ResourceSlice& s) { Dev0(s).attributes[std::string(64, '_') + "/y"] = IntAttr(1); },
       {"spec.devices[0].attributes: Too long: may not be more than 63 bytes",
        "spec.devices[0].attributes: Invalid value: \"" + std::string(64, '_') + "\": " + kSubdomainMsg}},
      {"attribute domain and name empty",
       [](ResourceSlice& s) { Dev0(s).attributes["/"] = IntAttr(1); },
       {"spec.devices[0].attributes: Invalid value: \"\": the domain must not be empty",
        "spec.devices[0].attributes: Invalid value: \"\": the name must not be empty"}},
      {"attribute name with two slashes",
       [](ResourceSlice& s) { Dev0(s).attributes["a/b/c"] = IntAttr(1); },
       {"spec.devices[0].attributes: Invalid value: \"a/b/c\": must not contain more than one slash"}},
      {"capacity name not a C identifier",
       [](ResourceSlice& s) { Dev0(s).capacity["mem-ory"] = Dev0(s).capacity["memory"]; },
       {S("spec.devices[0].capacity: Invalid value: \"mem-ory\": ") + kCIdentifierMsg}},
      {"long attribute key is truncated in the path",
       [](ResourceSlice& s) {
         Dev0(s).attributes[std::string(63, 'd') + "/" + std::string(33, 'i')] = DeviceAttribute{};
       },
       {"spec.devices[0].attributes: Too long: may not be more than 32 bytes",
        "spec.devices[0].attributes[" + std::string(47, 'd') + "..." + std::string(12, 'd') + "/" +
            std::string(33, 'i') + "]: Invalid value: \"\": exactly one value must be specified"}},
  });
}

TEST_CASE("Request policy rules") {
  RunCases({
      {"requestPolicy without allowMultipleAllocations",
       [](ResourceSlice& s) { Dev1(s).allow_multiple_allocations.reset(); },
       {"spec.devices[1].capacity[cache].requestPolicy: Forbidden: allowMultipleAllocations must be true",
        "spec.devices[1].capacity[cores].requestPolicy: Forbidden: allowMultipleAllocations must be true"}},
      {"validValues and validRange",
       [](ResourceSlice& s) { Cores(s).valid_values = {Q("10")}; },
       {"spec.devices[1].capacity[cores].requestPolicy: Forbidden: exactly one policy can be specified, cannot "
        "specify \"validValues\" and \"validRange\" at the same time"}},
      {"validValues without default",
       [](ResourceSlice& s) { Cache(s).default_value.reset(); },
       {"spec.devices[1].capacity[cache].requestPolicy.default: Required value: required when validValues is "
        "defined"}},
      {"validValues not sorted",
       [](ResourceSlice& s) {
         Cache(s).valid_values = {Q("8Mi"), Q("4Mi")};
       },
       {"spec.devices[1].capacity[cache].requestPolicy.validValues[1]: Invalid value: \"4Mi\": values must be "
        "sorted in ascending order"}},
      {"validValues larger than capacity",
       [](ResourceSlice& s) {
         Cache(s).valid_values = {Q("8Mi"), Q("128Mi")};
       },
       {"spec.devices[1].capacity[cache].requestPolicy.validValues[1]: Invalid value: \"128Mi\": option is larger "
        "than capacity value: 64Mi"}},
      {"default not a valid value",
       [](ResourceSlice& s) { Cache(s).default_value = Q("5Mi"); },
       {"spec.devices[1].capacity[cache].requestPolicy.validValues: Invalid value: \"5Mi\": default value is not "
        "valid according to the requestPolicy"}},
      {"duplicate validValues",
       [](ResourceSlice& s) {
         Cache(s).valid_values = {Q("8Mi"), Q("8Mi")};
       },
       {"spec.devices[1].capacity[cache].requestPolicy.validValues[1]: Duplicate value: \"8388608\""}},
      {"11 validValues",
       [](ResourceSlice& s) {
         Cache(s).valid_values.clear();
         for (int i = 1; i <= 11; ++i) Cache(s).valid_values.push_back(Q(std::to_string(i) + "Mi"));
       },
       {"spec.devices[1].capacity[cache].requestPolicy.validValues: Too many: 11: must have at most 10 items",
        "spec.devices[1].capacity[cache].requestPolicy.validValues: Invalid value: \"8Mi\": default value is not "
        "valid according to the requestPolicy"}},
      {"validRange without default",
       [](ResourceSlice& s) { Cores(s).default_value.reset(); },
       {"spec.devices[1].capacity[cores].requestPolicy.default: Required value: required when validRange is "
        "defined"}},
      {"step zero",
       [](ResourceSlice& s) { Cores(s).valid_range->step = Q("0"); },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.step: Invalid value: \"0\": must be greater than "
        "zero"}},
      {"negative step",
       [](ResourceSlice& s) { Cores(s).valid_range->step = Q("-1"); },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.step: Invalid value: \"-1\": must be greater than "
        "zero"}},
      {"min larger than max",
       [](ResourceSlice& s) { Cores(s).valid_range->max = Q("5"); },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.max: Invalid value: \"10\": min is larger than "
        "max: 5",
        "spec.devices[1].capacity[cores].requestPolicy.validRange.default: Invalid value: \"10\": default is more "
        "than max: 5",
        "spec.devices[1].capacity[cores].requestPolicy.validRange.step: Invalid value: \"5\": value is not a "
        "multiple of a given step (10) from (10)"}},
      {"max larger than capacity",
       [](ResourceSlice& s) { Cores(s).valid_range->max = Q("200"); },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.max: Invalid value: \"200\": max is larger than "
        "capacity value: 100"}},
      {"min larger than capacity",
       [](ResourceSlice& s) {
         Cores(s).valid_range->min = Q("110");
         Cores(s).valid_range->max.reset();
         Cores(s).valid_range->step.reset();
         Cores(s).default_value = Q("110");
       },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.min: Invalid value: \"110\": min is larger than "
        "capacity value: 100"}},
      {"default below min",
       [](ResourceSlice& s) { Cores(s).default_value = Q("5"); },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.default: Invalid value: \"5\": default is less "
        "than min: 10",
        "spec.devices[1].capacity[cores].requestPolicy.validRange.step: Invalid value: \"5\": value is not a "
        "multiple of a given step (10) from (10)"}},
      {"default off step",
       [](ResourceSlice& s) { Cores(s).default_value = Q("15"); },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.step: Invalid value: \"15\": value is not a "
        "multiple of a given step (10) from (10)"}},
      {"one step beyond capacity",
       [](ResourceSlice& s) { Cores(s).valid_range->step = Q("95"); },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.step: Invalid value: \"95\": one step 105 is "
        "larger than capacity value: 100",
        "spec.devices[1].capacity[cores].requestPolicy.validRange.step: Invalid value: \"100\": value is not a "
        "multiple of a given step (95) from (10)"}},
      {"negative min",
       [](ResourceSlice& s) {
         Cores(s).valid_range->min = Q("-10");
         Cores(s).default_value = Q("-10");
       },
       {"spec.devices[1].capacity[cores].requestPolicy.validRange.default: Invalid value: \"-10\": must be greater "
        "than or equal to 0",
        "spec.devices[1].capacity[cores].requestPolicy.validRange.min: Invalid value: \"-10\": must be greater than "
        "or equal to 0"}},
  });
}

TEST_CASE("Taint, counter and binding condition rules") {
  RunCases({
      {"17 taints",
       [](ResourceSlice& s) { Dev0(s).taints.assign(17, Taint("example.com/taint", "NoExecute")); },
       {"spec.devices[0].taints: Too many: 17: must have at most 16 items"}},
      {"16 taints", [](ResourceSlice& s) { Dev0(s).taints.assign(16, Taint("example.com/taint", "NoExecute")); }, {}},
      {"unsupported taint effect",
       [](ResourceSlice& s) { Dev0(s).taints[0].effect = "PreferNoSchedule"; },
       {"spec.devices[0].taints[0].effect: Unsupported value: \"PreferNoSchedule\": supported values: \"NoExecute\", "
        "\"NoSchedule\", \"None\""}},
      {"missing taint effect",
       [](ResourceSlice& s) { Dev0(s).taints[0].effect.clear(); },
       {"spec.devices[0].taints[0].effect: Required value"}},
      {"empty taint key",
       [](ResourceSlice& s) { Dev0(s).taints[0].key.clear(); },
       {"spec.devices[0].taints[0].key: Invalid value: \"\": name part must be non-empty",
        S("spec.devices[0].taints[0].key: Invalid value: \"\": ") + kNamePartMsg}},
      {"bad taint value",
       [](ResourceSlice& s) { Dev0(s).taints[0].value = "!@#$%^"; },
       {S("spec.devices[0].taints[0].value: Invalid value: \"!@#$%^\": ") + kLabelValueMsg}},
      {"taint key prefix empty",
       [](ResourceSlice& s) { Dev0(s).taints[0].key = "/taint"; },
       {"spec.devices[0].taints[0].key: Invalid value: \"/taint\": prefix part must be non-empty"}},
      {"3 counter consumptions",
       [](ResourceSlice& s) {
         auto c = Dev0(s).consumes_counters[0];
         Dev0(s).consumes_counters = {c, c, c};
         Dev0(s).consumes_counters[1].counter_set = "b";
         Dev0(s).consumes_counters[2].counter_set = "c";
       },
       {"spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items"}},
      {"duplicate counter set",
       [](ResourceSlice& s) { Dev0(s).consumes_counters.push_back(Dev0(s).consumes_counters[0]); },
       {"spec.devices[0].consumesCounters[1]: Duplicate value: \"gpu-0-counters\""}},
      {"consumption without counter set or counters",
       [](ResourceSlice& s) {
         Dev0(s).consumes_counters[0].counter_set.clear();
         Dev0(s).consumes_counters[0].counters.clear();
       },
       {"spec.devices[0].consumesCounters[0].counterSet: Required value",
        "spec.devices[0].consumesCounters[0].counters: Required value"}},
      {"33 consumed counters",
       [](ResourceSlice& s) {
         for (int i = 0; i < 32; ++i) Dev0(s).consumes_counters[0].counters["c" + std::to_string(i)] = Counter{};
       },
       {"spec.devices[0].consumesCounters[0].counters: Too many: 33: must have at most 32 items"}},
      {"bad consumed counter name",
       [](ResourceSlice& s) { Dev0(s).consumes_counters[0].counters["Memory"] = Counter{}; },
       {S("spec.devices[0].consumesCounters[0].counters: Invalid value: \"Memory\": ") + kLabelMsg}},
      {"2 compatibility groups",
       [](ResourceSlice& s) {
         Dev0(s).consumes_counters[0].compatibility_groups = {"mig-1g", "mig-2g"};
       },
       {}},
      {"3 compatibility groups",
       [](ResourceSlice& s) {
         Dev0(s).consumes_counters[0].compatibility_groups = {"a", "b", "c"};
       },
       {"spec.devices[0].consumesCounters[0].compatibilityGroups: Too many: 3: must have at most 2 items"}},
      {"duplicate compatibility group",
       [](ResourceSlice& s) {
         Dev0(s).consumes_counters[0].compatibility_groups = {"a", "a"};
       },
       {"spec.devices[0].consumesCounters[0].compatibilityGroups[1]: Duplicate value: \"a\""}},
      {"5 binding conditions",
       [](ResourceSlice& s) {
         Dev0(s).binding_conditions = {"a", "b", "c", "d", "e"};
       },
       {"spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items"}},
      {"5 binding failure conditions",
       [](ResourceSlice& s) {
         Dev0(s).binding_failure_conditions = {"a", "b", "c", "d", "e"};
       },
       {"spec.devices[0].bindingFailureConditions: Too many: 5: must have at most 4 items"}},
      {"duplicate binding condition",
       [](ResourceSlice& s) {
         Dev0(s).binding_conditions = {"a", "a"};
       },
       {"spec.devices[0].bindingConditions[1]: Duplicate value: \"a\""}},
      {"duplicate binding failure condition",
       [](ResourceSlice& s) {
         Dev0(s).binding_failure_conditions = {"f", "f"};
       },
       {"spec.devices[0].bindingFailureConditions[1]: Duplicate value: \"f\""}},
      {"overlapping binding conditions",
       [](ResourceSlice& s) { Dev0(s).binding_failure_conditions = {"dra.example.com/attached"}; },
       {"spec.devices[0].bindingFailureConditions[0]: Invalid value: \"dra.example.com/attached\": "
        "bindingFailureConditions must not overlap with bindingConditions"}},
      {"failure conditions without conditions",
       [](ResourceSlice& s) { Dev0(s).binding_conditions.clear(); },
       {"spec.devices[0].bindingConditions: Invalid value: []string(nil): bindingConditions are required to use "
        "bindingFailureConditions"}},
      {"conditions without failure conditions",
       [](ResourceSlice& s) { Dev0(s).binding_failure_conditions.clear(); },
       {"spec.devices[0].bindingFailureConditions: Invalid value: []string(nil): bindingFailureConditions are "
        "required to use bindingConditions"}},
      {"bad binding condition name",
       [](ResourceSlice& s) { Dev0(s).binding_conditions = {"not ready"}; },
       {S("spec.devices[0].bindingConditions[0]: Invalid value: \"not ready\": ") + kNamePartMsg}},
  });
}

TEST_CASE("Shared counter rules") {
  RunCases({
      {"9 counter sets",
       [](ResourceSlice& s) {
         CounterSet set = s.spec.shared_counters[0];
         s.spec.shared_counters.clear();
         for (int i = 0; i < 9; ++i) {
           set.name = "set-" + std::to_string(i);
           s.spec.shared_counters.push_back(set);
         }
       },
       {"spec.sharedCounters: Too many: 9: must have at most 8 items"},
       CounterSlice},
      {"8 counter sets",
       [](ResourceSlice& s) {
         CounterSet set = s.spec.shared_counters[0];
         s.spec.shared_counters.clear();
         for (int i = 0; i < 8; ++i) {
           set.name = "set-" + std::to_string(i);
           s.spec.shared_counters.push_back(set);
         }
       },
       {},
       CounterSlice},
      {"33 counters in a set",
       [](ResourceSlice& s) {
         for (int i = 0; i < 31; ++i) s.spec.shared_counters[0].counters["c" + std::to_string(i)] = Counter{};
       },
       {"spec.sharedCounters[0].counters: Too many: 33: must have at most 32 items"},
       CounterSlice},
      {"duplicate counter set",
       [](ResourceSlice& s) { s.spec.shared_counters.push_back(s.spec.shared_counters[0]); },
       {"spec.sharedCounters[1]: Duplicate value: \"gpu-0-counters\""},
       CounterSlice},
      {"counter set without name or counters",
       [](ResourceSlice& s) {
         s.spec.shared_counters[0].name.clear();
         s.spec.shared_counters[0].counters.clear();
       },
       {"spec.sharedCounters[0].name: Required value", "spec.sharedCounters[0].counters: Required value"},
       CounterSlice},
      {"bad counter set and counter names",
       [](ResourceSlice& s) {
         s.spec.shared_counters[0].name = "!@#$%^";
         s.spec.shared_counters[0].counters["!@#$%^"] = Counter{};
       },
       {S("spec.sharedCounters[0].name: Invalid value: \"!@#$%^\": ") + kLabelMsg,
        S("spec.sharedCounters[0].counters: Invalid value: \"!@#$%^\": ") + kLabelMsg},
       CounterSlice},
  });
}

TEST_CASE("Per-device node selection rules") {
  auto per_device = [] {
    ResourceSlice s = ValidSlice();
    s.spec.node_name.reset();
    s.spec.per_device_node_selection = true;
    Dev0(s).node_name = "node-1";
    Dev1(s).all_nodes = true;
    return s;
  };
  RunCases({
      {"device node name without perDeviceNodeSelection",
       [](ResourceSlice& s) { Dev0(s).node_name = "node-1"; },
       {"spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"}},
      {"perDeviceNodeSelection with nodeName",
       [](ResourceSlice& s) { s.spec.node_name = "node-1"; },
       {S("spec: Invalid value: \"{`nodeName`, `perDeviceNodeSelection`}\": ") + kNodeSelection +
        ", but multiple fields are set"},
       per_device},
      {"device without node selection",
       [](ResourceSlice& s) { Dev0(s).node_name.reset(); },
       {S("spec.devices[0]: Required value: ") + kDeviceNodeSelection},
       per_device},
      {"device with two node selections",
       [](ResourceSlice& s) { Dev0(s).all_nodes = true; },
       {S("spec.devices[0]: Invalid value: \"{`nodeName`, `allNodes`}\": ") + kDeviceNodeSelection},
       per_device},
      {"device empty node name and allNodes false",
       [](ResourceSlice& s) {
         Dev0(s).node_name = "";
         Dev0(s).all_nodes = false;
       },
       {"spec.devices[0].nodeName: Invalid value: \"\": must not be empty",
        "spec.devices[0].allNodes: Invalid value: false: must be either unset or set to true",
        S("spec.devices[0]: Required value: ") + kDeviceNodeSelection},
       per_device},
      {"device bad node name",
       [](ResourceSlice& s) { Dev0(s).node_name = "Node_1"; },
       {S("spec.devices[0].nodeName: Invalid value: \"Node_1\": ") + kSubdomainMsg},
       per_device},
      {"device empty node selector",
       [](ResourceSlice& s) {
         Dev0(s).node_name.reset();
         Dev0(s).node_selector.emplace();
       },
       {"spec.devices[0].nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term",
        "spec.devices[0].nodeSelector.nodeSelectorTerms: Invalid value: []core.NodeSelectorTerm(nil): must have "
        "exactly one node selector term"},
       per_device},
      {"device with two node selector terms (Kubernetes 1.38)",
       [](ResourceSlice& s) {
         Dev0(s).node_name.reset();
         NodeSelectorRequirement r;
         r.key = "zone";
         r.operator_ = "Exists";
         NodeSelectorTerm t;
         t.match_expressions = {r};
         Dev0(s).node_selector.emplace().node_selector_terms = {t, t};
       },
       {"spec.devices[0].nodeSelector.nodeSelectorTerms: Invalid value: []core.NodeSelectorTerm{core.NodeSelectorTerm{"
        "MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"zone\", "
        "Operator:\"Exists\", Values:[]string(nil)}}, MatchFields:[]core.NodeSelectorRequirement(nil)}, "
        "core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{"
        "Key:\"zone\", Operator:\"Exists\", Values:[]string(nil)}}, "
        "MatchFields:[]core.NodeSelectorRequirement(nil)}}: must have exactly one node selector term"},
       per_device},
  });
}

TEST_CASE("Node allocatable resource rules") {
  auto cpu_mapping = [](ResourceSlice& s) -> NodeAllocatableMapping& {
    return *Dev1(s).node_allocatable_resources["cpu"].mapping;
  };
  RunCases({
      {"not a node allocatable resource",
       [](ResourceSlice& s) {
         Dev0(s).node_allocatable_resources["example.com/gpu"] = Dev0(s).node_allocatable_resources["memory"];
       },
       {"spec.devices[0].nodeAllocatableResources[example.com/gpu]: Invalid value: \"example.com/gpu\": must be a "
        "node allocatable resource name"}},
      {"ephemeral-storage and hugepages are allowed",
       [](ResourceSlice& s) {
         Dev0(s).node_allocatable_resources["ephemeral-storage"] = Dev0(s).node_allocatable_resources["memory"];
         Dev0(s).node_allocatable_resources["hugepages-1Gi"] = Dev0(s).node_allocatable_resources["memory"];
       },
       {}},
      {"neither mapping nor overhead",
       [](ResourceSlice& s) { Dev0(s).node_allocatable_resources["memory"] = NodeAllocatableResource{}; },
       {"spec.devices[0].nodeAllocatableResources[memory]: Required value: at least one of mapping or overhead must "
        "be set"}},
      {"capacityKey not a capacity",
       [cpu_mapping](ResourceSlice& s) { cpu_mapping(s).capacity_key = "threads"; },
       {"spec.devices[1].nodeAllocatableResources[cpu].mapping.capacityKey: Not found: \"threads\""}},
      {"empty capacityKey",
       [cpu_mapping](ResourceSlice& s) { cpu_mapping(s).capacity_key = ""; },
       {"spec.devices[1].nodeAllocatableResources[cpu].mapping.capacityKey: Invalid value: \"\": capacityKey must "
        "not be an empty string"}},
      {"capacityKey without capacityMultiplier",
       [cpu_mapping](ResourceSlice& s) { cpu_mapping(s).capacity_multiplier.reset(); },
       {"spec.devices[1].nodeAllocatableResources[cpu].mapping.capacityMultiplier: Required value: "
        "capacityMultiplier is required when capacityKey is set"}},
      {"capacityMultiplier zero",
       [cpu_mapping](ResourceSlice& s) { cpu_mapping(s).capacity_multiplier = Q("0"); },
       {"spec.devices[1].nodeAllocatableResources[cpu].mapping.capacityMultiplier: Invalid value: \"0\": must be "
        "positive"}},
      {"capacityMultiplier without capacityKey",
       [cpu_mapping](ResourceSlice& s) { cpu_mapping(s).capacity_key.reset(); },
       {"spec.devices[1].nodeAllocatableResources[cpu].mapping.capacityKey: Required value: capacityKey is required "
        "when capacityMultiplier is set",
        "spec.devices[1].nodeAllocatableResources[cpu].mapping: Invalid value: \"\": must specify one of: "
        "`capacityKey`, `deviceMultiplier`"}},
      {"capacityKey and deviceMultiplier",
       [cpu_mapping](ResourceSlice& s) { cpu_mapping(s).device_multiplier = Q("1"); },
       {"spec.devices[1].nodeAllocatableResources[cpu].mapping: Invalid value: \"{capacityKey, deviceMultiplier}\": "
        "must specify exactly one of: `capacityKey`, `deviceMultiplier`"}},
      {"negative deviceMultiplier",
       [](ResourceSlice& s) {
         Dev1(s).node_allocatable_resources["hugepages-2Mi"].mapping->device_multiplier = Q("-2Mi");
       },
       {"spec.devices[1].nodeAllocatableResources[hugepages-2Mi].mapping.deviceMultiplier: Invalid value: "
        "\"-2Mi\": must be positive"}},
      {"empty overhead",
       [](ResourceSlice& s) { Dev0(s).node_allocatable_resources["memory"].overhead->per_pod.reset(); },
       {"spec.devices[0].nodeAllocatableResources[memory].overhead: Invalid value: \"\": at least one of perPod or "
        "perContainer must be set"}},
      {"negative overhead",
       [](ResourceSlice& s) {
         Dev0(s).node_allocatable_resources["memory"].overhead->per_pod = Q("-1Gi");
         Dev0(s).node_allocatable_resources["memory"].overhead->per_container = Q("-500m");
       },
       {"spec.devices[0].nodeAllocatableResources[memory].overhead.perPod: Invalid value: \"-1Gi\": must be "
        "non-negative",
        "spec.devices[0].nodeAllocatableResources[memory].overhead.perContainer: Invalid value: \"-500m\": must be "
        "non-negative"}},
  });
}

TEST_CASE("Partition type attribute and skipNodeOperations rules") {
  RunCases({
      {"partition type without counter consumption",
       [](ResourceSlice& s) { Dev0(s).consumes_counters.clear(); },
       {"spec.partitionTypeAttribute: Invalid value: \"gpu.example.com/profile\": may only be set on a slice which "
        "declares devices that consume counters"}},
      {"partition type attribute missing on a device",
       [](ResourceSlice& s) { s.spec.partition_type_attribute = "gpu.example.com/memoryType"; },
       {"spec.devices[0].attributes[gpu.example.com/memoryType]: Required value: device consumes counters and "
        "`partitionTypeAttribute` names this attribute, so it must be set"}},
      {"partition type attribute not a string",
       [](ResourceSlice& s) { s.spec.partition_type_attribute = "gpu.example.com/index"; },
       {"spec.devices[0].attributes[gpu.example.com/index]: Invalid value: {\"int\":0}: must be a string value "
        "because `partitionTypeAttribute` names this attribute"}},
      {"partition type attribute not fully qualified",
       [](ResourceSlice& s) { s.spec.partition_type_attribute = "model"; },
       {"spec.partitionTypeAttribute: Invalid value: \"model\": a fully qualified name must be a domain and a name "
        "separated by a slash"}},
      {"partition type attribute with a bad domain",
       [](ResourceSlice& s) { s.spec.partition_type_attribute = "gpu_example/model"; },
       {S("spec.partitionTypeAttribute: Invalid value: \"gpu_example\": prefix: ") + kSubdomainMsg}},
      {"NodePrepareResources alone",
       [](ResourceSlice& s) { s.spec.skip_node_operations = {"NodePrepareResources"}; },
       {"spec.skipNodeOperations: Invalid value: []resource.SkipNodeOperation{\"NodePrepareResources\"}: "
        "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"}},
      {"NodePrepareResources with *",
       [](ResourceSlice& s) {
         s.spec.skip_node_operations = {"NodePrepareResources", "*"};
       },
       {}},
      {"unknown and duplicate operations",
       [](ResourceSlice& s) {
         s.spec.skip_node_operations = {"*", "Reboot", "*"};
       },
       {"spec.skipNodeOperations[2]: Duplicate value: \"*\"",
        "spec.skipNodeOperations[1]: Unsupported value: \"Reboot\": supported values: \"*\", "
        "\"NodePrepareResources\", \"NodeUnprepareResources\""}},
  });
}

// ---- AllocatedDeviceStatus ----

struct StatusCase {
  std::string name;
  std::function<void(AllocatedDeviceStatus&)> mutate;
  Strings want;
};

TEST_CASE("AllocatedDeviceStatus rules") {
  CHECK(ToStrings(ValidateAllocatedDeviceStatus(ValidStatus(), "status.devices[0]")).empty());
  const std::string p = "status.devices[0]";
  std::vector<StatusCase> cases = {
      {"names",
       [](AllocatedDeviceStatus& st) {
         st.driver.clear();
         st.pool = "Pool";
         st.device = "gpu.0";
       },
       {"status.devices[0].driver: Required value",
        S("status.devices[0].pool: Invalid value: \"Pool\": ") + kSubdomainMsg,
        "status.devices[0].device: Invalid value: \"gpu.0\": must not contain dots"}},
      {"shareID not normalized",
       [](AllocatedDeviceStatus& st) { st.share_id = "3E1F0C2A-9B8D-4C7E-A6F5-1D2C3B4A5968"; },
       {"status.devices[0].shareID: Invalid value: \"3E1F0C2A-9B8D-4C7E-A6F5-1D2C3B4A5968\": uid must be in RFC 4122 "
        "normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"}},
      {"shareID not a UUID",
       [](AllocatedDeviceStatus& st) { st.share_id = "abc"; },
       {"status.devices[0].shareID: Invalid value: \"abc\": error validating uid: invalid UUID length: 3"}},
      {"shareID bad format",
       [](AllocatedDeviceStatus& st) { st.share_id = "3e1f0c2a-9b8d-4c7e-a6f5-1d2c3b4a596z"; },
       {"status.devices[0].shareID: Invalid value: \"3e1f0c2a-9b8d-4c7e-a6f5-1d2c3b4a596z\": error validating uid: "
        "invalid UUID format"}},
      {"9 conditions",
       [](AllocatedDeviceStatus& st) {
         Condition c = st.conditions[0];
         st.conditions.clear();
         for (int i = 0; i < 9; ++i) {
           c.type = "Type" + std::to_string(i);
           st.conditions.push_back(c);
         }
       },
       {"status.devices[0].conditions: Too many: 9: must have at most 8 items"}},
      {"condition rules",
       [](AllocatedDeviceStatus& st) {
         Condition& c = st.conditions[1];
         c.type = "Ready";
         c.status = "Maybe";
         c.observed_generation = -1;
         c.last_transition_time.clear();
         c.reason = "1Bad";
       },
       {"status.devices[0].conditions[1].type: Duplicate value: \"Ready\"",
        "status.devices[0].conditions[1].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", "
        "\"Unknown\"",
        "status.devices[0].conditions[1].observedGeneration: Invalid value: -1: must be greater than or equal to zero",
        "status.devices[0].conditions[1].lastTransitionTime: Required value: must be set",
        S("status.devices[0].conditions[1].reason: Invalid value: \"1Bad\": ") + kReasonMsg}},
      {"condition type, reason and message",
       [](AllocatedDeviceStatus& st) {
         Condition& c = st.conditions[0];
         c.type = "not ready";
         c.reason.clear();
         c.message = std::string(32 * 1024 + 1, 'm');
       },
       {S("status.devices[0].conditions[0].type: Invalid value: \"not ready\": ") + kNamePartMsg,
        "status.devices[0].conditions[0].reason: Required value: must be set",
        "status.devices[0].conditions[0].message: Too long: may not be more than 32768 bytes"}},
      {"reason too long",
       [](AllocatedDeviceStatus& st) { st.conditions[0].reason = std::string(1025, 'R'); },
       {"status.devices[0].conditions[0].reason: Too long: may not be more than 1024 bytes"}},
      {"data 10 KiB + 1",
       [](AllocatedDeviceStatus& st) {
         st.data = nlohmann::json{{"k", std::string(10 * 1024 + 1 - 8, 'x')}};
       },
       {"status.devices[0].data: Too long: may not be more than 10240 bytes"}},
      {"data exactly 10 KiB",
       [](AllocatedDeviceStatus& st) {
         st.data = nlohmann::json{{"k", std::string(10 * 1024 - 8, 'x')}};
       },
       {}},
      {"data not an object",
       [](AllocatedDeviceStatus& st) {
         st.data = nlohmann::json::array({1, 2});
       },
       {"status.devices[0].data: Invalid value: \"<value omitted>\": must be a valid JSON object"}},
      {"network data lengths",
       [](AllocatedDeviceStatus& st) {
         st.network_data->interface_name = std::string(257, 'i');
         st.network_data->hardware_address = std::string(129, 'h');
       },
       {"status.devices[0].networkData.interfaceName: Too long: may not be more than 256 bytes",
        "status.devices[0].networkData.hardwareAddress: Too long: may not be more than 128 bytes"}},
      {"IP without prefix length",
       [](AllocatedDeviceStatus& st) { st.network_data->ips = {"10.9.8.7"}; },
       {"status.devices[0].networkData.ips[0]: Invalid value: \"10.9.8.7\": must be a valid CIDR value, (e.g. "
        "10.9.8.0/24 or 2001:db8::/64)"}},
      {"not an IP",
       [](AllocatedDeviceStatus& st) {
         st.network_data->ips = {"10.9.8.256/24", "fe80::1%eth0/64"};
       },
       {"status.devices[0].networkData.ips[0]: Invalid value: \"10.9.8.256/24\": must be a valid CIDR value, (e.g. "
        "10.9.8.0/24 or 2001:db8::/64)",
        "status.devices[0].networkData.ips[1]: Invalid value: \"fe80::1%eth0/64\": must be a valid CIDR value, (e.g. "
        "10.9.8.0/24 or 2001:db8::/64)"}},
      {"IPs not canonical",
       [](AllocatedDeviceStatus& st) {
         st.network_data->ips = {"010.9.8.7/24", "2001:DB8:0:0:0:0:0:5/64", "::ffff:192.0.2.1/120", "10.0.0.1/033"};
       },
       {"status.devices[0].networkData.ips[0]: Invalid value: \"010.9.8.7/24\": must be in canonical form "
        "(\"10.9.8.7/24\")",
        "status.devices[0].networkData.ips[1]: Invalid value: \"2001:DB8:0:0:0:0:0:5/64\": must be in canonical form "
        "(\"2001:db8::5/64\")",
        "status.devices[0].networkData.ips[2]: Invalid value: \"::ffff:192.0.2.1/120\": must be in canonical form "
        "(\"192.0.2.1/24\")",
        "status.devices[0].networkData.ips[3]: Invalid value: \"10.0.0.1/033\": must be a valid CIDR value, (e.g. "
        "10.9.8.0/24 or 2001:db8::/64)"}},
      {"duplicate IP",
       [](AllocatedDeviceStatus& st) { st.network_data->ips.push_back("10.9.8.7/24"); },
       {"status.devices[0].networkData.ips[3]: Duplicate value: \"10.9.8.7/24\""}},
      {"17 IPs",
       [](AllocatedDeviceStatus& st) {
         st.network_data->ips.clear();
         for (int i = 0; i < 17; ++i) st.network_data->ips.push_back("10.0.0." + std::to_string(i) + "/24");
       },
       {"status.devices[0].networkData.ips: Too many: 17: must have at most 16 items"}},
  };
  for (const StatusCase& c : cases) {
    AllocatedDeviceStatus st = ValidStatus();
    c.mutate(st);
    INFO(c.name);
    CHECK(ToStrings(ValidateAllocatedDeviceStatus(st, p)) == c.want);
  }
}

// ---- FieldError and the name helpers ----

TEST_CASE("FieldError prints as field.Error does") {
  CHECK(FieldError::Required("a.b", "").ToString() == "a.b: Required value");
  CHECK(FieldError::Required("a.b", "must be set").ToString() == "a.b: Required value: must be set");
  CHECK(FieldError::Invalid("a", GoQuote("x\"y\n\x01"), "bad").ToString() ==
        "a: Invalid value: \"x\\\"y\\n\\x01\": bad");
  CHECK(FieldError::Invalid("a", "null", "bad").ToString() == "a: Invalid value: null: bad");
  CHECK(FieldError::TooMany("spec.devices", 129, 128).ToString() ==
        "spec.devices: Too many: 129: must have at most 128 items");
  CHECK(FieldError::TooLong("a", 64).ToString() == "a: Too long: may not be more than 64 bytes");
  CHECK(FieldError::Duplicate("a[1]", GoQuote("x")).ToString() == "a[1]: Duplicate value: \"x\"");
  CHECK(FieldError::NotSupported("a", GoQuote("x"), {"b", "c"}).ToString() ==
        "a: Unsupported value: \"x\": supported values: \"b\", \"c\"");
  CHECK(FieldError::Forbidden("a", "no").ToString() == "a: Forbidden: no");
  CHECK(FieldError::NotFound("a", GoQuote("k")).ToString() == "a: Not found: \"k\"");
  CHECK(FieldError::Internal("a", "boom").ToString() == "a: Internal error: boom");
  CHECK(GoQuote("h\xc3\xa9\xff") == "\"h\xc3\xa9\\xff\"");
}

TEST_CASE("ToStatus joins errors as the API server does") {
  const std::string obj = "ResourceSlice.resource.k8s.io \"s\"";
  CHECK(ToStatus({}, obj).ok());
  const FieldError a = FieldError::Required("spec.driver", "");
  const FieldError b = FieldError::TooMany("spec.devices", 129, 128);
  absl::Status one = ToStatus({a}, obj);
  CHECK(one.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(one.message()) == "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.driver: Required value");
  CHECK(std::string(ToStatus({a, b, a}, obj).message()) ==
        "ResourceSlice.resource.k8s.io \"s\" is invalid: [spec.driver: Required value, spec.devices: Too many: 129: "
        "must have at most 128 items]");
  CHECK(std::string(ToStatus({a, a}, obj).message()) ==
        "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.driver: Required value");
}

TEST_CASE("Name formats") {
  CHECK(IsQualifiedName("example.com/MyName").empty());
  CHECK(IsQualifiedName("my.name").empty());
  CHECK(IsQualifiedName("a/b/c") ==
        Strings{"a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')"});
  CHECK(IsQualifiedName("Example.com/x") == Strings{S("prefix part ") + kSubdomainMsg});
  CHECK(IsQualifiedName(std::string(64, 'a')) == Strings{"name part must be no more than 63 bytes"});
  CHECK(IsLabelValue("").empty());
  CHECK(IsLabelValue("a_b.c-D").empty());
  CHECK(IsLabelValue("-a") == Strings{kLabelValueMsg});
  CHECK(IsCIdentifier("_x1").empty());
  CHECK(IsCIdentifier("") == Strings{kCIdentifierMsg});
  CHECK(IsDns1123Label("a.b") == Strings{"must not contain dots"});
  CHECK(IsDns1123Label(std::string(64, 'a')) == Strings{"must be no more than 63 characters"});
}

}  // namespace
}  // namespace dra::k8s
