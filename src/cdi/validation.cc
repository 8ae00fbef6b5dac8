#include "dra/cdi/validation.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cdi/field_path.h"
#include "dra/cdi/qualified_name.h"
#include "dra/cdi/version.h"

namespace dra::cdi {
namespace {

using internal::DevicePath;
using internal::Field;
using internal::Index;

// Kubernetes' limit on all annotations of an object, which the reference
// library applies to CDI annotations.
constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;

absl::Status Invalid(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

absl::Status ValidateEnv(const std::vector<std::string>& env, const std::string& path) {
  for (size_t i = 0; i < env.size(); ++i) {
    const size_t equals = env[i].find('=');
    if (equals == std::string::npos || equals == 0) {
      return Invalid(Index(path, i), absl::StrCat("\"", env[i], "\" is not KEY=VALUE"));
    }
  }
  return absl::OkStatus();
}

bool IsLowerAlphaNumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlphaNumeric(char c) { return IsLowerAlphaNumeric(c) || (c >= 'A' && c <= 'Z'); }

// A DNS subdomain (RFC 1123), as an annotation key prefix.
bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t label_start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] != '.') {
      if (!IsLowerAlphaNumeric(s[i]) && s[i] != '-') return false;
      continue;
    }
    const absl::string_view label = s.substr(label_start, i - label_start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    label_start = i + 1;
  }
  return true;
}

// A Kubernetes qualified name: [prefix/]name, name at most 63 characters of
// letters, digits, '-', '_', '.', alphanumeric at both ends.
std::string AnnotationKeyProblem(absl::string_view key) {
  absl::string_view name = key;
  if (const size_t slash = key.find('/'); slash != absl::string_view::npos) {
    if (!IsDnsSubdomain(key.substr(0, slash))) {
      return "the prefix must be a lower-case DNS subdomain of at most 253 characters";
    }
    name = key.substr(slash + 1);
  }
  if (name.empty() || name.size() > 63) return "the name part must have 1 to 63 characters";
  if (!IsAlphaNumeric(name.front()) || !IsAlphaNumeric(name.back())) {
    return "the name part must start and end with a letter or digit";
  }
  for (const char c : name) {
    if (!IsAlphaNumeric(c) && c != '-' && c != '_' && c != '.') {
      return "the name part may hold only letters, digits, '-', '_' and '.'";
    }
  }
  return "";
}

absl::Status ValidateAnnotations(const std::map<std::string, std::string>& annotations, const std::string& path) {
  size_t total = 0;
  for (const auto& [key, value] : annotations) {
    if (std::string problem = AnnotationKeyProblem(key); !problem.empty()) {
      return Invalid(absl::StrCat(path, "[\"", key, "\"]"), absl::StrCat("invalid key: ", problem));
    }
    total += key.size() + value.size();
  }
  if (total > kTotalAnnotationSizeLimit) {
    return Invalid(path, absl::StrCat("total size ", total, " bytes exceeds ", kTotalAnnotationSizeLimit));
  }
  return absl::OkStatus();
}

absl::Status ValidateDeviceNode(const DeviceNode& node, const std::string& path) {
  if (node.path.empty()) return Invalid(Field(path, "path"), "required");
  if (node.type != "" && node.type != "b" && node.type != "c" && node.type != "u" && node.type != "p") {
    return Invalid(Field(path, "type"), absl::StrCat("\"", node.type, "\" is not one of b, c, u, p"));
  }
  for (const char bit : node.permissions) {
    if (bit != 'r' && bit != 'w' && bit != 'm') {
      return Invalid(Field(path, "permissions"), absl::StrCat("\"", node.permissions, "\" has '", std::string(1, bit),
                                                              "'; allowed are r, w and m"));
    }
  }
  return absl::OkStatus();
}

bool IsHookName(absl::string_view name) {
  return name == "prestart" || name == "createRuntime" || name == "createContainer" || name == "startContainer" ||
         name == "poststart" || name == "poststop";
}

