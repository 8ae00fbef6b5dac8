#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "cdi_test_specs.h"
#include "dra/cdi/validation.h"

namespace dra::cdi {
namespace {

using testing::FullSpec;
using testing::MinimalSpec;

struct RuleCase {
  const char* rule;
  std::function<void(Spec&)> break_it;
  const char* message;
};

ContainerEdits& Edits(Spec& spec) { return spec.devices[0].container_edits; }

TEST_CASE("valid specs pass", "[cdi][validation]") {
  CHECK(ValidateSpec(MinimalSpec()).ok());
  CHECK(ValidateSpec(FullSpec()).ok());
}

TEST_CASE("every validation rule has a failing case naming the device, field and rule", "[cdi][validation]") {
  const RuleCase cases[] = {
      {"kind needs a slash", [](Spec& s) { s.kind = "gpu"; }, "invalid kind \"gpu\": want vendor/class"},
      {"vendor starts with a letter", [](Spec& s) { s.kind = "1x.com/gpu"; },
       "kind \"1x.com/gpu\": invalid vendor \"1x.com\": must start with a letter"},
      {"class ends alphanumeric", [](Spec& s) { s.kind = "x.com/gpu_"; },
       "kind \"x.com/gpu_\": invalid class \"gpu_\": must end with a letter or digit"},
      {"at least one device", [](Spec& s) { s.devices.clear(); }, "devices: at least one device is required"},
      {"device name characters", [](Spec& s) { s.devices[0].name = "gpu 0"; },
       "devices[\"gpu 0\"].name: invalid device name \"gpu 0\": invalid character ' '; allowed are letters, digits, "
       "'_', '-', '.' and ':'"},
      {"unique device names", [](Spec& s) { s.devices.push_back(s.devices[0]); },
       "devices[\"gpu0\"].name: duplicate device name"},
      {"device edits not empty", [](Spec& s) { Edits(s) = {}; },
       "devices[\"gpu0\"].containerEdits: a device needs at least one edit"},
      {"env is KEY=VALUE",
       [](Spec& s) {
         Edits(s).env = {"A=1", "NOVALUE"};
       },
       "devices[\"gpu0\"].containerEdits.env[1]: \"NOVALUE\" is not KEY=VALUE"},
      {"env key not empty", [](Spec& s) { s.container_edits.env = {"=1"}; },
       "containerEdits.env[0]: \"=1\" is not KEY=VALUE"},
      {"device node path", [](Spec& s) { Edits(s).device_nodes[0].path = ""; },
       "devices[\"gpu0\"].containerEdits.deviceNodes[0].path: required"},
      {"device node type", [](Spec& s) { Edits(s).device_nodes[0].type = "x"; },
       "devices[\"gpu0\"].containerEdits.deviceNodes[0].type: \"x\" is not one of b, c, u, p"},
      {"device node permissions", [](Spec& s) { Edits(s).device_nodes[0].permissions = "rwx"; },
       "devices[\"gpu0\"].containerEdits.deviceNodes[0].permissions: \"rwx\" has 'x'; allowed are r, w and m"},
      {"hook name",
       [](Spec& s) {
         Hook& hook = Edits(s).hooks.emplace_back();
         hook.hook_name = "preStart";
         hook.path = "/bin/true";
       },
       "devices[\"gpu0\"].containerEdits.hooks[0].hookName: \"preStart\" is not one of prestart, createRuntime, "
       "createContainer, startContainer, poststart, poststop"},
      {"hook path", [](Spec& s) { Edits(s).hooks.emplace_back().hook_name = "poststop"; },
       "devices[\"gpu0\"].containerEdits.hooks[0].path: required"},
      {"hook env",
       [](Spec& s) {
         Hook& hook = Edits(s).hooks.emplace_back();
         hook.hook_name = "prestart";
         hook.path = "/bin/true";
         hook.env = {"X"};
       },
       "devices[\"gpu0\"].containerEdits.hooks[0].env[0]: \"X\" is not KEY=VALUE"},
      {"hook timeout",
       [](Spec& s) {
         Hook& hook = Edits(s).hooks.emplace_back();
         hook.hook_name = "prestart";
         hook.path = "/bin/true";
         hook.timeout = 0;
       },
       "devices[\"gpu0\"].containerEdits.hooks[0].timeout: 0 is not between 1 and 4294967295 seconds"},
      {"mount host path",
       [](Spec& s) {
         Edits(s).mounts.push_back({"", "/b", {}, ""});
       },
       "devices[\"gpu0\"].containerEdits.mounts[0].hostPath: required"},
      {"mount container path",
       [](Spec& s) {
         Edits(s).mounts.push_back({"/a", "", {}, ""});
       },
       "devices[\"gpu0\"].containerEdits.mounts[0].containerPath: required"},
      {"intelRdt closID", [](Spec& s) { Edits(s).intel_rdt.emplace().clos_id = "a/b"; },
       "devices[\"gpu0\"].containerEdits.intelRdt.closID: \"a/b\" is not a valid file name"},
      {"net device host name",
       [](Spec& s) {
         Edits(s).net_devices.push_back({"", "net0"});
       },
       "devices[\"gpu0\"].containerEdits.netDevices[0].hostInterfaceName: required"},
      {"net device name",
       [](Spec& s) {
         Edits(s).net_devices.push_back({"eth0", ""});
       },
       "devices[\"gpu0\"].containerEdits.netDevices[0].name: required"},
      {"net device host names unique",
       [](Spec& s) {
         Edits(s).net_devices = {{"eth0", "a"}, {"eth0", "b"}};
       },
       "devices[\"gpu0\"].containerEdits.netDevices[1].hostInterfaceName: duplicate \"eth0\""},
      {"net device names unique",
       [](Spec& s) {
         Edits(s).net_devices = {{"eth0", "a"}, {"eth1", "a"}};
       },
       "devices[\"gpu0\"].containerEdits.netDevices[1].name: duplicate \"a\""},
      {"annotation key", [](Spec& s) { s.devices[0].annotations["bad key"] = "v"; },
       "devices[\"gpu0\"].annotations[\"bad key\"]: invalid key: the name part may hold only letters, digits, '-', "
       "'_' and '.'"},
      {"annotation key prefix", [](Spec& s) { s.annotations["Example.com/x"] = "v"; },
       "annotations[\"Example.com/x\"]: invalid key: the prefix must be a lower-case DNS subdomain of at most 253 "
       "characters"},
      {"annotation size", [](Spec& s) { s.annotations["big"] = std::string(256 * 1024, 'x'); },
       "annotations: total size 262147 bytes exceeds 262144"},
      {"known version", [](Spec& s) { s.cdi_version = "2.0.0"; },
       "cdiVersion \"2.0.0\": not a supported CDI spec version (0.3.0 to 1.1.0)"},
      {"version new enough",
       [](Spec& s) {
         s.cdi_version = "0.5.0";
         s.devices[0].annotations["a"] = "b";
       },
       "cdiVersion \"0.5.0\" is too old: devices[\"gpu0\"].annotations needs CDI 0.6.0 or later"},
  };
  for (const RuleCase& c : cases) {
    INFO(c.rule);
    Spec spec = MinimalSpec();
    c.break_it(spec);
    const absl::Status status = ValidateSpec(spec);
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK(status.message() == c.message);
  }
}

TEST_CASE("spec-level edits may be empty, device edits may not", "[cdi][validation]") {
  Spec spec = MinimalSpec();
  spec.container_edits = {};
  CHECK(ValidateSpec(spec).ok());
}

}  // namespace
}  // namespace dra::cdi
