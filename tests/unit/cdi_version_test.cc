#include <catch2/catch.hpp>

#include <functional>

#include "cdi_test_specs.h"
#include "dra/cdi/version.h"

namespace dra::cdi {
namespace {

using testing::MinimalSpec;

struct VersionCase {
  const char* what;
  std::function<void(Spec&)> change;
  const char* version;
  const char* feature;
};

TEST_CASE("the minimum version follows the features a spec uses", "[cdi][version]") {
  const VersionCase cases[] = {
      {"nothing new", [](Spec&) {}, "0.3.0", ""},
      {"mount type",
       [](Spec& s) {
         s.devices[0].container_edits.mounts.push_back({"/a", "/b", {}, "bind"});
       },
       "0.4.0", "devices[\"gpu0\"].containerEdits.mounts[].type"},
      {"mount without type",
       [](Spec& s) {
         s.devices[0].container_edits.mounts.push_back({"/a", "/b", {"ro"}, ""});
       },
       "0.3.0", ""},
      {"device node hostPath",
       [](Spec& s) {
         DeviceNode& node = s.container_edits.device_nodes.emplace_back();
         node.path = "/dev/x";
         node.host_path = "/dev/y";
       },
       "0.5.0", "containerEdits.deviceNodes[].hostPath"},
      {"device name starting with a digit", [](Spec& s) { s.devices[0].name = "0gpu"; }, "0.5.0",
       "devices[\"0gpu\"].name (starts with a digit)"},
      {"spec annotations", [](Spec& s) { s.annotations["a"] = "b"; }, "0.6.0", "annotations"},
      {"device annotations", [](Spec& s) { s.devices[0].annotations["a"] = "b"; }, "0.6.0",
       "devices[\"gpu0\"].annotations"},
      {"dot in the class", [](Spec& s) { s.kind = "example.com/gpu.v2"; }, "0.6.0", "kind (a '.' in the class)"},
      {"dot in the vendor only", [](Spec& s) { s.kind = "a.b.c/gpu"; }, "0.3.0", ""},
      {"intelRdt", [](Spec& s) { s.devices[0].container_edits.intel_rdt.emplace().clos_id = "c"; }, "0.7.0",
       "devices[\"gpu0\"].containerEdits.intelRdt"},
      {"additionalGids", [](Spec& s) { s.container_edits.additional_gids = {5}; }, "0.7.0",
       "containerEdits.additionalGids"},
      {"netDevices",
       [](Spec& s) {
         s.devices[0].container_edits.net_devices.push_back({"eth1", "net0"});
       },
       "1.1.0", "devices[\"gpu0\"].containerEdits.netDevices"},
      {"intelRdt schemata", [](Spec& s) { s.container_edits.intel_rdt.emplace().schemata = {"L3:0=f"}; }, "1.1.0",
       "containerEdits.intelRdt.schemata"},
      {"intelRdt enableMonitoring", [](Spec& s) { s.container_edits.intel_rdt.emplace().enable_monitoring = true; },
       "1.1.0", "containerEdits.intelRdt.enableMonitoring"},
      {"the highest feature wins",
       [](Spec& s) {
         s.annotations["a"] = "b";
         s.devices[0].container_edits.net_devices.push_back({"eth1", "net0"});
         s.container_edits.additional_gids = {5};
       },
       "1.1.0", "devices[\"gpu0\"].containerEdits.netDevices"},
  };
  for (const VersionCase& c : cases) {
    INFO(c.what);
    Spec spec = MinimalSpec();
    c.change(spec);
    const RequiredVersion required = MinimumVersion(spec);
    CHECK(required.version.ToString() == c.version);
    CHECK(required.feature == c.feature);
    CHECK(ResolveVersion(spec)->ToString() == c.version);
  }
}

TEST_CASE("a pinned version is kept if it can carry the spec", "[cdi][version]") {
  Spec spec = MinimalSpec();
  spec.cdi_version = "1.0.0";
  CHECK(ResolveVersion(spec)->ToString() == "1.0.0");
  spec.cdi_version = "v0.6.0";
  CHECK(ResolveVersion(spec)->ToString() == "0.6.0");
}

TEST_CASE("a pinned version older than the features used is rejected, naming the feature", "[cdi][version]") {
  Spec spec = MinimalSpec();
  spec.devices[0].container_edits.net_devices.push_back({"eth1", "net0"});
  spec.cdi_version = "0.7.0";
  CHECK(ResolveVersion(spec).status().message() ==
        "cdiVersion \"0.7.0\" is too old: devices[\"gpu0\"].containerEdits.netDevices needs CDI 1.1.0 or later");
}

TEST_CASE("unknown or unsupported versions are rejected", "[cdi][version]") {
  CHECK(ParseVersion("0.9.0").status().message() ==
        "cdiVersion \"0.9.0\": not a supported CDI spec version (0.3.0 to 1.1.0)");
  CHECK(ParseVersion("0.2.0").status().message() ==
        "cdiVersion \"0.2.0\": not a supported CDI spec version (0.3.0 to 1.1.0)");
  CHECK(ParseVersion("1.1").status().message() == "cdiVersion \"1.1\": not a version like 0.6.0");
  for (const char* known : {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"}) {
    INFO(known);
    CHECK(ParseVersion(known).ok());
  }
}

}  // namespace
}  // namespace dra::cdi