absl::Status ValidateHook(const Hook& hook, const std::string& path) {
  if (!IsHookName(hook.hook_name)) {
    return Invalid(Field(path, "hookName"),
                   absl::StrCat("\"", hook.hook_name,
                                "\" is not one of prestart, createRuntime, createContainer, startContainer, "
                                "poststart, poststop"));
  }
  if (hook.path.empty()) return Invalid(Field(path, "path"), "required");
  if (hook.timeout.has_value() && (*hook.timeout <= 0 || *hook.timeout > 0xffffffffLL)) {
    return Invalid(Field(path, "timeout"), absl::StrCat(*hook.timeout, " is not between 1 and 4294967295 seconds"));
  }
  return ValidateEnv(hook.env, Field(path, "env"));
}

absl::Status ValidateIntelRdt(const IntelRdt& rdt, const std::string& path) {
  // closID names a directory under /sys/fs/resctrl; "/" is the root CLOS.
  const std::string& id = rdt.clos_id;
  if (id != "/" &&
      (id.size() >= 4096 || id == "." || id == ".." || absl::StrContains(id, '/') || absl::StrContains(id, '\n'))) {
    return Invalid(Field(path, "closID"), absl::StrCat("\"", id, "\" is not a valid file name"));
  }
  return absl::OkStatus();
}

absl::Status ValidateNetDevices(const std::vector<NetDevice>& devices, const std::string& path) {
  std::set<std::string> host_names;
  std::set<std::string> names;
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::string where = Index(path, i);
    const NetDevice& device = devices[i];
    if (device.host_interface_name.empty()) return Invalid(Field(where, "hostInterfaceName"), "required");
    if (device.name.empty()) return Invalid(Field(where, "name"), "required");
    if (!host_names.insert(device.host_interface_name).second) {
      return Invalid(Field(where, "hostInterfaceName"), absl::StrCat("duplicate \"", device.host_interface_name, "\""));
    }
    if (!names.insert(device.name).second) {
      return Invalid(Field(where, "name"), absl::StrCat("duplicate \"", device.name, "\""));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateContainerEdits(const ContainerEdits& edits, absl::string_view where_view) {
  const std::string where(where_view);
  if (absl::Status s = ValidateEnv(edits.env, Field(where, "env")); !s.ok()) return s;
  for (size_t i = 0; i < edits.device_nodes.size(); ++i) {
    if (absl::Status s = ValidateDeviceNode(edits.device_nodes[i], Index(Field(where, "deviceNodes"), i)); !s.ok()) {
      return s;
    }
  }
  for (size_t i = 0; i < edits.hooks.size(); ++i) {
    if (absl::Status s = ValidateHook(edits.hooks[i], Index(Field(where, "hooks"), i)); !s.ok()) return s;
  }
  for (size_t i = 0; i < edits.mounts.size(); ++i) {
    const std::string path = Index(Field(where, "mounts"), i);
    if (edits.mounts[i].host_path.empty()) return Invalid(Field(path, "hostPath"), "required");
    if (edits.mounts[i].container_path.empty()) return Invalid(Field(path, "containerPath"), "required");
  }
  if (edits.intel_rdt.has_value()) {
    if (absl::Status s = ValidateIntelRdt(*edits.intel_rdt, Field(where, "intelRdt")); !s.ok()) return s;
  }
  return ValidateNetDevices(edits.net_devices, Field(where, "netDevices"));
}

absl::Status ValidateSpec(const Spec& spec) {
  if (absl::StatusOr<Version> version = ResolveVersion(spec); !version.ok()) return version.status();
  if (absl::StatusOr<Kind> kind = ParseKind(spec.kind); !kind.ok()) return kind.status();
  if (absl::Status s = ValidateAnnotations(spec.annotations, "annotations"); !s.ok()) return s;
  if (absl::Status s = ValidateContainerEdits(spec.container_edits, "containerEdits"); !s.ok()) return s;
  if (spec.devices.empty()) return Invalid("devices", "at least one device is required");
  std::set<std::string> seen;
  for (const Device& device : spec.devices) {
    const std::string where = DevicePath(device.name);
    if (absl::Status s = ValidateDeviceName(device.name); !s.ok()) return Invalid(Field(where, "name"), s.message());
    if (!seen.insert(device.name).second) return Invalid(Field(where, "name"), "duplicate device name");
    if (absl::Status s = ValidateAnnotations(device.annotations, Field(where, "annotations")); !s.ok()) return s;
    if (device.container_edits.empty()) {
      return Invalid(Field(where, "containerEdits"), "a device needs at least one edit");
    }
    if (absl::Status s = ValidateContainerEdits(device.container_edits, Field(where, "containerEdits")); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace dra::cdi
