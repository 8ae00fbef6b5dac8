// dra::k8s::DeviceClass: resource.k8s.io/v1 DeviceClass (Kubernetes 1.37) as
// plain values. `unknown_fields` is explained in object_meta.h. JSON codec:
// device_class_json.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dra/k8s/object_meta.h"
#include "dra/k8s/resource_claim.h"  // DeviceSelector, OpaqueDeviceConfiguration
#include "nlohmann/json.hpp"

namespace dra::k8s {

struct DeviceClassConfiguration {
  std::optional<OpaqueDeviceConfiguration> opaque;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceClassConfiguration&) const = default;
};

struct DeviceClassSpec {
  std::vector<DeviceSelector> selectors;
  std::vector<DeviceClassConfiguration> config;
  // The extended resource name (e.g. "example.com/gpu") that pods may request
  // to get a device of this class.
  std::optional<std::string> extended_resource_name;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceClassSpec&) const = default;
};

struct DeviceClass {
  ObjectMeta metadata;
  DeviceClassSpec spec;
  nlohmann::json unknown_fields;

  bool operator==(const DeviceClass&) const = default;
};

}  // namespace dra::k8s
